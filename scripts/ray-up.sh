#!/usr/bin/env bash
# ray-up.sh — start (or find) a local Ray cluster shaped like production; idempotent. On a running cluster it
# starts again the workers whose process group is gone (a worker killed by a test of node failure).
#
# A head with --num-cpus=0 --num-gpus=0 and RAY_WORKERS workers with fake GPUs and the worker_node resource, each
# node started with setsid in a process group of its own, recorded in $MVP_CLUSTER_DIR so that ray-down.sh stops
# exactly this cluster (never a blanket `ray stop`). Every node has <repo>/py-entrypoints on PYTHONPATH, so
# `python3 -m verl.trainer.main_ppo …` in a job runs the verl stand-in.
#
# Environment (defaults in brackets):
#   MVP_CLUSTER_DIR          [/tmp/mvp-ray-local]  state, node logs, pgids, cluster.env, Ray's --temp-dir
#   RAY_WORKERS              [2]                   worker nodes
#   RAY_GPUS_PER_WORKER      [4]                   fake GPUs per worker
#   RAY_CPUS_PER_WORKER      [12 × GPUs]           logical CPUs per worker (verl bundles take 3 or 10 per GPU)
#   MVP_RAY_PORT             [6379]                GCS port
#   MVP_RAY_DASHBOARD_PORT   [8265]                dashboard / Job API port (on 127.0.0.1)
#   MVP_RAY_CLIENT_PORT      [10001]               ray client server port (a non-default one must be ≥ 20000)
#                                                  (the three ports: those recorded in $MVP_CLUSTER_DIR/cluster.env
#                                                  when it is there and they are not given, so that the folder alone
#                                                  finds its cluster, as ray-down.sh does)
#   MVP_RAY_AGENT_PORT_BASE  [a free block]        node i gets dashboard-agent ports base+3i (listen), +1 (grpc), +2 (metrics);
#                                                  by default a block free now below the kernel's ephemeral port range
#                                                  (free-ports.py --block: in that range an outgoing socket could take an
#                                                  agent's port first, and that node then takes no jobs)
#   RAY_AUTH_TOKEN           []                    if set, the cluster runs with RAY_AUTH_MODE=token (never written to disk)
#   MVP_RAY_START_TIMEOUT    [180]                 seconds to wait for every node and the Job API
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${MVP_CLUSTER_DIR:-/tmp/mvp-ray-local}"
workers="${RAY_WORKERS:-2}"
gpus="${RAY_GPUS_PER_WORKER:-4}"
cpus="${RAY_CPUS_PER_WORKER:-$(( 12 * gpus ))}"
# recorded KEY: a value of the cluster.env this folder's last start wrote ("" when none).
recorded() {
  if [[ -f "$dir/cluster.env" ]]; then sed -n "s/^$1=//p" "$dir/cluster.env" | tail -n 1; fi
}
rec_gcs="$(recorded RAY_GCS_ADDRESS)"
rec_dash="$(recorded RAY_DASHBOARD_URL)"
gcs_port="${MVP_RAY_PORT:-${rec_gcs##*:}}"
gcs_port="${gcs_port:-6379}"
dash_port="${MVP_RAY_DASHBOARD_PORT:-${rec_dash##*:}}"
dash_port="${dash_port:-8265}"
client_port="${MVP_RAY_CLIENT_PORT:-$(recorded RAY_CLIENT_PORT)}"
client_port="${client_port:-10001}"
agent_base="${MVP_RAY_AGENT_PORT_BASE:-}"
timeout="${MVP_RAY_START_TIMEOUT:-180}"
dash_url="http://127.0.0.1:${dash_port}"

bash "$repo/scripts/ensure-tools.sh" base || exit 1 # python3 with venv, curl
[[ -n "$agent_base" ]] || agent_base="$(python3 "$repo/scripts/free-ports.py" --block $(( 3 * (workers + 1) )) \
  --avoid "$gcs_port,$dash_port,$client_port")"
