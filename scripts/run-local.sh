#!/usr/bin/env bash
# run-local.sh — `make run`: mvp serve in the foreground against the local cluster that `make ray-up` started.
# Runs on a copy of configs/dev.yaml for that cluster (MVP_CLUSTER_DIR), with the API on $MVP_API_PORT [8080] and
# task folders and the database under $MVP_DATA_DIR [/tmp/mvp-dev]. The API token comes from $MVP_INTERNAL_TOKEN
# (the banner says so), or, when it is empty, is generated and printed once.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
cluster_dir="${MVP_CLUSTER_DIR:-/tmp/mvp-ray-local}"
if [[ ! -f "$cluster_dir/cluster.env" ]]; then
  echo "run-local: no cluster in $cluster_dir; run 'make ray-up' first" >&2
  exit 1
fi
# shellcheck disable=SC1091
source "$cluster_dir/cluster.env"
# The probe runs with `python3` from dev.yaml: make that Ray's Python, as it is in the head container.
export PATH="$RAY_VENV/bin:$PATH"

# configs/dev.yaml names the default local cluster (dashboard 8265, GCS 6379), port 8080 and /tmp/mvp-dev. The
# service runs on a copy that names the cluster ray-up started (cluster.env: MVP_RAY_PORT, MVP_RAY_DASHBOARD_PORT),
# the API port $MVP_API_PORT and the data folder $MVP_DATA_DIR, so that it never talks to another cluster.
port="${MVP_API_PORT:-8080}"
data="${MVP_DATA_DIR:-/tmp/mvp-dev}"
[[ "$port" =~ ^[0-9]{1,5}$ ]] || { echo "run-local: MVP_API_PORT must be a port number, got '${port:0:40}'" >&2; exit 1; }
[[ "$data" == /* && "$data" != *$'\n'* ]] || { echo "run-local: MVP_DATA_DIR must be an absolute path, got '${data:0:80}'" >&2; exit 1; }
# A port already taken fails mvp serve only after the banner and a new database, with advice (v2.api.port in
# dev.yaml) that does not apply to the copy written below: say which setting to change instead. SO_REUSEADDR as
# Go's listener sets it, so a port with connections left in TIME_WAIT counts as free, as it is for mvp serve.
if ! python3 -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null; then
  echo "run-local: port $port on 127.0.0.1 is taken (another mvp serve, or another service): set MVP_API_PORT to a free port" >&2
  exit 1
fi
mkdir -p "$data/shared" "$data/db"
config="$cluster_dir/mvp-dev.yaml"
RUN_DASHBOARD="$RAY_DASHBOARD_URL" RUN_GCS="$RAY_GCS_ADDRESS" RUN_PORT="$port" RUN_DATA="$data" python3 - configs/dev.yaml "$config" <<'PY'
import os, sys
text = open(sys.argv[1]).read()
for old, new in [("address: http://127.0.0.1:8265\n", "address: %s\n" % os.environ["RUN_DASHBOARD"]),
                 ("    gcs_address: 127.0.0.1:6379\n", "    gcs_address: %s\n" % os.environ["RUN_GCS"]),
                 ("    port: 8080\n", "    port: %s\n" % os.environ["RUN_PORT"]),
                 ("/tmp/mvp-dev/", os.environ["RUN_DATA"].rstrip("/") + "/")]:
    if old not in text:
        sys.exit("run-local: configs/dev.yaml no longer has %r; update scripts/run-local.sh" % old.strip())
    text = text.replace(old, new)
open(sys.argv[2], "w").write("# Written by scripts/run-local.sh from configs/dev.yaml for this cluster; do not edit.\n" + text)
PY

# mvp serve --dev-generate-token generates (and prints) a token only when dev.yaml's v2.auth.token_env,
# MVP_INTERNAL_TOKEN, is empty; when it is set, its value is the token and nothing is printed.
if [[ -n "${MVP_INTERNAL_TOKEN:-}" ]]; then
  token_where="the token is the value of \$MVP_INTERNAL_TOKEN"
  token_arg="\"\$MVP_INTERNAL_TOKEN\""
else
  token_where='the token is printed below, once'
  token_arg='<token>'
fi

cat <<TXT

mvp: Ray dashboard  $RAY_DASHBOARD_URL
mvp: API            http://127.0.0.1:$port   ($token_where)
mvp: web page       http://127.0.0.1:$port/ui   (log in with that token)

Try it from another shell:
  export MVP_ADDR=http://127.0.0.1:$port MVP_TOKEN=$token_arg
  bin/mvp submit -f configs/examples/ppo.yaml
  bin/mvp list
  bin/mvp logs -f <task_id>
  bin/mvp schedule create nightly --cron "0 2 * * *" -f configs/examples/ppo.yaml

The sample jobspec (configs/examples/ppo.yaml):
$(sed 's/^/  /' configs/examples/ppo.yaml)

Ctrl-C stops mvp; 'make ray-down' stops the cluster.
TXT
exec bin/mvp serve --config "$config" --dev-generate-token
