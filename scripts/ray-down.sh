#!/usr/bin/env bash
# ray-down.sh — stop the local cluster of $MVP_CLUSTER_DIR [/tmp/mvp-ray-local], and only it: SIGTERM to each
# recorded process group, then SIGKILL to the groups still alive after MVP_RAY_STOP_GRACE [10] seconds. Logs stay.
# A record can outlive its cluster (a reboot, a cluster killed by hand) and a group id is handed out again once its
# group is gone, so a group is signalled only while a process in it carries the mark ray-up.sh gave its node
# (MVP_RAY_NODE=<dir>/<name> in its environment); a group without it is not this cluster's and is left alone.
# Every other process with one of its nodes' marks is stopped with them: Ray starts each job's driver in a session
# of its own, which no recorded group holds, and a driver left running trains on beside mvp's retry.
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
# shellcheck source-path=SCRIPTDIR source=procgroup.sh
source "$(dirname "${BASH_SOURCE[0]}")/procgroup.sh"
pgids=()
for f in "${files[@]}"; do
  pg="$(cat "$f" 2>/dev/null)"
  [[ "$pg" =~ ^[0-9]+$ ]] || continue
  if group_live "$pg" "${f%.pgid}"; then
    pgids+=("$pg")
  else
    echo "ray-down: process group $pg of $(basename "$f") is gone or not this cluster's; left alone"
  fi
done
marks=("${files[@]%.pgid}")
mapfile -t strays < <(marked_pids "${marks[@]}")
# Workers first, then the head; the drivers with them.
for pg in "${pgids[@]}"; do kill -TERM -- "-$pg" 2>/dev/null || true; done
for pid in "${strays[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
deadline=$(( SECONDS + grace ))
while (( SECONDS < deadline )); do
  left=0
  for pg in "${pgids[@]}"; do group_live "$pg" && left=1; done
  [[ -n "$(marked_pids "${marks[@]}")" ]] && left=1
  (( left == 0 )) && break
  sleep 0.5
done
for pg in "${pgids[@]}"; do group_live "$pg" && { kill -KILL -- "-$pg" 2>/dev/null || true; }; done
mapfile -t strays < <(marked_pids "${marks[@]}")
for pid in "${strays[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
rm -f "${files[@]}" "$dir/cluster.env"
echo "ray-down: stopped the cluster of $dir (${#pgids[@]} process groups)"
