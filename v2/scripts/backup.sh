#!/usr/bin/env bash
# backup.sh FILE — a consistent copy of mvp's database (`mvp backup`: safe while mvp serve runs) written to FILE, a
# new file at a path inside the container (put it on a mounted volume to keep it). Settings: see lib.sh or --help.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  echo "usage: backup.sh FILE — a consistent copy of mvp's database in the new file FILE (inside the container)"
  usage_settings
  exit 0
fi
[[ $# -eq 1 && -n "$1" ]] || die "name one new file for the backup (usage: backup.sh FILE)"
need_container
need_mvp
# shellcheck disable=SC2016
in_target 'bin="$1" cfg="$2" db="$3" to="$4"
case "$to" in /*) ;; *) to="$PWD/$to" ;; esac
cd "$(dirname "$(dirname "$bin")")" # as start.sh runs mvp serve: a relative db_path means the same file
if [[ -n "$db" ]]; then exec "$bin" backup --config "$cfg" --db-path "$db" "$to"; fi
exec "$bin" backup --config "$cfg" "$to"' "$MVP_BIN" "$MVP_CONFIG" "$MVP_DB_PATH" "$1"
