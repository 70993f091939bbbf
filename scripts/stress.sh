#!/usr/bin/env bash
# stress.sh — `make stress`: the long reliability runs, written to RELIABILITY.md with their method and machine.
#   1. the crash matrix, each crash point STRESS_CRASH_REPEAT times (default 20), against a real Ray cluster;
#   2. the load generator: STRESS_CLIENTS (500) clients for STRESS_DURATION (60s) against a real mvp serve;
#   3. the jobspec fuzz target for STRESS_FUZZTIME (10m); what it finds stays in
#      internal/jobspec/testdata/fuzz/FuzzParse, which `go test` replays from then on.
# Figures, not assertions: a failed crash run is recorded as such (and makes the script exit non-zero).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo" || exit 1
repeat="${STRESS_CRASH_REPEAT:-20}"
clients="${STRESS_CLIENTS:-500}"
duration="${STRESS_DURATION:-60s}"
fuzztime="${STRESS_FUZZTIME:-10m}"
work="$(mktemp -d /tmp/mvp-stress.XXXXXX)"
report="$work/crash.tsv"
: >"$report"
go build -o bin/mvp ./cmd/mvp || exit 1

echo "stress: crash matrix × $repeat"
MVP_E2E_RUN='TestCrashMatrix' MVP_CRASH_REPEAT="$repeat" MVP_CRASH_REPORT="$report" MVP_E2E_SKIP_PHASE2=1 \
  MVP_E2E_TIMEOUT=300m bash scripts/e2e.sh >"$work/crash.log" 2>&1
crash_status=$?

echo "stress: load, $clients clients for $duration"
port="$(python3 scripts/free-ports.py 1)"
cat >"$work/dev.yaml" <<YAML
address: http://127.0.0.1:1
shared_root: $work/shared
v2:
  api: {port: $port, host: 127.0.0.1}
  sqlite: {db_path: $work/db/mvp.sqlite3}
  ray: {python: /bin/false}
YAML
export MVP_INTERNAL_TOKEN="stress-token-$RANDOM$RANDOM$RANDOM"
bin/mvp serve --config "$work/dev.yaml" >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
ulimit -n 65536 2>/dev/null || true
MVP_ADDR="http://127.0.0.1:$port" MVP_TOKEN="$MVP_INTERNAL_TOKEN" \
  bin/mvp bench load --clients "$clients" --duration "$duration" >"$work/load.txt" 2>&1
load_status=$?
kill -TERM "$serve_pid"; wait "$serve_pid"

echo "stress: fuzz for $fuzztime"
before="$(find internal/jobspec/testdata/fuzz -type f 2>/dev/null | wc -l)"
go test -run '^$' -fuzz=FuzzParse -fuzztime="$fuzztime" ./internal/jobspec/ >"$work/fuzz.log" 2>&1
fuzz_status=$?
after="$(find internal/jobspec/testdata/fuzz -type f 2>/dev/null | wc -l)"

python3 - "$report" "$work/load.txt" "$work/fuzz.log" "$repeat" "$clients" "$duration" "$fuzztime" \
  "$crash_status" "$load_status" "$fuzz_status" "$before" "$after" >RELIABILITY.md <<'PY'
import collections, os, platform, sys
rep, load, fuzz, repeat, clients, duration, fuzztime, cs, ls, fs, before, after = sys.argv[1:]
rows = collections.OrderedDict()
for line in open(rep):
    p = line.rstrip("\n").split("\t")
    if len(p) != 5:
        continue
    r = rows.setdefault(p[0], {"runs": 0, "ok": 0, "secs": 0.0, "attempts": 0})
    r["runs"] += 1; r["ok"] += p[2] == "ok"; r["secs"] += float(p[4]); r["attempts"] += int(p[3])
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
fz = [l for l in open(fuzz).read().splitlines() if l.startswith(("fuzz:", "ok", "FAIL", "---", "PASS"))][-4:]
print(f"""# Reliability

Written by `make stress` (`scripts/stress.sh`), which overwrites it. Machine: {cpu}, {os.cpu_count()} cores,
{platform.system()} {platform.release()}; Ray 2.60.0, a head and 2 workers of 4 fake GPUs on the same machine.

## Crash matrix ({repeat} runs per point; exit status {cs})
Each run arms `MVP_CRASH_POINT`, drives a task to that point (the process exits with code 86 there), starts
`mvp serve` again and checks: the task (even one whose submit was never answered) is there, it settles in the
expected state, every attempt has exactly one Ray job and no extra attempt id exists in Ray.

| crash point | runs | passed | mean attempts | mean seconds |
|---|---|---|---|---|""")
for k, r in rows.items():
    print(f"| {k} | {r['runs']} | {r['ok']} | {r['attempts']/r['runs']:.2f} | {r['secs']/r['runs']:.1f} |")
print(f"""
## Load ({clients} clients for {duration}; exit status {ls})
Half submits (a 1×16 PPO spec that waits in the queue, so no Ray job starts), a quarter gets of the client's own
tasks, a quarter lists of 20; then every acknowledged submit is read back.

{open(load).read().strip()}

## Fuzzing (`FuzzParse` for {fuzztime}; exit status {fs})
Files in internal/jobspec/testdata/fuzz before: {before}, after: {after} (new ones are failures the fuzzer found;
`go test` replays them).
```
{chr(10).join(fz)}
```
""")
PY
echo "stress: wrote RELIABILITY.md (crash $crash_status, load $load_status, fuzz $fuzz_status); logs in $work"
[[ $crash_status -eq 0 && $load_status -eq 0 && $fuzz_status -eq 0 ]]
