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
# shellcheck disable=SC2016
in_target 'log="$1" n="$2" f="$3"; [[ -f "$log" ]] || { echo "no log at $log" >&2; exit 1; }
if [[ "$f" == 1 ]]; then exec tail -n "$n" -F "$log"; else exec tail -n "$n" "$log"; fi' "$MVP_LOG" "$lines" "$follow"
