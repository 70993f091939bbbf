#!/usr/bin/env bash
# bench.sh — `make bench`: run the benchmarks and write their figures, the method and the machine to BENCHMARKS.md.
# Figures are medians of BENCH_COUNT runs (default 3). Nothing here asserts a time.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
count="${BENCH_COUNT:-3}"
work="$(mktemp -d /tmp/mvp-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
out="$work/bench.txt"

echo "bench: P1 raw fsync baseline and group commit (internal/sqlite)"
go test -run '^$' -bench 'CreateTaskParallel|RawInsertFsync' -benchtime 5000x -count "$count" ./internal/sqlite/ | tee -a "$out"
echo "bench: P1 HTTP submissions, 64 clients (internal/api)"
go test -run '^$' -bench 'SubmitHTTP' -benchtime 10000x -count "$count" ./internal/api/ | tee -a "$out"
echo "bench: P2 one decision over a 100,000-deep queue (internal/scheduler)"
go test -run '^$' -bench 'Decide100k' -benchtime 20x -count "$count" ./internal/scheduler/ | tee -a "$out"

echo "bench: P3 against a live Ray cluster (scripts/e2e.sh starts one)"
MVP_E2E_RUN='^$' MVP_E2E_PKGS=./internal/e2e/ MVP_E2E_SKIP_PHASE2=1 \
  MVP_E2E_BENCH_ARGS="-bench GPUsFreedToSubmit|RayCallOverhead -benchtime 3x" bash scripts/e2e.sh 2>&1 |
  grep -E '^Benchmark' | tee -a "$out"
MVP_E2E_RUN='^$' MVP_E2E_PKGS=./internal/e2e/ MVP_E2E_SKIP_PHASE2=1 \
  MVP_E2E_BENCH_ARGS="-bench RayCallOverhead -benchtime 500x" bash scripts/e2e.sh 2>&1 |
  grep -E '^Benchmark' | tee -a "$out"

echo "bench: P4 Ray's job server after ${MVP_BENCH_P4_N:-500} jobs, direct vs through mvp (slow: tens of minutes)"
MVP_E2E_RUN='^$' MVP_E2E_PKGS=./internal/e2e/ MVP_E2E_SKIP_PHASE2=1 MVP_E2E_TIMEOUT=180m \
  MVP_E2E_BENCH_ARGS="-bench JobServerAfterManyJobs -benchtime 1x" bash scripts/e2e.sh 2>&1 |
  grep -E '^Benchmark' | tee -a "$out"

echo "bench: P5 cold start with 100,000 tasks"
go build -o "$work/mvp" ./cmd/mvp
MVP_BENCH_DB="$work/db/mvp.sqlite3" go test -count=1 -run TestGenerateBenchDB ./internal/sqlite/ >/dev/null
port="$(python3 scripts/free-ports.py 1)"
cat >"$work/dev.yaml" <<YAML
address: http://127.0.0.1:1
shared_root: $work/shared
v2:
  api: {port: $port}
  sqlite: {db_path: $work/db/mvp.sqlite3}
  ray: {python: /bin/false}
YAML
MVP_INTERNAL_TOKEN=bench-token-0123456789 python3 - "$work/mvp" "$work/dev.yaml" "$port" "$count" >>"$out" <<'PY'
import subprocess, sys, time, urllib.request
binary, cfg, port, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for _ in range(max(count, 5)):
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "serve", "--config", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
            break
        except Exception:
            time.sleep(0.002)
    ms = (time.perf_counter() - t0) * 1000
    p.terminate(); p.wait()
    print(f"ColdStart100k {ms:.1f} ms")
PY

python3 - "$out" "$count" <<'PY' >BENCHMARKS.md
import re, statistics, subprocess, sys, platform, os
text = open(sys.argv[1]).read()
def vals(name, unit):
    pat = re.compile(r"^" + name + r"\S*\s+\d+\s+(.*)$", re.M)
    out = []
    for m in pat.finditer(text):
        for v, u in re.findall(r"([\d.]+) (\S+)", m.group(1)):
            if u == unit:
                out.append(float(v))
    return out
