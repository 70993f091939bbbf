package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/sim"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := Run(context.Background(), args, env)
	return code, out.String(), errb.String()
}

func TestSimGenThenSimJSON(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "trace.csv")
	if code, _, errs := runCLI("sim", "gen", "--jobs", "300", "--nodes", "2", "--gpus-per-node", "4", "--load", "0.8",
		"--seed", "5", "-o", trace); code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	code, out, errs := runCLI("sim", "--trace", trace, "--nodes", "2", "--gpus-per-node", "4", "--policy", "easy", "-o", "json")
	if code != 0 {
		t.Fatalf("sim: %d %s", code, errs)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"decide_calls", "decide_max_ms", "fair_share", "gpu_utilisation", "jobs", "last_job", "makespan_s", "max_wait_s",
		"mean_wait_s", "p50_wait_s", "p95_wait_s", "policy"}
	if !slices.Equal(keys, want) || obj["policy"] != "easy" || obj["jobs"] != 300.0 {
		t.Errorf("got %v", obj)
	}
	if code, out, _ := runCLI("sim", "--trace", trace, "--nodes", "2", "--gpus-per-node", "4", "--policy", "all"); code != 0 ||
		strings.Count(out, "\n") != 1+len(scheduler.PolicyNames) { // the header, then a row per policy
		t.Errorf("all policies: %d\n%s", code, out)
	}
	if code, out, _ := runCLI("sim", "--trace", trace, "--nodes", "2", "--gpus-per-node", "4", "--policy", "easy,xfchain", "-o", "json"); code != 0 ||
		strings.Count(out, "\n") != 2 || !strings.Contains(out, `"policy":"easy"`) || !strings.Contains(out, `"policy":"xfchain"`) {
		t.Errorf("a list of policies: %d\n%s", code, out)
	}
	if code, out, errs := runCLI("sim", "bound", "--trace", trace, "--nodes", "2", "--gpus-per-node", "4", "--max-wait-s", "3600"); code != 0 ||
		!strings.Contains(out, "mean_wait_lower_bound_s") {
		t.Errorf("bound: %d %s %s", code, out, errs)
	}
}

func TestSimBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("arrival_s,nnodes,n_gpus_per_node,duration_s\n0,1,1,10\n5,two,1,10\n"), 0o644)
	if code, _, errs := runCLI("sim", "--trace", bad, "--nodes", "1", "--gpus-per-node", "1"); code != 1 ||
		!strings.Contains(errs, `line 3, column nnodes: "two" is not a number`) {
		t.Errorf("bad csv: %d %s", code, errs)
	}
	for _, pol := range []string{"lifo", "easy,lifo", "easy,"} {
		if code, _, errs := runCLI("sim", "--trace", bad, "--nodes", "1", "--gpus-per-node", "1", "--policy", pol); code != 2 ||
			!strings.Contains(errs, "not one of") {
			t.Errorf("bad policy %q: %d %s", pol, code, errs)
		}
	}
	if code, _, _ := runCLI("sim", "--trace", bad); code != 2 {
		t.Errorf("no cluster: %d", code)
	}
	if code, _, errs := runCLI("sim", "gen", "--jobs", "10", "--nodes", "1", "--gpus-per-node", "1", "--load", "0", "-o", filepath.Join(dir, "x.csv")); code != 2 ||
		!strings.Contains(errs, "--load") {
		t.Errorf("gen load 0: %d %s", code, errs)
	}
}

