//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestNodeDeathIsRetried: the worker a run's driver is on dies (its node's processes killed with SIGKILL, as a host
// that loses power); Ray fails the job ("Job supervisor actor died … because its node has died"). That is the
// infrastructure's failure, not the run's: INFRA, requeued at once, and run again on the other worker. It failed for
// good as UNKNOWN before. The dead worker is started again (ray-up.sh) for the tests after it.
func TestNodeDeathIsRetried(t *testing.T) {
	// It needs two workers: on a cluster whose only GPU node died, the run's placement group is infeasible before
	// Ray has noticed the death, and mvp judges the gang stuck first (INSUFFICIENT_RESOURCES, retried too).
	if len(workers(t)) < 2 {
		t.Skip("needs two workers (the first phase of scripts/e2e.sh)")
	}
	dir := os.Getenv("MVP_CLUSTER_DIR")
	if dir == "" {
		t.Skip("MVP_CLUSTER_DIR (the cluster's folder of process groups) is not set")
	}
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1})
	task := s.submit(spec("ppo", 1, 2, 20))
	s.waitState(task.ID, mvp.StateRunning, 90*time.Second)
	var node string
	waitFor(t, 60*time.Second, "the driver's node of attempt 1", func() (bool, string) {
		got := s.get(task.ID)
		node = got.Attempts[0].DriverNodeID
		return node != "", string(got.State)
	})
	heal := healer(t) // the next test needs its worker
	killNode(t, dir, node)
	waitFor(t, 180*time.Second, "attempt 1 to end", func() (bool, string) {
		got := s.get(task.ID)
		a := got.Attempts[0]
		return a.FailureKind != "" || got.State.Terminal(), fmt.Sprintf("%s %s %q", got.State, a.FailureKind, a.Message)
	})
	got := s.get(task.ID)
	if a := got.Attempts[0]; a.FailureKind != mvp.FailureInfra {
		t.Errorf("attempt 1 whose node died: %s %q, want INFRA", a.FailureKind, a.Message)
	}
	if got.State.Terminal() {
		t.Fatalf("the task ended (%s: %q) when its node died; want it requeued", got.State, got.ErrorSummary)
	}
	if a := got.Attempts[0]; !strings.Contains(a.Message, "node") {
		t.Errorf("attempt 1's message does not say its node died: %q", a.Message)
	}
	heal() // at once: the tests after this one need both workers
	done := s.waitState(task.ID, mvp.StateSucceeded, 240*time.Second)
	if n := len(done.Attempts); n != 2 {
		t.Errorf("%d attempts, want 2 (the lost one and its retry)", n)
	}
	if last := done.Attempts[len(done.Attempts)-1]; last.DriverNodeID == node {
		t.Errorf("the retry ran on the dead node %s", node)
	}
	// The lost attempt's driver died with its node: it must not have trained on to write results beside the retry.
	if _, err := os.Stat(filepath.Join(s.sharedRoot, "jobs", task.ID, "results", "a01", "summary.json")); err == nil {
		t.Errorf("attempt 1 wrote its results after its node was killed: its driver outlived the node")
	}
}

// twoWorkers skips the test unless the cluster has two workers and MVP_CLUSTER_DIR names its folder of process
// groups (killNode needs it); it returns the first worker's GPUs and that folder.
func twoWorkers(t *testing.T) (gpus int, dir string) {
	t.Helper()
	ws := workers(t)
	if len(ws) < 2 {
		t.Skip("needs two workers (the first phase of scripts/e2e.sh)")
	}
	dir = os.Getenv("MVP_CLUSTER_DIR")
	if dir == "" {
		t.Skip("MVP_CLUSTER_DIR (the cluster's folder of process groups) is not set")
	}
	return int(ws[0].Total["GPU"]), dir
}

// notTheDriversNode waits until attempt 1 of task id runs past its first progress step (its gang placed, its
// worker actors started if it has any) and returns a worker that is not its driver's node.
func notTheDriversNode(t *testing.T, s *service, id string) string {
	t.Helper()
	var driver string
	waitFor(t, 120*time.Second, "attempt 1 running with its gang placed (progress step 1)", func() (bool, string) {
		got := s.get(id)
		if len(got.Attempts) > 0 {
			driver = got.Attempts[0].DriverNodeID
		}
		stepped := got.Progress != nil && got.Progress.Step != nil && *got.Progress.Step >= 1
		return got.State == mvp.StateRunning && driver != "" && stepped, string(got.State)
	})
	for _, n := range workers(t) {
		if n.ID != driver {
			return n.ID
		}
	}
	t.Fatalf("no worker other than the driver's %s", driver)
	return ""
}

