#!/usr/bin/env bash
# run-local.sh — `make run`: mvp serve in the foreground against the local cluster that `make ray-up` started.
# Uses configs/dev.yaml. The API token comes from $MVP_INTERNAL_TOKEN, or is generated and printed once.
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
mkdir -p /tmp/mvp-dev/shared /tmp/mvp-dev/db

port="$(sed -n 's/^    port: *\([0-9]*\).*/\1/p' configs/dev.yaml | head -n1)"
cat <<TXT

mvp: Ray dashboard  $RAY_DASHBOARD_URL
mvp: API            http://127.0.0.1:${port:-8080}   (the token is printed below, once)
mvp: web page       http://127.0.0.1:${port:-8080}/ui   (log in with that token)

Try it from another shell:
  export MVP_ADDR=http://127.0.0.1:${port:-8080} MVP_TOKEN=<token>
  bin/mvp submit -f configs/examples/ppo.yaml
  bin/mvp list
  bin/mvp logs -f <task_id>
  bin/mvp schedule create nightly --cron "0 2 * * *" -f configs/examples/ppo.yaml

The sample jobspec (configs/examples/ppo.yaml):
$(sed 's/^/  /' configs/examples/ppo.yaml)

Ctrl-C stops mvp; 'make ray-down' stops the cluster.
TXT
exec bin/mvp serve --config configs/dev.yaml --dev-generate-token
