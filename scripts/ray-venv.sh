#!/usr/bin/env bash
# ray-venv.sh — make sure a virtualenv with the pinned Ray exists, outside the clone, and print its path.
#
# The venv is keyed by the Ray version so that a version bump builds a new one and the old one stays usable.
# Location: $MVP_RAY_VENV if set, else ${XDG_CACHE_HOME:-$HOME/.cache}/mvp/ray-<version>-py<major.minor>.
# Safe to run concurrently: a lock serialises the install, and a marker file is written only after pip succeeded.
set -euo pipefail

RAY_VERSION="${RAY_VERSION:-2.60.0}"
PYTHON="${MVP_PYTHON:-python3}"
pyver="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
venv="${MVP_RAY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/mvp/ray-${RAY_VERSION}-py${pyver}}"
marker="$venv/.mvp-ray-${RAY_VERSION}-ok"

if [[ -f "$marker" ]]; then
  echo "$venv"
  exit 0
fi

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if [[ ! -f "$marker" ]]; then
  echo "ray-venv: installing ray[default]==${RAY_VERSION} into $venv (about a minute)" >&2
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv" >&2
  "$venv/bin/pip" install --disable-pip-version-check --quiet "ray[default]==${RAY_VERSION}" >&2
  touch "$marker"
fi
echo "$venv"
