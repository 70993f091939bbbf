#!/usr/bin/env bash
# sim-teams.sh — the two-team part of `make sim` (issue 15): team "steady" submits steadily, team "flood" submits
# a sweep in the first tenth of the span (`mvp sim gen --flood-load`); each trace is replayed under fifo, the
# default policy without fair share, the default with fair share, and with the steady team alone; each team's
# mean wait and GPU share and the goals go to the "make sim: teams" section of BENCHMARKS.md.
#   SIM_TEAM_SEEDS   seeds (default "1 2 3 4 5 6")
#   SIM_TEAM_JOBS    the steady team's jobs per trace (default 2000)
#   MVP              the mvp binary to use (default: built here)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
seeds="${SIM_TEAM_SEEDS:-1 2 3 4 5 6}"
jobs="${SIM_TEAM_JOBS:-2000}"
nodes=4 gpus=8 load=0.4 flood=0.8
work="$(mktemp -d /tmp/mvp-sim-teams.XXXXXX)"
trap 'rm -rf "$work"' EXIT
mvp="${MVP:-}"
if [ -z "$mvp" ]; then
  go build -o "$work/mvp" ./cmd/mvp
  mvp="$work/mvp"
fi
start=$SECONDS
for s in $seeds; do
  echo "sim teams: $nodes × $gpus GPUs, steady load $load ($jobs jobs), flood load $flood, seed $s"
  t="$work/teams-$s.csv"
  "$mvp" sim gen --jobs "$jobs" --nodes "$nodes" --gpus-per-node "$gpus" --load "$load" --flood-load "$flood" --seed "$s" -o "$t"
  common=(--trace "$t" --nodes "$nodes" --gpus-per-node "$gpus" -o json)
  {
    "$mvp" sim "${common[@]}" --policy fifo --fair-share=false | sed 's/^{/{"run":"fifo",/'
    "$mvp" sim "${common[@]}" --fair-share=false | sed 's/^{/{"run":"default",/'
    "$mvp" sim "${common[@]}" --fair-share=true | sed 's/^{/{"run":"fair_share",/'
    "$mvp" sim "${common[@]}" --only-user steady | sed 's/^{/{"run":"steady_alone",/'
  } >"$work/teams-$s.results"
done
elapsed=$((SECONDS - start))
python3 - "$work" "$elapsed" "$jobs" "$nodes" "$gpus" "$load" "$flood" "$seeds" <<'PY' >"$work/section.md"
import json, sys
work, elapsed, jobs, nodes, gpus, load, flood, seeds = sys.argv[1:9]
h = lambda s: f"{s/3600:,.2f} h"
print("<!-- make sim teams: begin (scripts/sim-teams.sh rewrites this section) -->")
print("## Users and fair share (`make sim`, two teams)\n")
print(f"Written by `scripts/sim-teams.sh` ({elapsed} s). Cluster {nodes} × {gpus} GPUs. Team **steady**: `mvp sim gen "
      f"--jobs {jobs} --load {load}` (the generator of specs/sim.md). Team **flood**: a sweep of one-node, whole-node "
      f"jobs (run times log-normal around 2 h) worth load {flood} over the same span, all submitted in its first "
      "tenth (`--flood-load`). Runs: `fifo`; the default policy (xfchain) with fair share off; with fair share on "
      "(half-life 7 days, starvation bound 1 day: the defaults); and the steady team alone (`--only-user steady`). "
      "GPU share is each team's part of all GPU-seconds of the replay: every job runs in the end, so it is the "
      "workload's mix in every run; what fair share changes is *when* each team gets its GPUs, which the waits show. "
      "The 2× goal is checked as issue 15 states it. Why it is missed (the steady team's bursts of multi-node gangs "
      "exceed its half of the cluster, which a flood that always wants the rest does not give back without "
      "preemption; and after a burst the 7-day half-life makes it the heavier user for days) and what was tried is "
      "in specs/design.md, \"Users, priority and fair share\".\n")
for s in seeds.split():
    runs = {r["run"]: r for r in map(json.loads, open(f"{work}/teams-{s}.results"))}
    print(f"### seed {s}\n")
    print("| run | steady mean wait | steady p95 | flood mean wait | steady GPU share | flood GPU share | GPU util |")
    print("|---|---|---|---|---|---|---|")
    for name, label in [("fifo", "fifo"), ("default", "xfchain, fair share off"), ("fair_share", "**xfchain, fair share on** (default)"),
                        ("steady_alone", "steady alone (xfchain)")]:
        r = runs[name]; u = {x["user"]: x for x in r.get("users", [])}
        st, fl = u.get("steady", {}), u.get("flood")
        fwait = h(fl["mean_wait_s"]) if fl else "–"
        fshare = "%.1f %%" % (100 * fl["gpu_share"]) if fl else "–"
        print(f"| {label} | {h(st['mean_wait_s'])} | {h(st['p95_wait_s'])} | {fwait} | "
              f"{100*st['gpu_share']:.1f} % | {fshare} | {100*r['gpu_utilisation']:.1f} % |")
    fs, alone, nofs = runs["fair_share"], runs["steady_alone"], runs["default"]
    sw = {x["user"]: x for x in fs["users"]}["steady"]["mean_wait_s"]
    aw = alone["users"][0]["mean_wait_s"]
    ok = "✓" if sw <= 2 * aw else "✗ **missed**"
    ratio = f"{sw/aw:.1f}×" if aw > 0 else "–"
    print(f"\n- steady mean wait with fair share ≤ 2 × alone: {h(sw)} vs 2 × {h(aw)} ({ratio}): {ok}")
    ok = "✓" if fs["gpu_utilisation"] >= nofs["gpu_utilisation"] else "✗ **missed**"
    print(f"- utilisation with fair share ≥ without: {100*fs['gpu_utilisation']:.1f} % vs {100*nofs['gpu_utilisation']:.1f} %: {ok}\n")
print("<!-- make sim teams: end -->")
PY
cat "$work/section.md"
python3 - "$work/section.md" <<'PY'
import re, sys
section = open(sys.argv[1]).read().rstrip("\n") + "\n"
doc = open("BENCHMARKS.md").read()
pat = re.compile(r"<!-- make sim teams: begin.*?<!-- make sim teams: end -->\n?", re.S)
if pat.search(doc):
    doc = pat.sub(lambda m: section, doc)
elif "<!-- make sim: end -->\n" in doc:
    doc = doc.replace("<!-- make sim: end -->\n", "<!-- make sim: end -->\n\n" + section, 1)
else:
    doc = doc.rstrip("\n") + "\n\n" + section
open("BENCHMARKS.md", "w").write(doc)
PY
echo "sim teams: wrote the two-team section of BENCHMARKS.md"