// healer returns what starts a killed worker again (ray-up.sh), run at the test's end if the test did not.
func healer(t *testing.T) func() {
	healed := false
	heal := func() {
		cmd := exec.Command("bash", filepath.Join(env.repo, "scripts", "ray-up.sh"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("ray-up.sh to start the dead worker again: %v\n%s", err, out)
		}
		healed = true
	}
	t.Cleanup(func() {
		if !healed {
			heal()
		}
	})
	return heal
}

// killNode kills the worker whose raylet is Ray node id as a host that loses power would lose it: SIGKILL to the
// process group ray-up.sh recorded for it (checked: a test kills only its own cluster's nodes), and to every
// process with that node's mark, its jobs' drivers too (Ray starts each in a session of its own). It returns the
// recorded name (worker1, …).
func killNode(t *testing.T, dir, id string) string {
	t.Helper()
	recorded := map[int]string{}
	files, _ := filepath.Glob(filepath.Join(dir, "worker*.pgid"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if pg, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			recorded[pg] = strings.TrimSuffix(filepath.Base(f), ".pgid")
		}
	}
	pg, name := 0, ""
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "--node_id="+id+"\x00") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		g, err := syscall.Getpgid(pid)
		if err != nil {
			continue
		}
		if n, ok := recorded[g]; ok {
			pg, name = g, n
			break
		}
	}
	if pg == 0 {
		t.Fatalf("no worker process group of %s runs Ray node %s (recorded: %v)", dir, id, recorded)
	}
	if err := syscall.Kill(-pg, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the worker's process group %d: %v", pg, err)
	}
	mark := "MVP_RAY_NODE=" + filepath.Join(dir, name) + "\x00"
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range envs {
		if b, err := os.ReadFile(e); err == nil && strings.Contains("\x00"+string(b), "\x00"+mark) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return name
}

// TestWorkerNodeDeathIsRetried: a two-node run whose driver is on one worker loses the other worker (SIGKILL to its
// node's processes). The run's worker actor there dies with its node, and the driver's next call to it raises Ray's
// ActorDiedError ("… because its node has died"), as verl's worker group does; the job fails with exit code 1. That
// is INFRA, not the run's RUNTIME_ERROR: requeued at once, it waits until the node is back, then runs again.
func TestWorkerNodeDeathIsRetried(t *testing.T) {
	gpus, dir := twoWorkers(t)
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1})
	task := s.submit(spec("ppo", 2, gpus, 45, "mvp_test.actors=1")) // the kill comes seconds after step 1
	victim := notTheDriversNode(t, s, task.ID)
	heal := healer(t)
	killNode(t, dir, victim)
	waitFor(t, 180*time.Second, "attempt 1 to end", func() (bool, string) {
		got := s.get(task.ID)
		a := got.Attempts[0]
		return a.EndTime != nil || got.State.Terminal(), fmt.Sprintf("%s %s %q", got.State, a.FailureKind, a.Message)
	})
	got := s.get(task.ID)
	a := got.Attempts[0]
	if a.FailureKind != mvp.FailureInfra {
		t.Errorf("attempt 1, whose worker node died: %s %q, want INFRA", a.FailureKind, a.Message)
	}
	if got.State.Terminal() {
		t.Fatalf("the task ended (%s: %q) when a node under it died; want it requeued", got.State, got.ErrorSummary)
	}
	said := false
	for _, e := range s.events(task.ID) {
		said = said || strings.Contains(string(e.Payload), "was lost with a node")
	}
	if !said {
		t.Errorf("no event says attempt 1 was lost with a node")
	}
	heal()
	done := s.waitState(task.ID, mvp.StateSucceeded, 300*time.Second)
	if n := len(done.Attempts); n != 2 {
		t.Errorf("%d attempts, want 2 (the lost one and its retry)", n)
	}
}

