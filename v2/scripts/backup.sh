#!/usr/bin/env bash
# backup.sh FILE — a consistent copy of mvp's database (`mvp backup`: safe while mvp serve runs) written to FILE, a
# new file at an absolute path inside the container (put it on a mounted volume to keep it). Settings: see lib.sh or --help.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "$here/lib.sh"
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  echo "usage: backup.sh FILE — a consistent copy of mvp's database in the new file FILE (its absolute path inside the container)"
  usage_settings
  exit 0
fi
[[ $# -eq 1 && -n "$1" ]] || die "name one new file for the backup (usage: backup.sh FILE)"
to="$1"
if [[ "$to" != /* ]]; then
  # Through docker a relative path would be from the image's WORKDIR, in the container's own layer (gone with it).
  [[ "$MVP_LOCAL" == 1 ]] || die "name the backup by its absolute path inside the container, on a mounted volume to keep it (got '${to:0:200}')"
  to="$PWD/$to"
fi
need_container
need_mvp
# shellcheck disable=SC2016
in_target 'bin="$1" cfg="$2" db="$3" to="$4"
cd "$(dirname "$(dirname "$bin")")" # as start.sh runs mvp serve: a relative db_path means the same file
if [[ -n "$db" ]]; then exec "$bin" backup --config "$cfg" --db-path "$db" "$to"; fi
exec "$bin" backup --config "$cfg" "$to"' "$MVP_BIN" "$MVP_CONFIG" "$MVP_DB_PATH" "$to"
