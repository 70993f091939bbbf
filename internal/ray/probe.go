package ray

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// ProbeOptions configure a Probe.
type ProbeOptions struct {
	// Python is Ray's Python; Script is py-entrypoints/mvp_probe.py; Address is the GCS host:port.
	Python, Script, Address string
	// Env is added to the child's environment (e.g. RAY_AUTH_MODE=token, RAY_AUTH_TOKEN=…).
	Env []string
	// ReadTimeout bounds one reading. Default 5 s.
	ReadTimeout time.Duration
	// Fallback, when set, is used when the probe cannot answer (e.g. Client.ClusterStatus).
	Fallback func(context.Context) (*mvp.ClusterView, error)
	Logger   *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Probe reads the cluster's live per-node availability the way verl does, through a long-lived Python child
// (one JSON line per request). It implements mvp.ClusterReader.
type Probe struct {
	o ProbeOptions

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte
	exited  chan struct{}
	waitErr *error      // the child's exit, readable once exited is closed
	stderr  *tailWriter // the end of the child's stderr
	ready   bool
	backoff time.Duration
	nextTry time.Time
	closed  bool
	// startErr says why the child last failed to start; it stands for the cause while the probe backs off.
	startErr error
	// logged is the last cause of failure logged, so that each distinct cause is logged once, not every tick.
	logged string
	// seen are the live groups of the last reading; removed the groups read before and not since (see withRemoved);
	// head is the head node of the reading they belong to.
	seen    []mvp.PlacementGroup
	removed []removedGroup
	head    string
}

// removedGroup is a placement group the probe read and then no longer read, and when it was first missed.
type removedGroup struct {
	g  mvp.PlacementGroup
	at time.Time
}

// How long and how many removed groups a Probe keeps in its readings: long enough for mvp to learn that the job
// that had them ended (seconds), or for a driver that freed its gang to finish; at most removedMax, the oldest
// dropped first.
const (
	removedKeep = time.Hour
	removedMax  = 1024
)

// StartError says why the live probe could not start and which setting to change. It is an
// mvp.ErrRayUnavailable.
type StartError struct {
	// Reason is e.g. "/usr/bin/python3 (v2.ray.python) cannot import ray (…); set v2.ray.python to …".
	Reason string
}

func (e *StartError) Error() string { return "the live probe could not start: " + e.Reason }

// Unwrap makes a StartError match mvp.ErrRayUnavailable.
func (e *StartError) Unwrap() error { return mvp.ErrRayUnavailable }

// stderrTail bounds how much of the child's stderr is kept to explain its exit.
const stderrTail = 4096

// tailWriter keeps the last stderrTail bytes written to it, and logs them at debug level.
type tailWriter struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(b []byte) (int, error) {
	w.log.Debug("probe stderr", "text", string(b))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if len(w.buf) > stderrTail {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-stderrTail:]...)
	}
	return len(b), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

var _ mvp.ClusterReader = (*Probe)(nil)

// NewProbe makes a Probe; the child starts on the first reading.
func NewProbe(o ProbeOptions) *Probe {
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Probe{o: o}
}

type probeAnswer struct {
	Ready  *bool                `json:"ready"`
	OK     bool                 `json:"ok"`
	Error  string               `json:"error"`
	Nodes  []mvp.Node           `json:"nodes"`
	Groups []mvp.PlacementGroup `json:"placement_groups"`
}

// ReadCluster returns one live reading, or the fallback's (lagging) one when the probe cannot answer; the
// fallback's view says in ProbeError why the probe did not answer.
func (p *Probe) ReadCluster(ctx context.Context) (*mvp.ClusterView, error) {
	v, err := p.read(ctx)
	if err == nil {
		p.logCause(nil, false)
		return v, nil
	}
	if p.o.Fallback != nil {
		fv, ferr := p.o.Fallback(ctx)
		if ferr == nil {
			p.logCause(err, true)
			fv.ProbeError = err.Error()
			return fv, nil
		}
		err = fmt.Errorf("%w; the dashboard's view could not be read either: %v", err, ferr)
	}
	p.logCause(err, false)
	return nil, err
}

// Live returns one live reading, without the dashboard's fallback: for readers that may read often (a
// scheduler.ClusterWatch), so that a probe that cannot answer never turns into requests to Ray's dashboard.
func (p *Probe) Live(ctx context.Context) (*mvp.ClusterView, error) { return p.read(ctx) }

// logCause logs why the probe cannot answer once per distinct cause (fallback: the dashboard's view is used
// instead), and when it answers again.
func (p *Probe) logCause(err error, fallback bool) {
	if err != nil && ctxErr(err) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil && p.logged != "":
		p.o.Logger.Info("the live probe answers again")
		p.logged = ""
	case err != nil && err.Error() != p.logged:
		p.logged = err.Error()
		if fallback {
			p.o.Logger.Warn("the live probe cannot answer; using the dashboard's lagging view", "err", err)
		} else {
			p.o.Logger.Warn("the live probe cannot answer", "err", err)
		}
	}
}

func ctxErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func (p *Probe) read(ctx context.Context) (*mvp.ClusterView, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("probe: %w (closed)", mvp.ErrRayUnavailable)
	}
	if err := p.ensure(ctx); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(p.stdin, "read\n"); err != nil {
		p.kill("write failed")
		return nil, fmt.Errorf("probe: %w (%v)", mvp.ErrRayUnavailable, err)
	}
	a, err := p.next(ctx)
	if err != nil && ctxErr(err) {
		// Abandoned, not failed (mvp stopping, or a caller that gave up): the child's late answer would be taken
		// for the next reading's, so it is ended all the same, but this is no restart to warn of.
		p.o.Logger.Debug("probe stopped: a reading was abandoned", "reason", err.Error())
		p.stopChild()
		return nil, err
	}
	if err != nil {
		p.kill(err.Error())
		return nil, err
	}
	if !a.OK {
		return nil, fmt.Errorf("probe: %w (%s)", mvp.ErrRayUnavailable, a.Error)
	}
	now := p.o.Now()
	return &mvp.ClusterView{At: now, Nodes: a.Nodes, Groups: p.withRemoved(headOf(a.Nodes), a.Groups, now), Source: "probe"}, nil
}

// withRemoved adds to a reading's groups, as REMOVED, those an earlier reading had and this one has not, for
// removedKeep. The probe reads only live groups (Ray keeps removed ones in its table for a while, with no time of
// removal), and Ray drops a group from them before the nodes report its GPUs free (60–110 ms on Ray 2.60) and
// before the job's end is known: without this the scheduler took an ended gang for one still to be placed.
// A reading with another head node is another cluster (Ray's head restarted): what the last one had is forgotten,
// not removed, since a new cluster numbers its jobs from the start again and a job id of the old one would name a
// new job. Called with p.mu held.
func (p *Probe) withRemoved(head string, groups []mvp.PlacementGroup, now time.Time) []mvp.PlacementGroup {
	if head != p.head {
		p.head, p.seen, p.removed = head, p.seen[:0], p.removed[:0]
	}
	live := make(map[string]bool, len(groups))
	for _, g := range groups {
		live[g.ID] = true
	}
	for _, g := range p.seen {
		if !live[g.ID] {
			g.State, g.SchedulingState, g.RemovedNs = "REMOVED", "REMOVED", now.UnixNano()
			p.removed = append(p.removed, removedGroup{g: g, at: now})
		}
	}
	p.seen = append(p.seen[:0], groups...)
	keep := p.removed[:0]
	for i, r := range p.removed {
		if now.Sub(r.at) > removedKeep || len(p.removed)-i > removedMax || live[r.g.ID] {
			continue
		}
		keep = append(keep, r)
	}
	clear(p.removed[len(keep):])
	p.removed = keep
	if len(p.removed) == 0 {
		return groups
	}
	out := make([]mvp.PlacementGroup, 0, len(groups)+len(p.removed))
	out = append(out, groups...)
	for _, r := range p.removed {
		out = append(out, r.g)
	}
	return out
}

// errProbeExited: the child's stdout ended.
var errProbeExited = fmt.Errorf("probe: %w (the probe exited)", mvp.ErrRayUnavailable)