// TestAKilledJobSupervisorIsRequeued: the process of Ray's job supervisor of a run dies (SIGKILL, as when a worker
// node's processes die one by one before Ray marks the node dead). Ray fails the job JOB_SUPERVISOR_ACTOR_DIED
// with "Worker exit type: SYSTEM_ERROR"; that is the infrastructure's failure: INFRA, requeued at once, and the
// next attempt runs. The driver does not outlive its supervisor (Ray 2.60's supervisor starts a watcher that kills
// the driver's process group within a second of the supervisor's death), so the retry never runs beside it.
func TestAKilledJobSupervisorIsRequeued(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1})
	gate := filepath.Join(t.TempDir(), "go")
	task := s.submit(spec("ppo", 1, 2, 1, "mvp_test.wait_file="+gate))
	first := s.waitState(task.ID, mvp.StateRunning, 90*time.Second).Attempts[0]
	supervisor := jobSupervisorPID(t, first.RaySubmissionID)
	driver := childOf(t, supervisor, task.ID) // not the supervisor's other child, its watcher
	if err := syscall.Kill(supervisor, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the job supervisor %d: %v", supervisor, err)
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("the driver (pid %d) to die with its supervisor", driver), func() (bool, string) {
		return syscall.Kill(driver, 0) == syscall.ESRCH, "alive"
	})
	got := s.waitJudged(task.ID, 90*time.Second)
	if a := got.Attempts[0]; a.FailureKind != mvp.FailureInfra || !strings.Contains(a.Message, "SYSTEM_ERROR") {
		t.Errorf("attempt 1 whose supervisor was killed: %s %q, want INFRA from Ray's SYSTEM_ERROR", a.FailureKind, a.Message)
	}
	if got.State.Terminal() {
		t.Fatalf("the task ended (%s: %q) when its job supervisor died; want it requeued", got.State, got.ErrorSummary)
	}
	writeFile(t, gate, "")
	done := s.waitState(task.ID, mvp.StateSucceeded, 180*time.Second)
	if n := len(done.Attempts); n != 2 {
		t.Errorf("%d attempts, want 2 (the lost one and its retry)", n)
	}
}

