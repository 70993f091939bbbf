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
STOP="$CLOCK"'pid="$1" timeout="$2" pidfile="$3"
# alive: the process exists and has not exited (a zombie, left by a PID 1 that does not reap, has exited).
alive() {
  local st
  kill -0 "$1" 2>/dev/null || return 1
  st="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  st="${st##*) }"
  [[ "${st%% *}" != Z ]]
}
kill -TERM "$pid" 2>/dev/null || true
end="$(deadline_ms "$timeout")"
while alive "$pid" && (( $(now_ms) < end )); do sleep 0.2; done
how=graceful
if alive "$pid"; then
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  how=forced
  # SIGKILL ends a process only when the kernel lets it go: one stuck in it (state D, on a hung NFS server) lives on.
  end="$(deadline_ms 5)"
  while alive "$pid" && (( $(now_ms) < end )); do sleep 0.2; done
  if alive "$pid"; then
    st="$(cat "/proc/$pid/stat" 2>/dev/null)" || true
    st="${st##*) }"
    echo "alive ${st%% *}"
    exit 0 # the pidfile stays: it names a live mvp serve
  fi
fi
echo "$how"
# The pidfile goes only while it names the process stopped here, and under start.sh'"'"'s lock: a start.sh that found no
# service once this one had gone may have written its own already, and without it nothing finds that service again.
# (A folder this user cannot write keeps the pidfile of a process that has gone, which no script takes for running.)
if { exec 9>>"$pidfile.lock"; } 2>/dev/null && command -v flock >/dev/null 2>&1; then
  flock -w 10 9 || true
fi
[[ "$(cat "$pidfile" 2>/dev/null)" == "$pid" ]] && rm -f "$pidfile" 2>/dev/null
exit 0'
how="$(in_target "$STOP" "$pid" "$MVP_STOP_TIMEOUT" "$MVP_PIDFILE")"
if [[ "$how" == alive* ]]; then
  die "pid $pid is still alive 5 s after SIGKILL (process state ${how#alive }; D is stuck in the kernel, on a hung NFS server say): it ends when the kernel lets it go; its pidfile is kept, and status.sh says when it has gone (do not start another before)"
fi
echo "mvp: stopped (pid $pid, $how)"
