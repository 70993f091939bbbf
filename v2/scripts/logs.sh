#!/usr/bin/env bash
# logs.sh [-f] [-n LINES] — show the service's log (the last 200 lines by default; -f follows).
# Settings: see lib.sh or --help.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
follow=0
lines=200
while [[ $# -gt 0 ]]; do
  case "$1" in
    -f) follow=1 ;;
    -n) [[ $# -ge 2 ]] || die "-n wants a number of lines"; shift; lines="$1" ;;
    -n*) lines="${1#-n}" ;;
    -h|--help) echo "usage: logs.sh [-f] [-n LINES]"; usage_settings; exit 0 ;;
    *) die "unknown argument '$1' (usage: logs.sh [-f] [-n LINES])" ;;
  esac
  shift
done
[[ "$lines" =~ ^[0-9]+$ ]] || die "-n wants a number of lines"
need_container
if [[ "$follow" == 0 ]]; then
  # shellcheck disable=SC2016
  in_target 'log="$1" n="$2"; [[ -f "$log" ]] || { echo "no log at $log" >&2; exit 1; }
exec tail -n "$n" "$log"' "$MVP_LOG" "$lines"
  exit
fi
# Following: docker exec does not pass a Ctrl-C on to what it started, so a tail in the container would outlive
# this script. The tail there ends when its stdin does, and its stdin is a pipe from this script's keep-alive,
# which a Ctrl-C ends; the keep-alive writes a byte a second (read and dropped there), so it also ends, on a
# broken pipe, when the other side has ended first (no log, say).
keep_alive() { while printf '\n' 2>/dev/null; do sleep 1; done; }
# shellcheck disable=SC2016
keep_alive | in_target_stdin 'log="$1" n="$2"; [[ -f "$log" ]] || { echo "no log at $log" >&2; exit 1; }
tail -n "$n" -F "$log" </dev/null &
t=$!
cat >/dev/null || true
kill "$t" 2>/dev/null || true' "$MVP_LOG" "$lines"
