#!/usr/bin/env bash
# stop.sh — stop `mvp serve`: SIGTERM (it finishes in-flight requests and the current tick), then SIGKILL after
# MVP_STOP_TIMEOUT seconds. Settings: see lib.sh or --help.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  echo "usage: stop.sh — stop mvp serve (graceful, then forced)"
  usage_settings
  exit 0
fi
no_arguments stop.sh "$@"
need_container
if ! pid="$(running_pid)"; then
  echo "mvp: not running"
  exit 0
fi
# shellcheck disable=SC2016
STOP='pid="$1" timeout="$2" pidfile="$3"
# alive: the process exists and has not exited (a zombie, left by a PID 1 that does not reap, has exited).
alive() {
  local st
  kill -0 "$1" 2>/dev/null || return 1
  st="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  st="${st##*) }"
  [[ "${st%% *}" != Z ]]
}
kill -TERM "$pid" 2>/dev/null || true
end=$(( SECONDS + timeout ))
while alive "$pid" && (( SECONDS < end )); do sleep 0.2; done
if alive "$pid"; then
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  echo forced
else
  echo graceful
fi
rm -f "$pidfile"'
how="$(in_target "$STOP" "$pid" "$MVP_STOP_TIMEOUT" "$MVP_PIDFILE")"
echo "mvp: stopped (pid $pid, $how)"