venv="$(bash "$repo/scripts/ray-venv.sh")"
export PATH="$venv/bin:$PATH" RAY_USAGE_STATS_ENABLED=0 PYTHONPATH="$repo/py-entrypoints${PYTHONPATH:+:$PYTHONPATH}"
curl_auth=()
if [[ -n "${RAY_AUTH_TOKEN:-}" ]]; then
  export RAY_AUTH_MODE=token RAY_AUTH_TOKEN
  curl_auth=(-H "Authorization: Bearer ${RAY_AUTH_TOKEN}")
fi

api_up() { curl -fsS -m 3 "${curl_auth[@]}" "$dash_url/api/version" >/dev/null 2>&1; }
# shellcheck source-path=SCRIPTDIR source=procgroup.sh
source "$repo/scripts/procgroup.sh"

mkdir -p "$dir"
exec 8>"$dir/.lock"
flock 8
heal=0
missing=()
if [[ -f "$dir/cluster.env" ]] && node_live "$dir/head.pgid" && api_up; then
  for i in $(seq 1 "$workers"); do
    node_live "$dir/worker$i.pgid" && node_has "$dir/worker$i.pgid" raylet && continue
    missing+=("$i")
    # A worker whose raylet died alone: what is left of its group (its agents, say) is stopped first.
    if node_live "$dir/worker$i.pgid"; then
      kill -KILL -- "-$(cat "$dir/worker$i.pgid")" 2>/dev/null || true
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "ray-up: cluster already running in $dir"
    echo "ray-up: dashboard $dash_url"
    exit 0
  fi
  # The ports it was started with (the dead worker's are free again).
  recorded_base="$(sed -n 's/^RAY_AGENT_PORT_BASE=//p' "$dir/cluster.env")"
  [[ -n "$recorded_base" && -z "${MVP_RAY_AGENT_PORT_BASE:-}" ]] && agent_base="$recorded_base"
  echo "ray-up: cluster running in $dir without worker(s) ${missing[*]}; starting them again"
  heal=1