// TestSimTwoTeams: `mvp sim gen --flood-load` writes user and priority columns, and `mvp sim` reports each user's
// jobs, mean wait and GPU share; fair share can be turned off, and --only-user replays one team alone.
func TestSimTwoTeams(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "teams.csv")
	if code, _, errs := runCLI("sim", "gen", "--jobs", "200", "--nodes", "2", "--gpus-per-node", "4", "--load", "0.4",
		"--flood-load", "0.8", "--seed", "3", "-o", trace); code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	b, err := os.ReadFile(trace)
	if err != nil || !strings.HasPrefix(string(b), "arrival_s,nnodes,n_gpus_per_node,duration_s,max_runtime_s,user,priority\n") ||
		!strings.Contains(string(b), ",flood,50\n") || !strings.Contains(string(b), ",steady,50\n") {
		t.Fatalf("trace head: %.200s (%v)", b, err)
	}
	wait := map[string]map[string]float64{}
	for _, fair := range []string{"false", "true"} {
		code, out, errs := runCLI("sim", "--trace", trace, "--nodes", "2", "--gpus-per-node", "4", "--fair-share="+fair, "-o", "json")
		if code != 0 {
			t.Fatalf("sim: %d %s", code, errs)
		}
		var r sim.Result
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Users) != 2 || r.FairShare != (fair == "true") {
			t.Fatalf("fair share %s: %v %s", fair, err, out)
		}
		wait[fair] = map[string]float64{}
		var share float64
		for _, u := range r.Users {
			wait[fair][u.User] = u.MeanWaitS
			share += u.GPUShare
		}
		if share < 0.999 || share > 1.001 {
			t.Errorf("GPU shares add up to %g", share)
		}
	}
	if wait["true"]["steady"] >= wait["false"]["steady"] {
		t.Errorf("fair share did not shorten the steady team's wait: %v", wait)
	}
	code, out, errs := runCLI("sim", "--trace", trace, "--nodes", "2", "--gpus-per-node", "4", "--only-user", "steady", "-o", "json")
	if code != 0 || !strings.Contains(out, `"user":"steady"`) || strings.Contains(out, "flood") {
		t.Errorf("only steady: %d %s %s", code, out, errs)
	}
}

// TestSimStopsOnInterrupt: Ctrl-C and SIGTERM (which cancel the command's context) did nothing during a replay or
// a generation, which can take minutes (walk-through 13). The command ends soon after, and an interrupted
// generation leaves no file under the name asked for.
func TestSimStopsOnInterrupt(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "big.csv")
	if code, _, errs := runCLI("sim", "gen", "--jobs", "60000", "--nodes", "16", "--gpus-per-node", "8", "--load", "0.9",
		"-o", trace); code != 0 {
		t.Fatalf("gen: %d %s", code, errs)
	}
	run := func(args ...string) (int, string, time.Duration) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		var out, errb bytes.Buffer
		start := time.Now()
		code := Run(ctx, args, Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
		return code, errb.String(), time.Since(start)
	}
	code, errs, took := run("sim", "--trace", trace, "--nodes", "16", "--gpus-per-node", "8", "--policy", "all", "-o", "json")
	if code == 0 || !strings.Contains(errs, "interrupted") || took > 5*time.Second {
		t.Errorf("replay interrupted after 300 ms: exit %d after %v, %q", code, took, errs)
	}
	out := filepath.Join(dir, "flood.csv")
	code, errs, took = run("sim", "gen", "--jobs", "1000", "--nodes", "16", "--gpus-per-node", "8", "--load", "0.001",
		"--flood-load", "10", "-o", out)
	if code == 0 || !strings.Contains(errs, "interrupted") || took > 5*time.Second {
		t.Errorf("generation interrupted after 300 ms: exit %d after %v, %q", code, took, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an interrupted generation left %s: %v", out, err)
	}
}

