#!/usr/bin/env bash
# restart.sh — stop then start `mvp serve` (an upgrade: stop, replace the binary, start; nothing is lost).
# Settings: see lib.sh or --help.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  echo "usage: restart.sh — stop, then start mvp serve"
  # shellcheck source=lib.sh
  source "$here/lib.sh"
  usage_settings
  exit 0
fi
if [[ $# -gt 0 ]]; then
  # shellcheck source=lib.sh
  source "$here/lib.sh"
  no_arguments restart.sh "$@"
fi
bash "$here/stop.sh"
bash "$here/start.sh"
