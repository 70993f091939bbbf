#!/usr/bin/env bash
# start.sh — start `mvp serve` inside the Ray head container (idempotent: a running service is left alone).
# Waits until /healthz answers. Settings: see lib.sh or --help.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  echo "usage: start.sh — start mvp serve in the Ray head container"
  usage_settings
  exit 0
fi
no_arguments start.sh "$@"
need_container
if pid="$(running_pid)"; then
  echo "mvp: already running (pid $pid)"
  exit 0
fi
[[ -n "${!MVP_TOKEN_ENV:+set}" ]] || die "\$$MVP_TOKEN_ENV is empty on the host: export the API token in it (or, if dev.yaml's v2.auth.token_env names another variable, set MVP_TOKEN_ENV to that name)"
need_mvp # the binary and the config first: the health URL is read with them
resolve_health_url
# Whatever answers at the health URL now is not the service this start would start: another mvp serve the
# pidfile does not name (its start would fail to listen, or wait on the database lock and exit), or another server.
if health >/dev/null; then rc=0; else rc=$?; fi
if (( rc == 0 || rc == 3 )); then
  if pid="$(running_pid)"; then # another start.sh has just started it
    echo "mvp: already running (pid $pid)"
    exit 0
  fi
  die "$MVP_HEALTH_URL already answers, but $MVP_PIDFILE names no running mvp serve: another mvp serve (started by hand, or with another MVP_HOME or MVP_PIDFILE) or another server holds the port; stop it, or give this one another port (v2.api.port in $MVP_CONFIG)"
fi
# START runs under a lock on PIDFILE.lock, so that two start.sh at once start one service: the second finds the
# first's (exit 3, its pid on stdout). It leaves the lock once the process it started is mvp serve (nohup and
# setsid have exec'd it), so that PID_OF knows it from then on.
# shellcheck disable=SC2016
START='bin="$1" cfg="$2" log="$3" pidfile="$4" db="$5" pid_of="$6"
[[ -x "$bin" ]] || { echo "mvp binary $bin not found or not executable" >&2; exit 4; }
[[ -f "$cfg" ]] || { echo "config $cfg not found" >&2; exit 4; }
mkdir -p "$(dirname "$log")" "$(dirname "$pidfile")"
exec 9>>"$pidfile.lock"
if command -v flock >/dev/null 2>&1; then
  flock -w 60 9 || { echo "another start holds $pidfile.lock" >&2; exit 4; }
fi
if running="$(bash -c "$pid_of" mvp "$pidfile" "$bin")"; then echo "$running"; exit 3; fi
args=(serve --config "$cfg")
[[ -n "$db" ]] && args+=(--db-path "$db")
cd "$(dirname "$(dirname "$bin")")"
from=$(( $( { wc -c <"$log"; } 2>/dev/null || echo 0) + 1 )) # where the lines of this start begin in the log
nohup setsid "$bin" "${args[@]}" >>"$log" 2>&1 </dev/null 9>&- &
pid=$!
if ! echo "$pid" >"$pidfile"; then
  # Without its pidfile no script finds it again (status and stop say "not running", start refuses the port):
  # stopped, and said so, rather than "started".
  kill -TERM "$pid" 2>/dev/null
  rm -f "$pidfile" # a full disk leaves it truncated to nothing
  echo "could not write $pidfile (is its disk full or read-only?): the mvp serve just started (pid $pid) is stopped again; free space there, or set MVP_PIDFILE" >&2
  exit 4
fi
for _ in {1..50}; do
  cmd="$({ tr "\0" " " <"/proc/$pid/cmdline"; } 2>/dev/null)" || break # gone: start.sh says so
  [[ "$cmd" == "$bin serve "* ]] && break
  sleep 0.1
done
echo "$pid $from"'
rc=0
out="$(in_target "$START" "$MVP_BIN" "$MVP_CONFIG" "$MVP_LOG" "$MVP_PIDFILE" "$MVP_DB_PATH" "$PID_OF")" || rc=$?
from=1
read -r pid from <<<"$out" || true
if (( rc == 3 )); then
  echo "mvp: already running (pid $pid)"
  exit 0
fi
(( rc == 0 )) || die "start failed (see above)"
deadline="$(deadline_ms "$MVP_START_TIMEOUT")"
while :; do
  rc=0
  answer="$(health)" || rc=$?
  # 3: it answers, degraded (Ray may be down: mvp rides that out), unless only because its first look at Ray is
  # still to come (api.NotLookedYet): a moment more tells.
  if (( rc == 3 )) && [[ "$answer" == *"has not looked at Ray yet"* ]] && (( $(now_ms) < deadline )); then
    sleep 0.5
    continue
  fi
  (( rc == 0 || rc == 3 )) && break
  if ! running_pid >/dev/null; then
    echo "mvp: the service exited; the end of its log:" >&2
    # shellcheck disable=SC2016
    tail="$(in_target 'tail -c +"$2" "$1" | tail -n 20' "$MVP_LOG" "${from:-1}")" || true # this start's lines only
    printf '%s\n' "$tail" >&2
    env_hint "${tail##*$'\n'}"
    exit 1
  fi
  (( $(now_ms) < deadline )) || die "started (pid $pid) but $MVP_HEALTH_URL did not answer within ${MVP_START_TIMEOUT}s; see $MVP_LOG (set MVP_HEALTH_URL if mvp is reached elsewhere)"
  sleep 0.5
done
if (( rc == 3 )); then
  echo "mvp: started (pid $pid); $MVP_HEALTH_URL answers, but degraded (status.sh says why)"
else
  echo "mvp: started (pid $pid); $MVP_HEALTH_URL answers"
fi
