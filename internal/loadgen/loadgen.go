// Package loadgen drives a running mvp API with many concurrent clients that submit, read and list tasks for a
// while, and reports throughput, latency and errors. `mvp bench load` runs it; `make stress` records its figures.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
)

// Options shape a run.
type Options struct {
	Addr, Token string
	Clients     int
	Duration    time.Duration
	// Spec is the jobspec submitted; it should never fit (e.g. 1 × 64 GPUs) so that a run does not start Ray jobs.
	Spec []byte
	// SubmitShare is the share of operations that are submits (the rest are half gets, half lists). Default 0.5.
	SubmitShare float64
	// ServerPID, when set, is the server's process: its CPU time during the run (not the read-back) is reported.
	ServerPID int
	// NoVerify skips reading back the acknowledged submits (e.g. to profile the server under load alone).
	NoVerify bool
}

// OpStats are the figures of one kind of operation.
type OpStats struct {
	Count  int           `json:"count"`
	Errors int           `json:"errors"`
	P50    time.Duration `json:"p50"`
	P99    time.Duration `json:"p99"`
}

// Result is a run's outcome.
type Result struct {
	Clients  int                `json:"clients"`
	Elapsed  time.Duration      `json:"elapsed"`
	Ops      map[string]OpStats `json:"ops"`
	PerSec   float64            `json:"ops_per_second"`
	Acked    []string           `json:"-"`
	Missing  int                `json:"missing_acknowledged"`
	Verified int                `json:"verified"`
	// Sample of error texts, at most 5.
	ErrorSample []string `json:"error_sample,omitempty"`
	// ServerCPU is the CPU time (user + system) of Options.ServerPID during the run; 0 without it.
	ServerCPU time.Duration `json:"server_cpu,omitempty"`
}

// Run drives the API until the duration is over or ctx ends, then reads back every acknowledged submit.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Clients <= 0 {
		o.Clients = 64
	}
	if o.SubmitShare == 0 {
		o.SubmitShare = 0.5
	}
	tr := &http.Transport{MaxIdleConns: o.Clients, MaxIdleConnsPerHost: o.Clients, MaxConnsPerHost: o.Clients}
	c := &api.Client{Addr: o.Addr, Token: o.Token, HTTP: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
	runCtx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()

	type sample struct {
		op  string
		d   time.Duration
		err error
		id  string
	}
	samples := make(chan sample, 4096)
	var wg sync.WaitGroup
	cpu0, cpuErr := processCPU(o.ServerPID)
	start := time.Now()
	for i := 0; i < o.Clients; i++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 7))
			var mine []string
			for runCtx.Err() == nil {
				p := r.Float64()
				t0 := time.Now()
				var s sample
				switch {
				case p < o.SubmitShare || len(mine) == 0:
					raw, err := c.Submit(runCtx, o.Spec, false)
					s = sample{op: "submit", err: err}
					if err == nil {
						var t mvp.Task
						if json.Unmarshal(raw, &t) == nil {
							s.id = t.ID
							mine = append(mine, t.ID)
						}
					}
				case p < o.SubmitShare+(1-o.SubmitShare)/2:
					_, _, err := c.Get(runCtx, mine[r.IntN(len(mine))])
					s = sample{op: "get", err: err}
				default:
					resp, err := c.Do(runCtx, "GET", "/api/v2/tasks", map[string][]string{"limit": {"20"}}, nil, "")
					if err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					s = sample{op: "list", err: err}
				}
				if runCtx.Err() != nil && s.err != nil {
					return // cut by the end of the run, not an error of the server
				}
				s.d = time.Since(t0)
				samples <- s
			}
		}(uint64(i))
	}
	go func() { wg.Wait(); close(samples) }()

	lat := map[string][]time.Duration{}
	res := &Result{Clients: o.Clients, Ops: map[string]OpStats{}}
	for s := range samples {
		st := res.Ops[s.op]
		st.Count++
		if s.err != nil {
			st.Errors++
			if len(res.ErrorSample) < 5 {
				res.ErrorSample = append(res.ErrorSample, fmt.Sprintf("%s: %v", s.op, s.err))
			}
		} else {
			lat[s.op] = append(lat[s.op], s.d)
			if s.id != "" {
				res.Acked = append(res.Acked, s.id)
			}
		}
		res.Ops[s.op] = st
	}
	res.Elapsed = time.Since(start)
	if o.ServerPID != 0 {
		cpu1, err := processCPU(o.ServerPID)
		if err = errors.Join(cpuErr, err); err != nil {
			return nil, fmt.Errorf("the server's CPU time: %w", err)
		}
		res.ServerCPU = cpu1 - cpu0
	}
	total := 0
	for op, st := range res.Ops {
		ds := lat[op]
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		if len(ds) > 0 {
			st.P50, st.P99 = ds[len(ds)/2], ds[len(ds)*99/100]
		}
		res.Ops[op] = st
		total += st.Count - st.Errors
	}
	res.PerSec = float64(total) / res.Elapsed.Seconds()

	if o.NoVerify {
		return res, nil
	}
	// Every acknowledged submit must be readable afterwards.
	vctx, vcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer vcancel()
	for _, id := range res.Acked {
		if _, _, err := c.Get(vctx, id); err != nil {
			res.Missing++
			continue
		}
		res.Verified++
	}
	return res, nil
}

// processCPU is a process's user + system CPU time so far, from /proc/PID/stat (Linux); 0 for pid 0.
func processCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(raw, ')') // the command name may hold spaces
	f := strings.Fields(string(raw[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	st, err2 := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on every Linux architecture Go supports).
const clockTicks = 100

// Report renders a result as a Markdown table.
func (r *Result) Report() string {
	out := fmt.Sprintf("%d clients for %s: %.0f operations/s; %d acknowledged submits, %d read back, %d missing\n\n",
		r.Clients, r.Elapsed.Round(time.Second), r.PerSec, len(r.Acked), r.Verified, r.Missing)
	out += "| operation | count | errors | p50 | p99 |\n|---|---|---|---|---|\n"
	ops := make([]string, 0, len(r.Ops))
	for op := range r.Ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		st := r.Ops[op]
		out += fmt.Sprintf("| %s | %d | %d | %s | %s |\n", op, st.Count, st.Errors, st.P50.Round(time.Microsecond), st.P99.Round(time.Microsecond))
	}
	if r.ServerCPU > 0 {
		if n := r.Ops["submit"].Count; n > 0 {
			out += fmt.Sprintf("\nserver CPU during the run: %s, %.0f µs per submit\n", r.ServerCPU.Round(time.Millisecond),
				float64(r.ServerCPU.Microseconds())/float64(n))
		}
	}
	for _, e := range r.ErrorSample {
		out += "\nerror sample: " + e
	}
	return out
}