else
  if ls "$dir"/*.pgid >/dev/null 2>&1; then
    echo "ray-up: stale state in $dir; stopping what is left of it"
    MVP_CLUSTER_DIR="$dir" bash "$repo/scripts/ray-down.sh"
  fi
  mapfile -t missing < <(seq 1 "$workers")
fi
rm -f "$dir/cluster.env"

# start_node NAME ARGS…: run `ray start` in a new session (process group) and record the group id. `ray start`
# forks its daemons and returns; they stay in the group, which is what ray-down.sh signals.
start_node() {
  local name="$1"; shift
  local log="$dir/$name.log"
  # shellcheck disable=SC2016 # $$ and $@ belong to the inner shell
  # MVP_RAY_NODE marks the node's processes as this cluster's (ray-down.sh signals only marked groups).
  MVP_RAY_NODE="$dir/$name" setsid -w bash -c 'echo $$ > "$0"; exec ray start "$@"' "$dir/$name.pgid" "$@" \
    >"$log" 2>&1 </dev/null &
  local pid=$!
  if ! wait "$pid"; then
    echo "ray-up: 'ray start' failed for $name; its log:" >&2
    tail -n 40 "$log" >&2
    return 1
  fi
}

if [[ "$heal" == 0 ]]; then
  # A port another cluster (or service) holds: Ray would start anyway and fail late, its head having reached the
  # other cluster's GCS ("Session name … does not match persisted value"), naming neither the port nor the setting.
  need_free() { # VAR PORT WHAT
    python3 "$repo/scripts/free-ports.py" --free "$2" && return
    echo "ray-up: port $2 for Ray's $3 is taken on this machine (another Ray cluster, or another service): set $1 to a free port (and MVP_CLUSTER_DIR to a folder of its own for a second cluster)" >&2
    exit 1
  }
  need_free MVP_RAY_PORT "$gcs_port" GCS
  need_free MVP_RAY_DASHBOARD_PORT "$dash_port" dashboard
  need_free MVP_RAY_CLIENT_PORT "$client_port" "Ray client server"
  echo "ray-up: starting head (GCS 127.0.0.1:$gcs_port, dashboard $dash_url) in $dir"
  start_node head --head --node-ip-address=127.0.0.1 --port="$gcs_port" --dashboard-host=127.0.0.1 \
    --dashboard-port="$dash_port" --ray-client-server-port="$client_port" --num-cpus=0 --num-gpus=0 \
    --object-store-memory=100000000 --temp-dir="$dir/ray" --disable-usage-stats \
    --dashboard-agent-listen-port="$agent_base" --dashboard-agent-grpc-port="$(( agent_base + 1 ))" \
    --metrics-export-port="$(( agent_base + 2 ))"
fi
for i in "${missing[@]}"; do
  echo "ray-up: starting worker $i ($gpus GPUs, $cpus CPUs)"
  base=$(( agent_base + 3 * i ))
  # The nodes of this cluster share one host and one --temp-dir, and every node's log monitor forwards the
  # worker logs of that folder to the drivers: with one per node, each line of a job's Ray tasks reached its driver
  # log (mvp's copy, `make run`'s user) three times. The head's is the one log monitor ("only one log monitor
  # should be started per physical host", ray start --help); a separate --temp-dir per worker is no way out: Ray's
  # job agent then looks for the driver's log in the head's folder and answers with its first line only.
  # A worker's `ray start` gives up when the GCS does not answer within its connect timeout, as on a machine whose
  # cores are all busy (seen in CI beside a fuzz run: "Failed to connect to GCS"): tried up to 3 times, what is
  # left of a failed try stopped first.
  for try in 1 2 3; do
    start_node "worker$i" --address="127.0.0.1:$gcs_port" --node-ip-address=127.0.0.1 --num-cpus="$cpus" \
      --num-gpus="$gpus" --resources='{"worker_node": 100}' --labels="{\"mvp-dev/worker\": \"$i\"}" \
      --object-store-memory=80000000 --include-log-monitor=False --disable-usage-stats \
      --dashboard-agent-listen-port="$base" --dashboard-agent-grpc-port="$(( base + 1 ))" \
      --metrics-export-port="$(( base + 2 ))" && break
    (( try == 3 )) && exit 1
    pg="$(cat "$dir/worker$i.pgid" 2>/dev/null || true)"
    [[ -n "$pg" ]] && { kill -KILL -- "-$pg" 2>/dev/null || true; }
    echo "ray-up: trying worker $i again ($(( try + 1 )) of 3)" >&2
    sleep 2
  done
done

want=$(( workers + 1 ))
deadline=$(( SECONDS + timeout ))
while :; do
  alive="$(timeout 30 python3 "$repo/py-entrypoints/mvp_probe.py" --address "127.0.0.1:$gcs_port" --once --count-alive 2>/dev/null || echo 0)"
  if [[ "$alive" == "$want" ]] && api_up; then
    break
  fi
  if (( SECONDS > deadline )); then
    echo "ray-up: after ${timeout}s: $alive of $want nodes alive, Job API $(api_up && echo up || echo down)" >&2
    for f in "$dir"/*.log; do echo "--- $f" >&2; tail -n 30 "$f" >&2; done
    exit 1
  fi
  sleep 1
done

cat >"$dir/cluster.env" <<ENV
RAY_GCS_ADDRESS=127.0.0.1:$gcs_port
RAY_DASHBOARD_URL=$dash_url
RAY_PYTHON=$venv/bin/python3
RAY_VENV=$venv
MVP_CLUSTER_DIR=$dir
RAY_WORKERS=$workers
RAY_AGENT_PORT_BASE=$agent_base
RAY_CLIENT_PORT=$client_port
RAY_GPUS_PER_WORKER=$gpus
ENV
if [[ -n "${RAY_AUTH_TOKEN:-}" ]]; then echo "RAY_AUTH_MODE=token" >>"$dir/cluster.env"; fi
echo "ray-up: $want nodes alive; dashboard $dash_url"
