#!/usr/bin/env bash
# ensure-tools.sh [base] — install the Debian packages mvp's scripts and tests use when they are missing.
#   base: what `make run` and a local Ray cluster need: python3 with venv (Ray's virtualenv), curl (ray-up's checks).
#   (no argument): base, and shellcheck and chromium for the tests (TestShellcheck, the web page's browser test).
# Needs root and Debian's package registry; without them it says what is missing: the base is then an error (the
# cluster cannot start), the test tools a warning (those tests skip with a message).
set -uo pipefail
missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(python3-venv)
command -v curl >/dev/null 2>&1 || missing+=(curl)
base=${#missing[@]}
if [[ "${1:-}" != base ]]; then
  command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
fi
[[ ${#missing[@]} -eq 0 ]] && exit 0
fail() {
  if (( base > 0 )); then
    echo "ensure-tools: $* — install ${missing[*]:0:base} (Debian: apt-get install ${missing[*]:0:base}) and run again" >&2
    exit 1
  fi
  echo "ensure-tools: $*; the checks that need ${missing[*]} will skip"
  exit 0
}
if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  fail "${missing[*]} missing and cannot be installed here (not root or no apt-get)"
fi
echo "ensure-tools: installing ${missing[*]}"
log="$(mktemp)"
# A fresh machine may still be running its own package jobs: wait for dpkg's lock, retry downloads.
apt_opts=(-o DPkg::Lock::Timeout=600 -o Acquire::Retries=5)
ok=0
for try in 1 2 3; do
  if apt-get "${apt_opts[@]}" update -qq >>"$log" 2>&1 &&
    DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" install -y -qq "${missing[@]}" >>"$log" 2>&1; then
    ok=1
    break
  fi
  echo "ensure-tools: apt-get failed (try $try of 3)"
  dpkg --configure -a >>"$log" 2>&1 || true # an earlier install cut short
  sleep $((try * 10))
done
if (( ok == 0 )); then
  tail -n 30 "$log" >&2
  rm -f "$log"
  fail "could not install ${missing[*]} (apt-get's last lines above)"
fi
rm -f "$log"
exit 0
