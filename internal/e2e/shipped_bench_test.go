//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shippedLoad is how long each side of BenchmarkSubmitShipped is loaded.
func shippedLoad() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("MVP_BENCH_P1_DURATION")); err == nil && d > 0 {
		return d
	}
	return 10 * time.Second
}

// loadResult is what `mvp bench load -o json` prints (internal/loadgen.Result).
type loadResult struct {
	Elapsed time.Duration `json:"elapsed"`
	Ops     map[string]struct {
		Count  int           `json:"count"`
		Errors int           `json:"errors"`
		P50    time.Duration `json:"p50"`
		P99    time.Duration `json:"p99"`
	} `json:"ops"`
	Missing   int           `json:"missing_acknowledged"`
	Verified  int           `json:"verified"`
	ServerCPU time.Duration `json:"server_cpu"`
}

// runLoad runs `mvp bench load` (its own process: 64 clients, submits only) against addr and returns its result,
// with the CPU time of the server's process pid during the run; a missing acknowledged submit or an error answer
// fails the benchmark.
func runLoad(b *testing.B, addr, token string, pid int) loadResult {
	cmd := exec.Command(env.bin, "bench", "load", "--clients", "64", "--submit-share", "1",
		"--duration", shippedLoad().String(), "--server-pid", strconv.Itoa(pid), "-o", "json")
	cmd.Env = append(os.Environ(), "MVP_ADDR="+addr, "MVP_TOKEN="+token)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("mvp bench load: %v\n%s%s", err, out, stderr.String())
	}
	var r loadResult
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("mvp bench load output: %v\n%s", err, out)
	}
	sub := r.Ops["submit"]
	if r.Missing > 0 || sub.Errors > 0 || sub.Count == 0 {
		b.Fatalf("mvp bench load: %d submits, %d errors, %d acknowledged missing\n%s", sub.Count, sub.Errors, r.Missing, out)
	}
	return r
}

// rawFsync runs `mvp bench raw-fsync` on a fresh file in dir.
func rawFsync(b *testing.B, dir, name string) float64 {
	out, err := exec.Command(env.bin, "bench", "raw-fsync", "--db", filepath.Join(dir, name), "--n", "2000").CombinedOutput()
	if err != nil {
		b.Fatalf("mvp bench raw-fsync: %v\n%s", err, out)
	}
	var rate float64
	if _, err := fmt.Sscanf(string(out), "raw-fsync %f rows/s", &rate); err != nil {
		b.Fatalf("mvp bench raw-fsync output %q: %v", out, err)
	}
	return rate
}

// BenchmarkSubmitShipped is P1 as shipped: the real `mvp serve` (its scheduler loop running against the live
// cluster, so the queued tasks are decided on while submissions arrive) loaded by `mvp bench load` in its own
// process (64 clients on loopback, submits only, every acknowledged task read back afterwards), beside, in the
// same run and with the same load, the disk's raw one-row-per-fsync rate (before and after) and the minimal
// durable server (`mvp bench minimal-server`, its own process). It reports the rates, mvp's p50/p99 and each
// server process's CPU time per submission during the load (not the read-back); with b.N > 1, the median of each
// figure over the runs. MVP_BENCH_P1_PROFILE, when set, is where serve writes a CPU profile.
func BenchmarkSubmitShipped(b *testing.B) {
	figures := map[string][]float64{} // unit → one value per run; the medians are reported
	report := func(v float64, unit string) { figures[unit] = append(figures[unit], v) }
	defer func() {
		for unit, vs := range figures {
			sort.Float64s(vs)
			b.ReportMetric(vs[len(vs)/2], unit)
		}
	}()
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		rawBefore := rawFsync(b, dir, "raw-before.sqlite3")

		// The minimal server.
		port := freePort(b)
		minCmd := exec.Command(env.bin, "bench", "minimal-server", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
			"--db", filepath.Join(dir, "minimal.sqlite3"))
		minOut, err := minCmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := minCmd.Start(); err != nil {
			b.Fatal(err)
		}
		if line, err := bufio.NewReader(minOut).ReadString('\n'); err != nil || !strings.HasPrefix(line, "minimal server on") {
			b.Fatalf("minimal server: %q %v", line, err)
		}
		go io.Copy(io.Discard, minOut)
		minRes := runLoad(b, fmt.Sprintf("http://127.0.0.1:%d", port), "", minCmd.Process.Pid)
		_ = minCmd.Process.Signal(syscall.SIGTERM)
		if err := minCmd.Wait(); err != nil {
			b.Fatalf("minimal server: %v", err)
		}

		// mvp serve as shipped (log level info, the default tick), with a few tasks queued so that the loop has
		// decisions to make from the start.
		args := []string{"--log-level", "info"}
		if p := os.Getenv("MVP_BENCH_P1_PROFILE"); p != "" {
			args = append(args, "--cpu-profile", fmt.Sprintf("%s.%d", p, i))
		}
		s := startService(b, serviceOpts{tickS: 1, serveArgs: args})
		for j := 0; j < 3; j++ {
			s.submit(spec("ppo", 1, 16, 0)) // never fits: waits
		}
		mvpRes := runLoad(b, s.c.Addr, s.token, s.cmd.Process.Pid)
		s.stop()

		rawAfter := rawFsync(b, dir, "raw-after.sqlite3")
		rate := func(r loadResult) float64 { return float64(r.Ops["submit"].Count) / r.Elapsed.Seconds() }
		perSubmit := func(r loadResult) float64 {
			return float64(r.ServerCPU.Microseconds()) / float64(r.Ops["submit"].Count)
		}
		m, mn := rate(mvpRes), rate(minRes)
		report(m, "mvp-submits/s")
		report(float64(mvpRes.Ops["submit"].P50.Microseconds()), "mvp-p50-µs")
		report(float64(mvpRes.Ops["submit"].P99.Microseconds()), "mvp-p99-µs")
		report(perSubmit(mvpRes), "mvp-cpu-µs/submit")
		report(mn, "minimal-submits/s")
		report(float64(minRes.Ops["submit"].P50.Microseconds()), "minimal-p50-µs")
		report(float64(minRes.Ops["submit"].P99.Microseconds()), "minimal-p99-µs")
		report(perSubmit(minRes), "minimal-cpu-µs/submit")
		report(rawBefore, "raw-before/s")
		report(rawAfter, "raw-after/s")
		report(m/mn, "mvp/minimal")
		report(m/((rawBefore+rawAfter)/2), "mvp/raw")
	}
}

// rayCallCount matches the count lines of mvp's Ray request histogram.
var rayCallCount = regexp.MustCompile(`^mvp_ray_request_duration_seconds_count\{endpoint="([^"]+)",outcome="[^"]*"\} (\S+)$`)

// rayRequests is how many requests mvp has made to Ray's job server so far, from its /metrics (the dashboard's
// placement-group listing, used only when the probe is down, is left out).
func (s *service) rayRequests() float64 {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "GET", s.c.Addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var n float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		m := rayCallCount.FindStringSubmatch(sc.Text())
		if m == nil || m[1] == "list_placement_groups" {
			continue
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		n += v
	}
	return n
}