med = lambda xs: statistics.median(xs) if xs else float("nan")
raw_ns = med(vals("BenchmarkRawInsertFsync", "ns/op")); raw = 1e9 / raw_ns
gc_ns = med(vals("BenchmarkCreateTaskParallel", "ns/op")); gc = 1e9 / gc_ns
http = med(vals("BenchmarkSubmitHTTP", "submits/s"))
wpt = med(vals("BenchmarkSubmitHTTP", "writes/txn")); p50 = med(vals("BenchmarkSubmitHTTP", "p50-µs")); p99 = med(vals("BenchmarkSubmitHTTP", "p99-µs"))
dec = med(vals("BenchmarkDecide100k", "ns/op")) / 1e6
heap = med(vals("BenchmarkDecide100k", "heap-MB")); rss = max(vals("BenchmarkDecide100k", "peak-rss-MB") or [float("nan")]); adm = med(vals("BenchmarkDecide100k", "admitted/op"))
cold = [float(x) for x in re.findall(r"ColdStart100k ([\d.]+) ms", text)]
p3 = med(vals("BenchmarkGPUsFreedToSubmit", "freed-to-submit-ms")); p3max = med(vals("BenchmarkGPUsFreedToSubmit", "max-ms"))
p4d = med(vals("BenchmarkJobServerAfterManyJobs", "direct-get-µs")); p4m = med(vals("BenchmarkJobServerAfterManyJobs", "via-mvp-get-µs")); p4n = med(vals("BenchmarkJobServerAfterManyJobs", "jobs"))
added = vals("BenchmarkRayCallOverhead", "added-µs"); client = vals("BenchmarkRayCallOverhead", "client-µs"); bare = vals("BenchmarkRayCallOverhead", "bare-µs")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
gov = subprocess.run(["go", "version"], capture_output=True, text=True).stdout.strip()
print(f"""# Benchmarks

Written by `make bench` (`scripts/bench.sh`); each run overwrites this file. Figures are medians of {sys.argv[2]} runs.

## Machine
- CPU: {cpu}, {os.cpu_count()} cores; memory {int(mem)//1024//1024} GiB; {platform.system()} {platform.release()}
- {gov}; SQLite via mattn/go-sqlite3, WAL, synchronous=FULL, on the machine's /tmp filesystem

## Figures
| id | what | figure | goal |
|---|---|---|---|
| P1 | durable submissions through the HTTP API, 64 clients on loopback | **{http:,.0f}/s**, p50 {p50/1000:.1f} ms, p99 {p99/1000:.1f} ms; {wpt:.1f} submissions per commit (fsync) | ≥ 5,000/s |
| P1 | baseline: one-row-per-transaction inserts with fsync, same disk, same run | {raw:,.0f}/s | — |
| P1 | HTTP submissions ÷ raw inserts | **{http/raw:.2f}×** | ≥ 1.0× |
| P1 | store alone: CreateTask through group commit, ~64 goroutines | {gc:,.0f}/s ({gc/raw:.1f}× raw) | — |
| P2 | one Decide over a 100,000-deep queue, 16 nodes × 8 GPUs | **{dec:.1f} ms**, peak RSS {rss:.0f} MB (heap in use {heap:.0f} MB), admitted {adm:.0f}, a second pass admits 0 | < 20 ms, < 200 MB |
| P5 | cold start of `mvp serve` with 100,000 tasks to `/healthz` answering | **{med(cold):.0f} ms** (min {min(cold) if cold else float('nan'):.0f}, max {max(cold) if cold else float('nan'):.0f}) | < 300 ms |
| P3 | GPUs freed (Ray end_time of the running gang) → next task's submission, tick 1 s | **{p3:.0f} ms** (max {p3max:.0f}) | ≤ 1,050 ms |
| P3 | GET /api/jobs/{{id}} through mvp's client vs a bare net/http GET (500 alternating calls) | **{added[-1] if added else float('nan'):.0f} µs added** ({client[-1] if client else float('nan'):.0f} vs {bare[-1] if bare else float('nan'):.0f} µs) | < 5 ms |
| P4 | Ray `GET /api/jobs/{{id}}` median after {p4n:.0f} undeleted direct jobs vs after as many tasks through mvp (keeps 100) | **{p4d/1000:.1f} ms vs {p4m/1000:.1f} ms** | mvp keeps Ray fast |

## Method
- P1: `BenchmarkSubmitHTTP` (internal/api) starts the real handler on a loopback TCP port over a real SQLite file
  and sends N POSTs of a 6-line jobspec from 64 goroutines with keep-alive; each 201 is counted, its latency
  recorded; afterwards every acknowledged task id is read back from the database (a missing one fails the run).
  The baseline `BenchmarkRawInsertFsync` (internal/sqlite) inserts one row per transaction with the same pragmas.
  Group commit: one writer goroutine takes every waiting write (up to 256), runs each in its own savepoint, commits
  once (one fsync) and only then answers each caller.
- P2: `BenchmarkDecide100k` (internal/scheduler) builds a snapshot of 100,000 queued tasks of mixed shapes and times
  `Decide` alone (pure; no I/O). FIFO admits from the head until the first task that does not fit; the rest get a
  reason (written only when it changes). Peak RSS is the test process's `VmHWM` (it includes the snapshot and the
  Go runtime, so it bounds the decision's own memory from above); heap is `runtime.MemStats.HeapInuse` after the
  runs. To check that one pass admits everything that fits, the admitted tasks are then made in-flight attempts
  (their GPUs reserved by Decide, as just after a submit) and a second pass over the rest must admit none, or the
  benchmark fails.
- P3: `BenchmarkGPUsFreedToSubmit` (internal/e2e, live cluster, tick 1 s): a 2×4 task holds all 8 GPUs, a second
  2×4 task waits; the figure is the second task's attempt `created_at` minus the first attempt's Ray `end_time`
  (Ray's clock and mvp's are the same machine's). `BenchmarkRayCallOverhead` alternates mvp's resty client and a
  bare `net/http` GET of the same job 500 times.
- P4: `BenchmarkJobServerAfterManyJobs` (internal/e2e): N `python3 -c pass` jobs straight to Ray, never deleted,
  then the median of 200 GETs of the last one; the jobs are deleted; then N short PPO tasks through mvp
  (keep_finished_jobs 100) and the same measurement once mvp has pruned the older ones.
- P5: a database with 100,000 tasks is generated (`TestGenerateBenchDB`), then `mvp serve` is started and
  `/healthz` polled every 2 ms; the figure is start-of-exec to first 200. Ray is not running (it is not needed for
  `/healthz`).

## Profiles (taken once, 2026-11-22, `go test -cpuprofile`)
- P1: about a third of CPU is cgo calls into SQLite from the single writer (statement execution inside the
  batched transaction); the HTTP stack and JSON/YAML handling make up most of the rest. Before the task folder
  moved out of the request path (now written at the first submit), temp-file + rename of two files per request
  halved the rate (3.5k/s → 6.9k/s). The writer batches well: one fsync per batch, so the rate is bound by CPU on
  2 cores (client and server share them), not by the disk.
- P2: half of the time is the garbage collector scanning the 100,000 Wait actions and their strings; Decide itself
  is a linear pass with a map lookup per task (`DemandOf` for workload CPUs). Formatting a reason per task took
  185 ms before verdicts and reasons were cached per gang shape and per blocker (now ~14 ms).

## Raw output
```
{text.strip()}
```
""")
PY
echo "bench: wrote BENCHMARKS.md"