// TestOnlyUserOperator: the results name the jobs without a user column "operator", and --only-user operator
// said the trace had none of them (walk-through 13).
func TestOnlyUserOperator(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(trace, []byte("arrival_s,nnodes,n_gpus_per_node,duration_s,user\n0,1,1,10,\n0,1,1,10,bob\n10,1,1,5,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI("sim", "--trace", trace, "--nodes", "1", "--gpus-per-node", "1", "--only-user", "operator", "-o", "json")
	if code != 0 || !strings.Contains(out, `"jobs":2`) {
		t.Errorf("--only-user operator: exit %d, %s%s", code, out, errs)
	}
}

// TestSimBoundChecksItsInput: mvp sim bound took a cluster mvp sim refuses (its capacity overflowed into a
// negative utilisation bound), a NaN or infinite --max-wait-s (a JSON error, or +Inf), and a job that can never fit
// (walk-through 13).
func TestSimBoundChecksItsInput(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(trace, []byte("arrival_s,nnodes,n_gpus_per_node,duration_s\n0,1,1,10\n5,3,1,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--nodes", "3000000000", "--gpus-per-node", "4000000000", "--max-wait-s", "10"}, "at most"},
		{[]string{"--nodes", "3", "--gpus-per-node", "4", "--max-wait-s", "NaN"}, "--max-wait-s"},
		{[]string{"--nodes", "3", "--gpus-per-node", "4", "--max-wait-s", "Inf"}, "--max-wait-s"},
		{[]string{"--nodes", "2", "--gpus-per-node", "4", "--max-wait-s", "10"}, "line 3"},
	} {
		code, out, errs := runCLI(append([]string{"sim", "bound", "--trace", trace}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.says) {
			t.Errorf("%v: exit %d, %s%s; want an error saying %q", c.args, code, out, errs, c.says)
		}
	}
	// mvp sim says so before it replays, not after.
	code, _, errs := runCLI("sim", "--trace", trace, "--nodes", "2", "--gpus-per-node", "4")
	if code == 0 || !strings.Contains(errs, "line 3") {
		t.Errorf("sim with a job that never fits: exit %d, %s", code, errs)
	}
	for _, bad := range [][]string{{"--cpus-per-node", "-5"}, {"--max-running", "-1"}, {"--nodes", "0"}, {"--nodes", "200000"}} {
		args := append([]string{"sim", "--trace", trace, "--nodes", "3", "--gpus-per-node", "4"}, bad...)
		if code, _, errs := runCLI(args...); code != 2 || !strings.Contains(errs, bad[0]) {
			t.Errorf("%v: exit %d, %s; want a usage error naming %s", bad, code, errs, bad[0])
		}
	}
}

// TestSimGenWritesFilesAsBefore: writing through a temporary file made the trace 0600 (unreadable to other users
// and CI steps) and replaced a link to a device instead of writing to it (review).
func TestSimGenWritesFilesAsBefore(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "t.csv")
	gen := func(path string) {
		t.Helper()
		if code, _, errs := runCLI("sim", "gen", "--jobs", "10", "--nodes", "2", "--gpus-per-node", "4", "--load", "0.5", "-o", path); code != 0 {
			t.Fatalf("gen -o %s: %d %s", path, code, errs)
		}
	}
	gen(out)
	probe := filepath.Join(dir, "probe")
	f, err := os.Create(probe)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	want, _ := os.Stat(probe)
	if got, _ := os.Stat(out); got.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("a new trace is %v, os.Create gives %v", got.Mode().Perm(), want.Mode().Perm())
	}
	if err := os.Chmod(out, 0o640); err != nil {
		t.Fatal(err)
	}
	gen(out)
	if got, _ := os.Stat(out); got.Mode().Perm() != 0o640 {
		t.Errorf("a rewritten trace is %v, want the old file's 0640", got.Mode().Perm())
	}
	link := filepath.Join(dir, "null")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Fatal(err)
	}
	gen(link)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("-o a link to %s: the link was replaced (%v)", os.DevNull, err)
	}
	code, _, errs := runCLI("sim", "bound", "--trace", out, "--nodes", "2", "--gpus-per-node", "4")
	if code != 2 || !strings.Contains(errs, "--max-wait-s is required") {
		t.Errorf("sim bound without --max-wait-s: exit %d, %s", code, errs)
	}
}