// next waits for the child's next JSON line.
func (p *Probe) next(ctx context.Context) (*probeAnswer, error) {
	t := time.NewTimer(p.o.ReadTimeout)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return nil, errProbeExited
		}
		var a probeAnswer
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, fmt.Errorf("probe: %w (bad answer %.200q)", mvp.ErrRayUnavailable, line)
		}
		return &a, nil
	case <-t.C:
		return nil, fmt.Errorf("probe: %w (no answer within %s)", mvp.ErrRayUnavailable, p.o.ReadTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ensure starts the child if it is not running, and waits for its {"ready": true}.
func (p *Probe) ensure(ctx context.Context) error {
	if p.cmd != nil && p.ready {
		select {
		case <-p.exited:
			p.kill("exited")
		default:
			return nil
		}
	}
	if p.cmd == nil {
		if now := time.Now(); now.Before(p.nextTry) {
			if p.startErr != nil {
				return p.startErr // still the same cause while it backs off
			}
			return fmt.Errorf("probe: %w (restarting after a failure)", mvp.ErrRayUnavailable)
		}
		if err := p.start(); err != nil {
			p.startErr = &StartError{Reason: fmt.Sprintf("%s (v2.ray.python) cannot be run (%v); set v2.ray.python to the Python that has Ray",
				p.o.Python, err)}
			p.fail()
			return p.startErr
		}
	}
	for !p.ready {
		a, err := p.next(ctx)
		if err != nil {
			if ctxErr(err) {
				p.kill("not ready: " + err.Error())
				return err
			}
			exited := errors.Is(err, errProbeExited)
			p.kill("not ready: " + err.Error())
			if exited {
				p.startErr = &StartError{Reason: p.whyExited()}
			} else {
				p.startErr = &StartError{Reason: fmt.Sprintf(
					"it did not report ready within %s (it imports ray and connects to the GCS at %s, v2.ray.gcs_address)%s",
					p.o.ReadTimeout, p.o.Address, lastLineOf(p.stderr.String(), ": "))}
			}
			p.fail()
			return p.startErr
		}
		if a.Ready != nil && *a.Ready {
			p.ready = true
			p.backoff, p.startErr = 0, nil
			p.o.Logger.Info("the live probe is ready", "pid", p.cmd.Process.Pid, "gcs", p.o.Address)
			break
		}
		if a.Error != "" {
			if len(p.lines) > 0 {
				// Written while nobody read (mvp backing off during an outage): a later line says more, perhaps
				// that it is ready; only the last line written says how the child is now.
				continue
			}
			// The child keeps trying (once a second); the next reading waits for its next line.
			p.startErr = &StartError{Reason: fmt.Sprintf(
				"it cannot connect to the GCS at %s (v2.ray.gcs_address): %s; set v2.ray.gcs_address to the cluster's GCS host:port (on a token cluster, check v2.ray.token_env too)",
				p.o.Address, a.Error)}
			return p.startErr
		}
	}
	return nil
}

// whyExited turns the exit of a child that never became ready, and the end of its stderr, into a reason that
// names the setting to change.
func (p *Probe) whyExited() string {
	tail := p.stderr.String()
	last := lastLineOf(tail, "")
	switch {
	case strings.Contains(tail, "No module named 'ray"), strings.Contains(tail, "ImportError"),
		strings.Contains(tail, "ModuleNotFoundError"):
		return fmt.Sprintf("%s (v2.ray.python) cannot import ray (%s); set v2.ray.python to the Python that has Ray",
			p.o.Python, last)
	case strings.Contains(tail, "can't open file"):
		return fmt.Sprintf("the probe script %s (v2.ray.probe_script) cannot be opened (%s); set v2.ray.probe_script to mvp's py-entrypoints/mvp_probe.py",
			p.o.Script, last)
	}
	exit := "it exited"
	if p.waitErr != nil && *p.waitErr != nil {
		exit = "it exited (" + (*p.waitErr).Error() + ")"
	}
	if last == "" {
		last = "no output on stderr"
	}
	return fmt.Sprintf("%s before it was ready: %s; check v2.ray.python (%s) and v2.ray.probe_script (%s)",
		exit, last, p.o.Python, p.o.Script)
}

// lastLineOf returns the last non-empty line of s (at most 300 bytes), after prefix; "" when there is none.
func lastLineOf(s, prefix string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if l == "" {
		return ""
	}
	return prefix + mvp.Clip(l, 300) // between characters, as lastLine
}

func (p *Probe) fail() {
	if p.backoff == 0 {
		p.backoff = 500 * time.Millisecond
	} else if p.backoff < 10*time.Second {
		p.backoff *= 2
	}
	p.nextTry = time.Now().Add(p.backoff)
}

func (p *Probe) start() error {
	cmd := exec.Command(p.o.Python, p.o.Script, "--address", p.o.Address)
	cmd.Env = append(os.Environ(), p.o.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	// A Writer, not a pipe: Wait returns only once stderr is copied, so that the tail explains an early exit.
	tail := &tailWriter{log: p.o.Logger}
	cmd.Stderr = tail
	cmd.WaitDelay = 2 * time.Second // a grandchild holding stderr open must not hold Wait
	if err := cmd.Start(); err != nil {
		return err
	}
	lines := make(chan []byte, 16)
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	p.cmd, p.stdin, p.lines, p.exited, p.ready = cmd, stdin, lines, exited, false
	p.waitErr, p.stderr = &waitErr, tail
	p.o.Logger.Debug("probe started", "pid", cmd.Process.Pid, "gcs", p.o.Address)
	return nil
}

// kill ends the child and its process group, said at WARN when it was ready (a restart) and at DEBUG before.
func (p *Probe) kill(why string) {
	if p.cmd == nil {
		return
	}
	if p.ready {
		p.o.Logger.Warn("probe restarted", "reason", why)
	} else {
		p.o.Logger.Debug("probe stopped before it was ready", "reason", why)
	}
	p.stopChild()
}

// stopChild ends the child and its process group at once, without a word; the next reading starts another.
func (p *Probe) stopChild() {
	if p.cmd == nil {
		return
	}
	_ = p.stdin.Close()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	p.cmd, p.ready = nil, false
}

// Close ends the child: stdin closed, then killed after a short grace.
func (p *Probe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cmd == nil {
		return nil
	}
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	p.cmd = nil
	return nil
}

// headOf is the id of the alive head node of a reading, "" when there is none.
func headOf(nodes []mvp.Node) string {
	for _, n := range nodes {
		if n.IsHead && n.Alive {
			return n.ID
		}
	}
	return ""
}
