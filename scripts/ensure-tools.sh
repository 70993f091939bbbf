#!/usr/bin/env bash
# ensure-tools.sh — install the Debian tools the tests use when they are missing: shellcheck, and chromium for the
# web page's browser test (TestWebPageInBrowser, driven with chromedp). Needs root and Debian's package registry;
# without them it says so and the tests that need the tool skip with a message.
set -uo pipefail
missing=()
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || missing+=(chromium)
[[ ${#missing[@]} -eq 0 ]] && exit 0
if [[ "$(id -u)" -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-tools: ${missing[*]} missing and cannot be installed here (not root or no apt-get); those checks will skip"
  exit 0
fi
echo "ensure-tools: installing ${missing[*]}"
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null 2>&1 ||
  echo "ensure-tools: could not install ${missing[*]}; those checks will skip"
exit 0