// jobSupervisorPID is the process id of Ray's job supervisor actor of a submission, from the dashboard's state API
// (the cluster runs on this machine).
func jobSupervisorPID(t *testing.T, submissionID string) int {
	t.Helper()
	q := url.Values{"filter_keys": {"name"}, "filter_predicates": {"="},
		"filter_values": {"_ray_internal_job_actor_" + submissionID}, "detail": {"true"}}
	var pid int
	waitFor(t, 30*time.Second, "the job supervisor's pid", func() (bool, string) {
		resp, err := dashboardGet(t, "/api/v0/actors?"+q.Encode())
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var body struct {
			Data struct {
				Result struct {
					Result []struct {
						PID   int    `json:"pid"`
						State string `json:"state"`
					} `json:"result"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return false, fmt.Sprintf("%s: %v", resp.Status, err)
		}
		for _, a := range body.Data.Result.Result {
			if a.State == "ALIVE" && a.PID > 0 {
				pid = a.PID
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", body.Data.Result.Result)
	})
	return pid
}

// childOf is the process id of a child of process parent whose command line holds word (the job's entrypoint
// shell, for a job supervisor), read from /proc.
func childOf(t *testing.T, parent int, word string) int {
	t.Helper()
	var child int
	waitFor(t, 30*time.Second, fmt.Sprintf("a child of process %d running %s", parent, word), func() (bool, string) {
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, f := range stats {
			if ppidOf(f) != parent {
				continue // another's child, or ended meanwhile
			}
			cmd, err := os.ReadFile(filepath.Join(filepath.Dir(f), "cmdline"))
			if err == nil && strings.Contains(string(cmd), word) {
				child, _ = strconv.Atoi(filepath.Base(filepath.Dir(f)))
				return true, ""
			}
		}
		return false, "none"
	})
	return child
}

// ppidOf is the parent of the process whose /proc/<pid>/stat is stat, 0 once it has ended.
func ppidOf(stat string) int {
	b, err := os.ReadFile(stat)
	if err != nil {
		return 0
	}
	// pid (comm) state ppid …: comm may hold blanks and parentheses, so read after the last ')'.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// TestARestartedMvpWaitsForTheNodesItSawBefore: mvp and one of its two workers go down together (the head
// container and a node restarted) and mvp comes back first. It knew how many GPU nodes the cluster had only from
// passes of the same process, so it judged the half cluster as the whole: of a 2 × 4 gang and a newer 1 × 4 task
// submitted then, the 1 × 4 took the worker that was up and the older gang waited for its run (found in a fault
// walk-through). mvp keeps the count of its last healthy pass in its database: after a restart nothing is admitted
// while fewer GPU nodes are alive (at most 2 min; the queue says why), and once the worker is back the gang goes
// first.
func TestARestartedMvpWaitsForTheNodesItSawBefore(t *testing.T) {
	ws := workers(t)
	if len(ws) != 2 {
		t.Skipf("needs exactly two workers (the first phase of scripts/e2e.sh); %d", len(ws))
	}
	dir := os.Getenv("MVP_CLUSTER_DIR")
	if dir == "" {
		t.Skip("MVP_CLUSTER_DIR (the cluster's folder of process groups) is not set")
	}
	gpus := int(ws[0].Total["GPU"])
	waitIdle(t)
	s := startService(t, serviceOpts{})
	warm := s.submit(spec("ppo", 1, 1, 0)) // its run ends after passes that saw both workers
	s.waitState(warm.ID, mvp.StateSucceeded, 120*time.Second)
	s.stop()

	heal := healer(t)
	killNode(t, dir, ws[1].ID)
	waitFor(t, 120*time.Second, "Ray to see one GPU worker alive", func() (bool, string) {
		n := len(workers(t))
		return n == 1, fmt.Sprintf("%d alive", n)
	})
	s.start()
	gang := s.submit(spec("ppo", 2, gpus, 1))
	small := s.submit(spec("ppo", 1, gpus, 1))
	waitFor(t, 60*time.Second, "the queue to say that the workers are rejoining", func() (bool, string) {
		if got := s.get(small.ID); got.LatestAttemptNo != 0 {
			t.Fatalf("the newer 1 × %d task was admitted (%s) on a cluster with one of its two workers", gpus, got.State)
		}
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, e := range v.Queue {
			if e.TaskID == small.ID {
				return e.Code == "cluster_unknown" && strings.Contains(e.Reason, "1 of the 2 GPU nodes"), string(e.Code) + " " + e.Reason
			}
		}
		return false, fmt.Sprintf("%s not in the queue", small.ID)
	})
	heal()
	g := s.waitState(gang.ID, mvp.StateSucceeded, 180*time.Second)
	sm := s.waitState(small.ID, mvp.StateSucceeded, 180*time.Second)
	if len(g.Attempts) != 1 || len(sm.Attempts) != 1 {
		t.Fatalf("attempts: gang %d, small %d; want one each", len(g.Attempts), len(sm.Attempts))
	}
	if !g.Attempts[0].CreatedAt.Before(sm.Attempts[0].CreatedAt) {
		t.Errorf("the newer 1 × %d was admitted at %s, before the older 2 × %d gang (%s)", gpus,
			sm.Attempts[0].CreatedAt.Format(time.RFC3339Nano), gpus, g.Attempts[0].CreatedAt.Format(time.RFC3339Nano))
	}
}

// TestAGangThatLostANodeIsJudgedByTheGangWait: a 2-node gang runs; the worker that holds only one of its groups
// (not the driver's) dies. Ray marks that group RESCHEDULING and, with no other node free for it, it stays so;
// the driver lives on (the stand-in without worker actors does not notice, as a driver that does not call its
// workers for a while would not). Such a gang is not placed and the queue waits behind it as behind a PENDING
// one: the gang wait must judge it (INSUFFICIENT_RESOURCES, requeued). Before, only PENDING groups were judged
// and the attempt held its node's GPUs and the queue for as long as its driver lived.
func TestAGangThatLostANodeIsJudgedByTheGangWait(t *testing.T) {
	gpus, dir := twoWorkers(t)
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1, gangWaitS: 5})
	task := s.submit(spec("ppo", 2, gpus, 600))
	victim := notTheDriversNode(t, s, task.ID)
	heal := healer(t)
	killNode(t, dir, victim)
	got := s.waitJudged(task.ID, 150*time.Second)
	a := got.Attempts[0]
	if a.FailureKind != mvp.FailureInsufficientResources || !strings.Contains(a.Message, "lost a node and could not be placed again") {
		t.Fatalf("attempt 1, whose gang lost a node: %s %q, want INSUFFICIENT_RESOURCES, lost a node and could not be placed again", a.FailureKind, a.Message)
	}
	if got.State.Terminal() {
		t.Fatalf("the task ended (%s: %q); want it requeued", got.State, got.ErrorSummary)
	}
	heal()
	waitFor(t, 180*time.Second, "attempt 2 running on the healed cluster", func() (bool, string) {
		got := s.get(task.ID)
		return got.State == mvp.StateRunning && len(got.Attempts) == 2, fmt.Sprintf("%s %d attempts %s", got.State, len(got.Attempts), got.PendingReason)
	})
	if out, errs, code := s.cli("cancel", task.ID); code != 0 {
		t.Errorf("cancel %s: %d %s %s", task.ID, code, out, errs)
	}
	s.waitState(task.ID, mvp.StateCanceled, 60*time.Second)
}

// TestARayletKilledAloneIsRequeuedAndItsWorkerStartedAgain: only the raylet of the driver's worker is killed
// (SIGKILL, as the kernel's OOM killer picks one process), not its whole process group. The node's core workers,
// the job supervisor among them, die with it, and the driver with its supervisor: the attempt is INFRA and
// requeued, and runs once on the other worker. The node's log monitor lived on in its group (before ray-up.sh
// started workers without one): ray-up.sh took the group for a live node ("cluster already running") and never
// started the worker again, so the cluster stayed a worker short (found in a fault walk-through). ray-up.sh must
// start it again, whatever is left of the group (TestRayUpStartsAgainAWorkerWhoseRayletDied holds the case of a
// group with no raylet left).
func TestARayletKilledAloneIsRequeuedAndItsWorkerStartedAgain(t *testing.T) {
	gpus, _ := twoWorkers(t)
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1})
	task := s.submit(spec("ppo", 1, gpus, 20))
	var node string
	waitFor(t, 90*time.Second, "attempt 1 running with its driver's node known", func() (bool, string) {
		got := s.get(task.ID)
		if len(got.Attempts) > 0 {
			node = got.Attempts[0].DriverNodeID
		}
		return got.State == mvp.StateRunning && node != "", string(got.State)
	})
	heal := healer(t)
	raylet := rayletOf(t, node)
	if err := syscall.Kill(raylet, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the raylet %d of node %s: %v", raylet, node, err)
	}
	waitFor(t, 180*time.Second, "attempt 1 to end", func() (bool, string) {
		got := s.get(task.ID)
		a := got.Attempts[0]
		return a.FailureKind != "" || got.State.Terminal(), fmt.Sprintf("%s %s %q", got.State, a.FailureKind, a.Message)
	})
	got := s.get(task.ID)
	if a := got.Attempts[0]; a.FailureKind != mvp.FailureInfra {
		t.Errorf("attempt 1 whose node's raylet was killed: %s %q, want INFRA", a.FailureKind, a.Message)
	}
	if got.State.Terminal() {
		t.Fatalf("the task ended (%s: %q) when its node's raylet died; want it requeued", got.State, got.ErrorSummary)
	}
	heal()
	waitFor(t, 120*time.Second, "two alive workers again after ray-up.sh", func() (bool, string) {
		n := len(workers(t))
		return n >= 2, fmt.Sprintf("%d alive worker(s)", n)
	})
	done := s.waitState(task.ID, mvp.StateSucceeded, 240*time.Second)
	if n := len(done.Attempts); n != 2 {
		t.Errorf("%d attempts, want 2 (the lost one and its retry)", n)
	}
}

// rayletOf returns the pid of the raylet of Ray node id (a process named raylet with --node_id=<id>).
func rayletOf(t *testing.T, id string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "--node_id="+id+"\x00") {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "comm"))
		if strings.TrimSpace(string(comm)) != "raylet" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		return pid
	}
	t.Fatalf("no raylet runs Ray node %s", id)
	return 0
}

// TestAGangThatNeedsADeadNodeWaitsForIt: a worker dies (its node's processes killed); a gang that needs both
// workers is submitted. Ray lists the dead node with no resources, so mvp read the gang as one that can never fit
// ("1 of 1 alive GPU node(s) are that large"), the user's error, found in a fault walk-through. mvp remembers the
// node it saw alive: the gang waits with code nodes_down naming it, the submit warns that it cannot start on the
// nodes alive now, `mvp queue` lists the node as down, and so does mvp after a restart (the database keeps the
// nodes seen alive); once the worker is started again (under a new node id), the gang runs.
func TestAGangThatNeedsADeadNodeWaitsForIt(t *testing.T) {
	gpus, dir := twoWorkers(t)
	waitIdle(t)
	s := startService(t, serviceOpts{retryS: 1})
	ws := workers(t)
	waitFor(t, 30*time.Second, "the queue's view to show both workers", func() (bool, string) {
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		return len(v.Nodes) >= 2, fmt.Sprintf("%d GPU node(s)", len(v.Nodes))
	})
	heal := healer(t)
	victim := ws[1].ID
	killNode(t, dir, victim)
	waitFor(t, 120*time.Second, "Ray to list the killed worker dead", func() (bool, string) {
		n := len(workers(t))
		return n == 1, fmt.Sprintf("%d alive worker(s)", n)
	})
	id := s.submit(spec("ppo", 2, gpus, 600)).ID
	waitsForVictim := func() (bool, string) {
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, q := range v.Queue {
			if q.TaskID == id {
				return q.Code == "nodes_down" && strings.Contains(q.Reason, victim[:12]) && len(v.DownNodes) == 1 &&
					v.DownNodes[0].NodeID == victim && v.DownNodes[0].TotalGPUs == float64(gpus), fmt.Sprintf("%s %q, down %+v", q.Code, q.Reason, v.DownNodes)
			}
		}
		return false, "not in the queue"
	}
	waitFor(t, 60*time.Second, "the gang to wait with nodes_down", waitsForVictim)
	// Written by a pass of the loop, which then knows of the dead node too (a submit's warning reads the cluster
	// as the loop's last pass saw it).
	waitFor(t, 30*time.Second, "the task's pending reason to say so", func() (bool, string) {
		got := s.get(id)
		return strings.Contains(got.PendingReason, "waiting for GPU nodes that are down"), got.PendingReason
	})
	if out, _, _ := s.cli("queue"); !strings.Contains(out, victim+" (down)") {
		t.Errorf("mvp queue does not list the dead worker as down:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "gang.yaml")
	if err := os.WriteFile(file, []byte(spec("ppo", 2, gpus, 600)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs, code := s.cli("submit", "-f", file)
	if code != 0 || len(strings.Fields(out)) == 0 {
		t.Fatalf("mvp submit: exit %d %s %s", code, out, errs)
	}
	if !strings.Contains(errs, "warning: queued, but it cannot start on the nodes alive now: waiting for GPU nodes that are down") {
		t.Errorf("the submit's warning: %q", errs)
	}
	if out, errs, code := s.cli("cancel", strings.Fields(out)[0]); code != 0 {
		t.Errorf("cancel the second gang: %d %s %s", code, out, errs)
	}
	// A restarted mvp knows the dead worker from its database (its shape is not in Ray's table any more): the gang
	// still waits for it. It said never_fits ("can never fit on this cluster") before.
	s.stop()
	s.start()
	waitFor(t, 60*time.Second, "the gang to wait with nodes_down after a restart of mvp", waitsForVictim)
	waitFor(t, 30*time.Second, "the task's pending reason after the restart", func() (bool, string) {
		got := s.get(id)
		return strings.Contains(got.PendingReason, "waiting for GPU nodes that are down"), got.PendingReason
	})
	// The operator says the node is not coming back (a node taken out on purpose, which Ray's table keeps as dead
	// until its GCS restarts): the gang is never_fits, and still waits, for nodes may join.
	if out, errs, code := s.cli("nodes", "forget", ws[0].ID); code != 1 || !strings.Contains(errs, "is alive in Ray") {
		t.Errorf("mvp nodes forget of the alive worker: exit %d %s %s", code, out, errs)
	}
	if out, errs, code := s.cli("nodes", "forget", victim[:12]); code != 0 || !strings.Contains(out, "forgot node "+victim) {
		t.Fatalf("mvp nodes forget of the dead worker: exit %d %s %s", code, out, errs)
	}
	waitFor(t, 30*time.Second, "the gang to be never_fits once the dead worker is forgotten", func() (bool, string) {
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, q := range v.Queue {
			if q.TaskID == id {
				return q.Code == "never_fits" && len(v.DownNodes) == 0, fmt.Sprintf("%s %q, down %+v", q.Code, q.Reason, v.DownNodes)
			}
		}
		return false, "not in the queue"
	})
	if got := s.get(id); got.State != mvp.StatePendingResources {
		t.Errorf("the gang after its node was forgotten: %s, want it still waiting", got.State)
	}
	heal() // a worker that joins (the healed one, under a new id) is used as any new node
	s.waitState(id, mvp.StateRunning, 240*time.Second)
	if out, errs, code := s.cli("cancel", id); code != 0 {
		t.Errorf("cancel %s: %d %s %s", id, code, out, errs)
	}
	s.waitState(id, mvp.StateCanceled, 60*time.Second)
}
