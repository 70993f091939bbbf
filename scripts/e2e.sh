#!/usr/bin/env bash
# e2e.sh — run the end-to-end tests against a Ray cluster of their own.
#
# The cluster gets free ports and its own temp folder, so it never collides with a cluster left running by
# `make run`; it is started once for the whole run and stopped at the end, also on failure or Ctrl-C. When a test
# fails, the cluster's node logs are printed so that a CI failure can be read.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

export RAY_WORKERS="${RAY_WORKERS:-2}" RAY_GPUS_PER_WORKER="${RAY_GPUS_PER_WORKER:-4}"
# ports PREFIX: the cluster's listening ports, one block below the kernel's ephemeral range (free-ports.py --block:
# an outgoing connection's socket can take a port there before Ray binds it, and a dashboard agent that loses its
# port runs without its HTTP server, so no job can be submitted): GCS, dashboard, Ray client, then three per node
# for the dashboard agents (ray-up.sh; `make run` picks its own block the same way).
ports() {
  local base
  base="$(python3 scripts/free-ports.py --block $(( 3 + 3 * (RAY_WORKERS + 1) )))"
  export MVP_RAY_PORT="$base" MVP_RAY_DASHBOARD_PORT="$(( base + 1 ))" MVP_RAY_CLIENT_PORT="$(( base + 2 ))"
  export MVP_RAY_AGENT_PORT_BASE="${MVP_E2E_AGENT_PORT_BASE:-$(( base + 3 ))}"
}
ports
export MVP_CLUSTER_DIR="${MVP_E2E_CLUSTER_DIR:-$(mktemp -d /tmp/mvp-e2e.XXXXXX)}"

# shellcheck disable=SC2317 # called from the EXIT trap
cleanup() {
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "=== e2e failed (exit $rc): cluster logs from $MVP_CLUSTER_DIR ==="
    for f in "$MVP_CLUSTER_DIR"/*.log; do
      [[ -f "$f" ]] || continue
      echo "--- $f (last 40 lines)"; tail -n 40 "$f" || true
    done
    find "$MVP_CLUSTER_DIR" -path '*session_latest/logs/*' \( -name 'job-driver-*.log' -o -name 'gcs_server.err' -o -name 'raylet.err' -o -name 'dashboard.err' \) 2>/dev/null |
      head -n 20 | while read -r f; do echo "--- $f (last 20 lines)"; tail -n 20 "$f" || true; done
  fi
  bash scripts/ray-down.sh || true
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "e2e: starting a Ray cluster in $MVP_CLUSTER_DIR (GCS $MVP_RAY_PORT, dashboard $MVP_RAY_DASHBOARD_PORT)"
bash scripts/ray-up.sh
# shellcheck disable=SC1091
source "$MVP_CLUSTER_DIR/cluster.env"

export MVP_E2E_DASHBOARD_URL="$RAY_DASHBOARD_URL" MVP_E2E_GCS_ADDRESS="$RAY_GCS_ADDRESS" MVP_E2E_RAY_PYTHON="$RAY_PYTHON"
export MVP_E2E_PROBE_SCRIPT="$repo/py-entrypoints/mvp_probe.py" MVP_E2E_REPO="$repo"
export MVP_E2E_BIN="$repo/bin/mvp"
# -p 1: the packages share one cluster and its GPUs. The first phase took about 52 minutes on the 2-core machine
# on 2026-12-01 (TestCrashMatrix alone 8.5): MVP_E2E_TIMEOUT [75m] bounds it (a hang, or a slower machine), with
# the unit phase (about 9) and the second phase (about 3) inside CI's 90 for all of make test.
set +e
# shellcheck disable=SC2086 # MVP_E2E_BENCH_ARGS is a list of flags
go test -tags e2e -count=1 -p 1 -timeout "${MVP_E2E_TIMEOUT:-75m}" ${MVP_E2E_RUN:+-run "$MVP_E2E_RUN"} \
  ${MVP_E2E_BENCH_ARGS:-} -v ${MVP_E2E_PKGS:-./internal/e2e/ ./internal/ray/} 2>&1 | tee "$MVP_CLUSTER_DIR/go-test.log"
status="${PIPESTATUS[0]}"
set -e
[[ "$status" -eq 0 ]] || exit "$status"
[[ "${MVP_E2E_SKIP_PHASE2:-0}" == 1 ]] && exit 0

# Phase 2: a two-worker cluster with Ray's token auth (RAY_AUTH_MODE=token), for the tests that need it: token
# auth, and the Ray outage (the test stops and restarts this cluster with ray-down.sh / ray-up.sh; a 2 × 4 gang
# runs across it, on both workers, which come back one after the other).
bash scripts/ray-down.sh
export MVP_CLUSTER_DIR="$MVP_CLUSTER_DIR/token" RAY_WORKERS=2
ports
RAY_AUTH_TOKEN="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
export RAY_AUTH_TOKEN MVP_E2E_RAY_TOKEN="$RAY_AUTH_TOKEN"
echo "e2e: starting a token-auth Ray cluster in $MVP_CLUSTER_DIR"
bash scripts/ray-up.sh
# shellcheck disable=SC1091
source "$MVP_CLUSTER_DIR/cluster.env"
export MVP_E2E_DASHBOARD_URL="$RAY_DASHBOARD_URL" MVP_E2E_GCS_ADDRESS="$RAY_GCS_ADDRESS"
set +e
export MVP_E2E_OUTAGE=1
go test -tags e2e -count=1 -timeout 20m -run 'TestTokenAuthCluster|TestRayOutage' -v ./internal/e2e/ 2>&1 | tee -a "$MVP_CLUSTER_DIR/go-test.log"
status="${PIPESTATUS[0]}"
set -e
exit "$status"
