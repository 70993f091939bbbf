#!/usr/bin/env bash
# sim.sh — `make sim`: replay generated traces through every scheduling policy with `mvp sim` and write the table,
# the goals of issue 13 and the lower bounds to the `make sim` section of BENCHMARKS.md (the rest of the file is
# `make bench`'s, which keeps this section).
#   SIM_SEEDS        seeds of the 16 × 8 GPU traces at load 0.7 (default "1 2 3")
#   SIM_SMALL_SEEDS  seeds of the 2 × 4 GPU traces at load 0.8 (default "1 2 3")
#   SIM_JOBS         jobs per trace (default 20000)
#   SIM_MORE_SEEDS   further 16 × 8 seeds for the summary across seeds (default "4 5 6 7 8 9 10 11 12")
#   SIM_MORE_SMALL   further 2 × 4 seeds for the summary across seeds (default 4 to 36)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
seeds="${SIM_SEEDS:-1 2 3}"
small_seeds="${SIM_SMALL_SEEDS:-1 2 3}"
more_seeds="${SIM_MORE_SEEDS:-4 5 6 7 8 9 10 11 12}"
more_small="${SIM_MORE_SMALL:-$(seq -s ' ' 4 36)}"
jobs="${SIM_JOBS:-20000}"
work="$(mktemp -d /tmp/mvp-sim.XXXXXX)"
trap 'rm -rf "$work"' EXIT
go build -o "$work/mvp" ./cmd/mvp
start=$SECONDS
cut -d' ' -f1-3 /proc/loadavg >"$work/load.before"

# run NAME NODES GPUS LOAD SEED: generate the trace, replay it under every policy, then the lower bounds with the
# max wait of plain EASY backfill as the bound on whole-cluster jobs' waits.
run() {
  local name=$1 nodes=$2 gpus=$3 load=$4 seed=$5
  local trace="$work/$name-$seed.csv" out="$work/$name-$seed"
  "$work/mvp" sim gen --jobs "$jobs" --nodes "$nodes" --gpus-per-node "$gpus" --load "$load" --seed "$seed" -o "$trace"
  "$work/mvp" sim --trace "$trace" --nodes "$nodes" --gpus-per-node "$gpus" --policy all -o json >"$out.results"
  local easy_max
  easy_max="$(python3 -c 'import json,sys; print(next(r["max_wait_s"] for r in map(json.loads, open(sys.argv[1])) if r["policy"] == "easy"))' "$out.results")"
  "$work/mvp" sim bound --trace "$trace" --nodes "$nodes" --gpus-per-node "$gpus" --max-wait-s "$easy_max" >"$out.bound"
  echo "$name $nodes $gpus $load $seed" >"$out.meta"
}

for s in $seeds; do
  echo "sim: 16 × 8 GPUs, load 0.7, $jobs jobs, seed $s"
  run big 16 8 0.7 "$s"
done
for s in $small_seeds; do
  echo "sim: 2 × 4 GPUs, load 0.8, $jobs jobs, seed $s"
  run small 2 4 0.8 "$s"
done

# more NAME NODES GPUS LOAD SEED POLICIES: the summary across seeds replays only the policies its goals compare
# (the default, easy, and sjf for the 16 × 8 mean goal), two traces at a time.
more() {
  local name=$1 nodes=$2 gpus=$3 load=$4 seed=$5 policies=$6
  local trace="$work/more-$name-$seed.csv" out="$work/more-$name-$seed"
  "$work/mvp" sim gen --jobs "$jobs" --nodes "$nodes" --gpus-per-node "$gpus" --load "$load" --seed "$seed" -o "$trace" >/dev/null
  "$work/mvp" sim --trace "$trace" --nodes "$nodes" --gpus-per-node "$gpus" --policy "$policies" -o json >"$out.results"
  local easy_max
  easy_max="$(python3 -c 'import json,sys; print(next(r["max_wait_s"] for r in map(json.loads, open(sys.argv[1])) if r["policy"] == "easy"))' "$out.results")"
  "$work/mvp" sim bound --trace "$trace" --nodes "$nodes" --gpus-per-node "$gpus" --max-wait-s "$easy_max" >"$out.bound"
  echo "$name $nodes $gpus $load $seed" >"$out.meta"
}
export -f more
export work jobs
# The default policy is the first of --policy all (scheduler.PolicyNames).
default="$(python3 -c 'import glob,json; print(json.loads(open(sorted(glob.glob("'"$work"'/*.results"))[0]).readline())["policy"])')"
echo "sim: summary across seeds (16 × 8: $more_seeds; 2 × 4: $more_small), default policy $default"
{
  for s in $more_seeds; do echo "big 16 8 0.7 $s $default,easy,sjf"; done
  for s in $more_small; do echo "small 2 4 0.8 $s $default,easy"; done
} | xargs -P 2 -L 1 bash -c 'more "$@"' _
elapsed=$((SECONDS - start))
cut -d' ' -f1-3 /proc/loadavg >"$work/load.after"

echo "sim: P2, one Decide over a 100,000-deep queue, per policy (internal/scheduler)"
go test -run '^$' -bench 'Decide100k' -benchtime 20x -count 5 ./internal/scheduler/ | tee "$work/p2.txt"
go test -run '^$' -bench 'Explain100k' -benchtime 3x -count 1 ./internal/scheduler/ | tee -a "$work/p2.txt"
cut -d' ' -f1-3 /proc/loadavg >"$work/load.p2"

python3 scripts/sim-report.py "$work" "$elapsed" "$jobs" >"$work/section.md"
cat "$work/section.md"
python3 - "$work/section.md" <<'PY'
import re, sys
section = open(sys.argv[1]).read().rstrip("\n") + "\n"
try:
    doc = open("BENCHMARKS.md").read()
except FileNotFoundError:
    doc = "# Benchmarks\n"
pat = re.compile(r"<!-- make sim: begin.*?<!-- make sim: end -->\n?", re.S)
if pat.search(doc):
    doc = pat.sub(lambda m: section, doc)
elif "\n## Raw output" in doc:
    doc = doc.replace("\n## Raw output", "\n" + section + "\n## Raw output", 1)
else:
    doc = doc.rstrip("\n") + "\n\n" + section
open("BENCHMARKS.md", "w").write(doc)
PY
echo "sim: wrote the make sim section of BENCHMARKS.md (traces replayed in ${elapsed}s)"
MVP="$work/mvp" bash scripts/sim-teams.sh
