#!/usr/bin/env bash
# status.sh — is `mvp serve` running, and does /healthz answer? Exit 0: running and healthy; 1: not running (or
# the container is missing); 2: running but /healthz does not answer (or its URL cannot be read from dev.yaml);
# 3: running and answering, but degraded (Ray unreachable, the database, shared_root, or Ray's state API refusing
# log reads; the answer says which);
# 4: unknown: docker cannot be used here (not installed, or its daemon cannot be reached: not running, this user may
# not use its socket, or DOCKER_HOST / the docker context names another daemon); MVP_LOCAL=1 needs no docker.
# Settings: see lib.sh or --help.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  echo "usage: status.sh — say whether mvp serve runs and answers /healthz"
  echo "exit 0 running and healthy; 1 not running (or the container is missing); 2 running but /healthz does not answer"
  echo "(or its URL cannot be read from dev.yaml); 3 running and answering, but degraded; 4 docker cannot be used here"
  echo "(not installed, or its daemon cannot be reached)"
  usage_settings
  exit 0
fi
no_arguments status.sh "$@"
docker_down_exit=4 # not 1: a monitor that reads 1 as "not running" would start a second mvp serve
need_container
if ! pid="$(running_pid)"; then
  echo "mvp: not running"
  exit 1
fi
# It runs: a health URL that cannot be read (dev.yaml being edited, say) is exit 2, never 1 ("not running").
if ! url="$(read_health_url)"; then
  echo "mvp: running (pid $pid) but /healthz was not asked: $url"
  exit 2
fi
MVP_HEALTH_URL="$url"
rc=0
body="$(health)" || rc=$?
case "$rc" in
  0) echo "mvp: running (pid $pid); $MVP_HEALTH_URL answers:" ;;
  3) echo "mvp: running (pid $pid) but degraded; $MVP_HEALTH_URL answers:" ;;
  *) echo "mvp: running (pid $pid) but $MVP_HEALTH_URL does not answer: $body"; exit 2 ;;
esac
echo "$body"
exit "$rc"
