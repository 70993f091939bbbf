#!/usr/bin/env bash
# ray-down.sh — stop the local cluster of $MVP_CLUSTER_DIR [/tmp/mvp-ray-local], and only it: SIGTERM to each
# recorded process group, then SIGKILL to the groups still alive after MVP_RAY_STOP_GRACE [10] seconds. Logs stay.
set -uo pipefail
dir="${MVP_CLUSTER_DIR:-/tmp/mvp-ray-local}"
grace="${MVP_RAY_STOP_GRACE:-10}"
shopt -s nullglob
files=("$dir"/*.pgid)
if [[ ${#files[@]} -eq 0 ]]; then
  echo "ray-down: no cluster recorded in $dir"
  rm -f "$dir/cluster.env"
  exit 0
fi
pgids=()
for f in "${files[@]}"; do
  pg="$(cat "$f" 2>/dev/null)"
  [[ "$pg" =~ ^[0-9]+$ ]] && pgids+=("$pg")
done
# Workers first, then the head.
for pg in "${pgids[@]}"; do kill -TERM -- "-$pg" 2>/dev/null || true; done
deadline=$(( SECONDS + grace ))
while (( SECONDS < deadline )); do
  left=0
  for pg in "${pgids[@]}"; do kill -0 -- "-$pg" 2>/dev/null && left=1; done
  (( left == 0 )) && break
  sleep 0.5
done
for pg in "${pgids[@]}"; do kill -KILL -- "-$pg" 2>/dev/null || true; done
rm -f "${files[@]}" "$dir/cluster.env"
echo "ray-down: stopped the cluster of $dir (${#pgids[@]} process groups)"
