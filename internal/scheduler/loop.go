package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

// Builder makes the Ray submission of attempt n of a task from its effective spec.
type Builder func(t *mvp.Task, attemptNo int) (*mvp.JobSubmission, error)

// StopResend is how often the loop asks Ray again to stop a job it asked to stop and Ray still reports live (its
// stop wait runs: SIGTERM, then SIGKILL after runtime_grace_s): often enough that a lost request is soon made
// good, not at every pass.
const StopResend = 10 * time.Second

// Loop applies Decide's actions and follows every live attempt in Ray, once per tick.
type Loop struct {
	Store mvp.Store
	// Nodes, when set, keeps the count of GPU nodes of the last healthy pass across restarts: a restarted mvp
	// holds admissions until as many are back, as after an outage (rejoining).
	Nodes   mvp.NodeMemory
	Ray     mvp.RayClient
	Cluster mvp.ClusterReader
	Build   Builder
	Files   taskfs.FS
	Clock   mvp.Clock
	Logger  *slog.Logger
	Policy  Policy
	// ReaderWait is how long Snapshot (the queue view, dry runs, the web page) waits for a reading of the cluster
	// before it answers with the cluster unknown (3 s when zero): a Ray that does not answer (its GCS hung) must
	// not hold the service's answers.
	ReaderWait time.Duration
	// Tick is the period of Run.
	Tick time.Duration
	// StopGrace is how long a tick in progress when Run's context ends may go on; 0 means 5 s.
	StopGrace time.Duration
	// Retry bounds and spaces the attempts that Conclude requeues.
	Retry RetryPolicy
	// MaxLogTries bounds the fetches of an ended job's driver log before its Ray job is deleted without it;
	// 0 means 5.
	MaxLogTries int
	// KeepFinishedJobs is how many ended mvp jobs stay in Ray's job server; older ones are deleted once their
	// status and log are in the task folder (Ray never deletes them and slows down as they pile up).
	KeepFinishedJobs int
	// Instance is the database's id, which every job's metadata carries (mvp.MetaInstance), and Jobs lists Ray's
	// jobs: checkUnfollowed tells this mvp's jobs by it. Either unset leaves that check out.
	Instance string
	Jobs     mvp.JobLister
	// LogCopyEvery is how often a running attempt's driver log is copied into the task folder; 0 means 30 s.
	LogCopyEvery time.Duration
	// MaxBackoff bounds the wait between attempts to reach Ray while it is down, and between passes while the
	// database takes no writes; 0 means 30 s.
	MaxBackoff time.Duration
	// StoreHealth, when set, says why the database takes no writes now (a full disk: every write since the last
	// that committed failed), or nil; while it does, passes back off as while Ray is down.
	StoreHealth func() error
	// Crash, when set (tests only), is called at named points and may end the process there.
	Crash func(point string)
	// Observer is told of each pass, each cluster reading and each admission; nil for none.
	Observer mvp.Observer
	// Secrets opens the secrets a task names, for the submission sent to Ray only; nil: secret storage is off.
	Secrets SecretValues
	// JobServer is the address of Ray's job server (the dashboard, dev.yaml's `address`, its password hidden),
	// named when it does not answer while the cluster reads (ErrJobServerDown); "" names the setting only.
	JobServer string

	mu     sync.Mutex
	stuck  map[string]time.Time // submission id → first seen unplaceable; only live attempts
	copied map[string]time.Time // submission id → when its running log is next copied; only live attempts
	// placed: submission id → when Ray placed its whole gang (the live probe's reading), for an attempt whose row
	// has no placed_at yet: sync writes it. Only live attempts.
	placed map[string]time.Time
	// posted: submission id → when this process last sent it to Ray; only live attempts. started: this process's
	// first pass (a POST of an earlier process may land up to then). See Report.LastPost.
	posted  map[string]time.Time
	started time.Time
	// stopAsked: submission id → when this process last asked Ray to stop its job (askStop); only live attempts.
	stopAsked map[string]time.Time
	// runningSeen is when this mvp first saw a canceled task's live attempt RUNNING (by submission id), for
	// StopTooSoon: the attempt's running_at counts only once written, and a pass whose write failed would set it
	// again.
	runningSeen map[string]time.Time
	// unkeptSaid: submission id of an ended job whose driver log could not be written on shared_root, said once
	// (keepLogs) until it is kept.
	unkeptSaid map[string]bool
	// progressRead: submission id → what was last seen of its progress file (loop_progress.go).
	progressRead map[string]string
	// progressSeen: submission id → the progress file's modification time as last seen, and when (mvp's clock)
	// the loop first saw that time (loop_progress.go).
	progressSeen map[string]progressSeen
	// unseenWarned: submission ids whose missing folder was logged (loop_progress.go).
	unseenWarned map[string]bool
	// gpuNodes is how many GPU nodes were alive at the last healthy pass; after an outage, rejoin holds the
	// admissions until as many are back (backAt: when Ray answered again; expect: the count before the outage,
	// or, fromStart, the count an earlier process saw last).
	gpuNodes, expect int
	fromStart        bool
	backAt           time.Time
	// nodesLoaded: the count of an earlier process was read from Nodes; nodesSaved: the count Nodes holds.
	nodesLoaded bool
	nodesSaved  int
	// lastUnfollowed is when checkUnfollowed last listed Ray's jobs; unfollowedWarned the jobs it has logged.
	lastUnfollowed   time.Time
	unfollowedWarned map[string]bool
	// heldLate: submission id → a job of a closed attempt whose stop stopClosed holds back (StopTooSoon), looked
	// at again every pass until it is stopped or ends.
	heldLate map[string]*heldJob
	// While Ray is unreachable, ticks back off (doubling from Tick to MaxBackoff, jittered) instead of calling
	// Ray every tick.
	backoff   time.Duration
	skipUntil time.Time
	// storeBackoff and storeSkip: the backoff of passes while the database takes no writes (StoreHealth).
	storeBackoff time.Duration
	storeSkip    time.Time
	lastKeep     time.Time     // last pass of keepLogs
	synced       chan struct{} // closed by the first pass that followed every live attempt (Synced)
	health       Health
	wake         chan struct{}
	// usageSums is fair share's decayed usage as of usageAt, with the tasks live then (see usage).
	usageSums map[string]float64
	usageAt   time.Time
	usageLive map[string]bool
	armed     bool // see Armed
	// seen is the cluster as the last pass that could admit read it (NeverFits's).
	seen *mvp.ClusterView
	// nodesAlive: node id → the GPU node as a pass last saw it alive; mostGPUNodes: the most GPU nodes a pass of
	// this process saw alive at once (withDown).
	nodesAlive   map[string]mvp.Node
	mostGPUNodes int
	// knownDirty: nodesAlive or mostGPUNodes changed since Nodes last recorded them (saveKnownNodes).
	knownDirty bool
	// saveMu orders the records of the known nodes (a pass's, ForgetNode's): the one that read them last writes
	// last, so an older copy never overwrites a newer one.
	saveMu sync.Mutex
	// lastDownSince is when the latest outage of Ray began (Health's RayDownSince, cleared when it ends).
	lastDownSince time.Time
	// jobsDown is set while the latest pass found Ray's job server not answering with the cluster read (the GCS
	// answers the probe): Snapshot then admits nothing and says why, as the loop's own passes do.
	jobsDown *ErrJobServerDown
	// folderErr is why the latest task folder could not be written (nil once one is written again): the held
	// task's reason said so, /healthz did not (SharedRootError).
	folderErr error
	// readerRead is the reading of the cluster under way for readers (readForReader), nil when none is.
	readerRead *clusterRead
	// logQuiet: node id → until when its driver logs are not asked of Ray (noteLogRead).
	logQuiet map[string]time.Time
	// passStep is what the pass under way is doing (step).
	passStep string
}

// Health is what /healthz reports of the scheduler's view of Ray.
type Health struct {
	RayOK        bool       `json:"ray_ok"`
	RayError     string     `json:"ray_error,omitempty"`
	RayDownSince *time.Time `json:"ray_down_since,omitempty"`
	// ClusterSource is where the pass's view of the cluster came from: "probe", "dashboard" (the fallback), or
	// "none" when the cluster could not be read.
	ClusterSource string    `json:"cluster_source,omitempty"`
	LastTick      time.Time `json:"last_tick"`
	// ProbeError says why the live probe did not answer while the view is the dashboard's fallback.
	ProbeError string `json:"probe_error,omitempty"`
	// RayLogsBusySince is when Ray's state API began refusing the loop's reads of ended jobs' logs as busy (its
	// limit of requests in progress taken); nil once a read gets through, or none was refused.
	RayLogsBusySince *time.Time `json:"ray_logs_busy_since,omitempty"`
	// WaitingOn is what the scheduler's pass under way is doing (one of the Step sentences), "" between passes:
	// /healthz says it of a pass that waits.
	WaitingOn string `json:"waiting_on,omitempty"`
}

// What a pass does, in the order it does it (Health.WaitingOn).
const (
	StepCluster = "reading the cluster from Ray's GCS (mvp's live probe; then the dashboard's view, at `address` in dev.yaml)"
	StepJobs    = "asking Ray's job server (the dashboard at `address` in dev.yaml) about the live attempts, and reading the driver logs of those that ended"
	StepSubmit  = "deciding and submitting to Ray's job server (the dashboard at `address` in dev.yaml)"
	StepLogs    = "keeping the driver logs of ended jobs and deleting kept jobs from Ray (Ray's state API and job server)"
)

// Health returns the latest health reading.
func (l *Loop) Health() Health {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.health
	h.WaitingOn = l.passStep
	return h
}

// step records what the pass under way is doing (Health.WaitingOn); "" once it has ended.
func (l *Loop) step(what string) {
	l.mu.Lock()
	l.passStep = what
	l.mu.Unlock()
}

// SharedRootError says why the latest task folder the loop tried to write on shared_root could not be written (a
// full or read-only disk): the task waits, and /healthz says so until a task folder is written again or no waiting
// task is held for its folder. nil when the last write succeeded, or none was tried.
func (l *Loop) SharedRootError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.folderErr
}

// Wake asks for a tick as soon as possible (e.g. after a submit or a cancel).
func (l *Loop) Wake() {
	l.mu.Lock()
	if l.wake == nil {
		l.wake = make(chan struct{}, 1)
	}
	ch := l.wake
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
}

// NeverFits reports whether t's gang (or its driver) could not start even on an empty cluster of the nodes the
// last pass saw alive, and why (a reason that begins "can never fit", or one that says it waits for GPU nodes
// that are down); false when no pass has read the cluster yet (or only one still coming back after an outage).
// The API warns a submitter with it: the task is queued all the same, since nodes may join.
func (l *Loop) NeverFits(t *mvp.Task) (string, bool) {
	l.mu.Lock()
	view := l.seen
	l.mu.Unlock()
	if view == nil {
		return "", false
	}
	why, code := neverFits(view, DemandOf(t, l.Policy), driverOf(t, l.Policy))
	return why, code != noCode
}

// Armed reports whether, at the last pass, a task waited while an attempt was live: then a change in the cluster
// (an attempt's job ending) may let a waiting task start, and a ClusterWatch should wake the loop on one.
func (l *Loop) Armed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.armed
}

func (l *Loop) arm(on bool) {
	l.mu.Lock()
	l.armed = on
	l.mu.Unlock()
}

// Synced returns a channel closed once a pass has asked Ray about every live attempt: from then on the tasks'
// states are Ray's, not those the previous process left (the schedules' overlap waits for it).
func (l *Loop) Synced() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncedLocked()
}

// markSynced closes Synced's channel, once.
func (l *Loop) markSynced() {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := l.syncedLocked()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// syncedLocked is Synced's channel, made on first use; l.mu is held.
func (l *Loop) syncedLocked() chan struct{} {
	if l.synced == nil {
		l.synced = make(chan struct{})
	}
	return l.synced
}

// stopGrace is StopGrace, or its default.
func (l *Loop) stopGrace() time.Duration {
	if l.StopGrace > 0 {
		return l.StopGrace
	}
	return 5 * time.Second
}

// Run ticks until ctx is done. A tick in progress is finished before Run returns, within StopGrace.
func (l *Loop) Run(ctx context.Context) error {
	l.Wake() // first tick at once: it reconciles what a previous process left
	l.mu.Lock()
	ch := l.wake
	l.mu.Unlock()
	t := time.NewTicker(l.Tick)
	defer t.Stop()
	var lastEnd time.Time
	var lastPass time.Duration
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-ch:
			if wait := wakeDelay(time.Now(), lastEnd, lastPass); wait > 0 {
				timer := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					timer.Stop()
					return nil
				case <-timer.C:
				case <-t.C: // a wake may hasten a pass, never put off the tick's
					timer.Stop()
				}
			}
		}
		if ctx.Err() != nil {
			return nil // the select may pick a tick or a wake that came with the stop: no tick starts after it
		}
		start := time.Now()
		// The tick runs on its own context so that a shutdown lets it finish its writes; but not for longer than
		// StopGrace, or a tick waiting on Ray (each call until its timeout) holds the stop for minutes. Past it the
		// tick's calls are cut, as a crash would cut them: every step of a tick is safe to lose.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		cut := context.AfterFunc(ctx, func() { time.AfterFunc(l.stopGrace(), cancel) })
		if err := l.RunOnce(tctx); err != nil {
			if ctx.Err() != nil && tctx.Err() != nil && errors.Is(err, context.Canceled) {
				// Cut by the stop past StopGrace, as designed: no failure.
				l.Logger.Info("the tick in progress was cut by the stop", "stop_grace", l.stopGrace(), "err", err)
			} else {
				l.Logger.Error("scheduler tick", "err", err)
			}
		}
		cut()
		cancel()
		lastEnd = time.Now()
		lastPass = lastEnd.Sub(start)
	}
}

// storeDown reports whether the pass at now is skipped because the database takes no writes (StoreHealth):
// passes then come at a pace doubling from Tick to MaxBackoff, each a try whose writes say when there is room
// again. It says once when the backoff begins and when it ends.
func (l *Loop) storeDown(now time.Time) bool {
	if l.StoreHealth == nil {
		return false
	}
	why := l.StoreHealth()
	l.mu.Lock()
	defer l.mu.Unlock()
	if why == nil {
		if l.storeBackoff > 0 {
			l.Logger.Info("the database takes writes again; the scheduler's passes are back to their tick")
		}
		l.storeBackoff, l.storeSkip = 0, time.Time{}
		return false
	}
	if now.Before(l.storeSkip) {
		return true
	}
	if l.storeBackoff == 0 {
		l.Logger.Error("the database takes no writes; the scheduler's passes back off (up to "+
			l.maxBackoff().String()+") until one commits", "err", why)
	}
	l.storeBackoff = l.nextBackoff(l.storeBackoff)
	l.storeSkip = now.Add(l.storeBackoff)
	return false // this pass runs: a try
}

// maxBackoff is MaxBackoff, or its default.
func (l *Loop) maxBackoff() time.Duration {
	if l.MaxBackoff == 0 {
		return 30 * time.Second
	}
	return l.MaxBackoff
}

// nextBackoff is the wait after prev while something the passes need is down (Ray, the database's writes): from
// Tick, doubling, up to maxBackoff.
func (l *Loop) nextBackoff(prev time.Duration) time.Duration {
	return min(max(prev*2, l.Tick), l.maxBackoff())
}

// minWakeSpacing is the least time between the end of a pass and a pass a wake asks for.
const minWakeSpacing = 10 * time.Millisecond

// wakeDelay is how long a wake at now waits for its pass, the last pass having ended at lastEnd after taking
// lastPass. A burst of wakes (many submissions) thus gets one pass per spacing instead of passes back to back: a
// pass reads the whole queue, so the loop spends at most a quarter of its time in passes however long the queue.
func wakeDelay(now, lastEnd time.Time, lastPass time.Duration) time.Duration {
	return max(0, lastEnd.Add(max(minWakeSpacing, 3*lastPass)).Sub(now))
}

// RunOnce is one tick: follow live attempts, read the cluster, decide, apply.
func (l *Loop) RunOnce(ctx context.Context) error {
	now := l.Clock.Now()
	if l.storeDown(now) {
		return nil // the database takes no writes: a pass would fail each of them (and log it), every tick
	}
	l.mu.Lock()
	skip := now.Before(l.skipUntil)
	l.mu.Unlock()
	if skip { // Ray is down: backing off, but what runs still writes its progress on mvp's own disk
		active, err := l.Store.Active(ctx)
		if err != nil {
			return fmt.Errorf("load active tasks: %w", err)
		}
		l.readProgress(ctx, active)
		return nil
	}
	l.mu.Lock()
	if l.started.IsZero() {
		l.started = now
	}
	l.mu.Unlock()
	l.loadGPUNodes(ctx)
	obs := mvp.ObserverOr(l.Observer)
	start := time.Now() // the pass's own duration, for the metrics; decisions use l.Clock
	defer func() { obs.SchedulerPass(time.Since(start)) }()
	defer l.step("")
	active, err := l.Store.Active(ctx)
	if err != nil {
		return fmt.Errorf("load active tasks: %w", err)
	}
	// The cluster is read before the attempts are synced, so that what the pass knows of its attempts is never
	// older than the reading: a driver that placed its gang between a sync and a later reading showed CREATED
	// groups of a job id its attempt did not know yet, and the gang was counted twice (walk-through 14).
	l.step(StepCluster)
	view, cerr := l.Cluster.ReadCluster(ctx)
	l.step(StepJobs)
	if ctx.Err() != nil {
		// The tick was cut (the stop, past StopGrace): what follows would fail on the dead context and read as an
		// outage of Ray (sync errors, "Ray is unavailable", outage events).
		return fmt.Errorf("read cluster: %w", ctx.Err())
	}
	var rayErr, syncErr error
	for _, t := range active {
		if ctx.Err() != nil {
			return fmt.Errorf("sync attempts: %w", ctx.Err())
		}
		if err := l.sync(ctx, t); err != nil {
			if ctx.Err() != nil {
				// Cut by the stop (a call to a dashboard that does not answer): the call did not fail on Ray. Going
				// on, a pass whose last live attempt was cut so read as one in which Ray answered: "Ray is
				// available again" in the log, RayOK in /healthz and a RAY_AVAILABLE event, during an outage.
				return fmt.Errorf("sync attempts: %w", ctx.Err())
			}
			if errors.Is(err, mvp.ErrRayUnavailable) {
				rayErr, syncErr = err, err
				l.readProgress(ctx, active)
				break // Ray is down: do not hammer it once per attempt
			}
			l.Logger.Error("sync attempt", "task_id", t.ID, "err", err)
		}
	}

	if syncErr == nil {
		l.markSynced()
	}
	if cerr != nil {
		view = nil
		if rayErr == nil {
			rayErr = cerr
		} else {
			rayErr = &clusterAndJobsDown{cluster: cerr, jobs: rayErr} // the GCS's failure first (the dashboard reads it)
		}
	} else {
		obs.ClusterRead(view)
	}
	if rayErr != nil && view != nil {
		rayErr = l.jobServerDown(now, rayErr) // the cluster reads (the GCS answers), the job server does not
	}
	if l.setHealth(now, view, rayErr) {
		l.recordOutage(ctx, active, rayErr)
	}
	l.holdForJobServer(rayErr, view != nil)
	if jd := (*ErrJobServerDown)(nil); errors.As(rayErr, &jd) {
		// No submission can go through: nothing is admitted, as while Ray cannot be read, and the queue says why.
		// Decided on the reading, the tasks behind the attempts that could not be sent waited "for GPUs".
		view, cerr = nil, jd
	}
	if why := l.rejoining(now, view, rayErr, true); why != nil {
		view, cerr = nil, why // nothing is admitted on a cluster still coming back
	}
	l.saveGPUNodes(ctx, now)
	if view != nil {
		view = l.withDown(view, true)
		l.mu.Lock()
		l.seen = view
		l.mu.Unlock()
		_ = l.saveKnownNodes(ctx, now) // logged; the next pass tries again
	}

	// Decided at the time the snapshot is read, not when the pass began: what the sync above wrote is stamped when
	// written (an attempt lost by Ray is requeued at once, next_run_at that time), and with the pass's start the
	// requeued task looked as if it were backing off while a newer one took its GPUs.
	l.step(StepSubmit)
	decideAt := l.Clock.Now()
	snap, err := l.snapshot(ctx, decideAt, view, cerr, true)
	if err != nil {
		return err
	}
	snap.JobsUnread = syncErr != nil
	acts := Decide(decideAt, snap, l.Policy)
	submits := 0
	for _, a := range acts {
		if _, ok := a.(Submit); ok {
			submits++
		}
	}
	// A ClusterWatch wakes the loop when GPUs free up, which matters while a task waits (after this pass's
	// submissions) and an attempt is live: one this pass submits, or one live when the pass began, including one
	// it concluded whose GPUs the probe may not show free yet (Ray's job server can report the end first).
	l.arm(len(snap.Queue) > submits && (submits > 0 || len(snap.Active) > 0 || len(active) > 0))
	// Waits are independent compare-and-sets on their own tasks: they go to the store together (ApplyAll, in
	// chunks), so that the writer commits many in one transaction and one request instead of a request and a
	// commit (fsync) each; the other actions are applied meanwhile, in order.
	var waits []*Wait
	for _, a := range acts {
		if w, ok := a.(*Wait); ok {
			waits = append(waits, w)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.applyWaits(ctx, waits)
	}()
	// What is written is stamped when it is written, not when the pass began: reading the cluster and Ray, and
	// the submissions before it, can take seconds.
	var unsent error // a submission that could not reach Ray's job server: the pass's others are not tried
	for _, a := range acts {
		if ctx.Err() != nil {
			break // mvp is stopping: what is left is decided again at its next start
		}
		if _, ok := a.(*Wait); ok {
			continue
		}
		if _, ok := a.(Submit); ok && unsent != nil {
			continue // decided again once the job server answers
		}
		err := l.apply(ctx, l.Clock.Now(), a)
		if _, ok := a.(Submit); ok && errors.Is(err, mvp.ErrRayUnavailable) && ctx.Err() == nil {
			unsent = err
		}
		l.applied(a, err)
	}
	<-done
	if ctx.Err() != nil {
		return nil
	}
	if unsent != nil && rayErr == nil {
		// With no live attempt to look up, the pass learned from a submission that the job server does not answer
		// (the cluster was read): an outage begins now, not at the next pass, which admitted more meanwhile.
		rayErr = l.jobServerDown(now, unsent)
		if l.setHealth(now, view, rayErr) {
			if active, err := l.Store.Active(ctx); err == nil { // with the attempt this pass could not send
				l.recordOutage(ctx, active, rayErr)
			}
		}
		l.holdForJobServer(rayErr, true)
	}
	if submits == 0 {
		l.endFolderErr(snap.Queue)
	}
	// Keeping logs and deleting old jobs from Ray come after the decisions, which do not depend on them.
	l.step(StepLogs)
	if rayErr == nil {
		l.prune(ctx, now)
		if syncErr == nil {
			l.checkUnfollowed(ctx, now)
		}
	}
	return nil
}

// ErrJobServerDown says why nothing is admitted for now: Ray's job server (the dashboard's job REST API, where mvp
// submits and follows jobs) does not answer, while the cluster reads (the live probe reads the GCS). It is an
// outage of Ray as any other (backoff, /healthz, RAY_UNAVAILABLE events, the rejoin wait on its return): no
// submission could go through, and admitted, a task holds GPUs in the queue's picture that Ray never gave it.
type ErrJobServerDown struct {
	Address string    // the dashboard's address (Loop.JobServer); "" when not known
	Since   time.Time // when the outage began
	Cause   string    // outageCause of the call that failed
}

func (e *ErrJobServerDown) Error() string {
	at := "the dashboard at `address` in dev.yaml"
	if e.Address != "" {
		at = "the dashboard at " + e.Address + ", `address` in dev.yaml"
	}
	return fmt.Sprintf("Ray's job server (%s) is not answering since %s, while the cluster itself can be read: "+
		"nothing is submitted until it answers; %s", at, e.Since.UTC().Format(time.RFC3339), e.Cause)
}

// jobServerDown is err, a call to Ray's job server that could not reach it in a pass that read the cluster, as an
// *ErrJobServerDown since the outage began (now, if it begins).
func (l *Loop) jobServerDown(now time.Time, err error) error {
	if jd := (*ErrJobServerDown)(nil); errors.As(err, &jd) {
		return err
	}
	l.mu.Lock()
	since := now
	if l.health.RayDownSince != nil {
		since = *l.health.RayDownSince
	}
	l.mu.Unlock()
	return &ErrJobServerDown{Address: l.JobServer, Since: since, Cause: outageCause(err)}
}

// holdForJobServer keeps what the pass found of Ray's job server for Snapshot: down (rayErr an *ErrJobServerDown)
// with the cluster read, or not; a pass that could not read the cluster says that instead.
func (l *Loop) holdForJobServer(rayErr error, read bool) {
	jd := (*ErrJobServerDown)(nil)
	if !read || !errors.As(rayErr, &jd) {
		jd = nil
	}
	l.mu.Lock()
	l.jobsDown = jd
	l.mu.Unlock()
}

// rejoinWait bounds how long, after Ray answers again following an outage, nothing is admitted while fewer GPU
// nodes are alive than before it: a cluster restarting comes back node by node.
const rejoinWait = 2 * time.Minute

// ErrRejoining says why nothing is admitted for now: Ray answers again after an outage, with fewer GPU nodes than
// before it.
type ErrRejoining struct {
	Alive, Before int
	Since         time.Time
	// Started: Before is the count mvp's last run saw (mvp started since), not one from before an outage.
	Started bool
}

func (e *ErrRejoining) Error() string {
	const rest = ": nothing is admitted until they rejoin (at most %s), so that a gang is not judged on a cluster still coming back"
	if e.Started {
		return fmt.Sprintf("mvp started; Ray answers since %s with %d of the %d GPU nodes its last run saw"+rest,
			e.Since.UTC().Format(time.RFC3339), e.Alive, e.Before, rejoinWait)
	}
	return fmt.Sprintf("Ray answers again since %s with %d of the %d GPU nodes it had before the outage"+rest,
		e.Since.UTC().Format(time.RFC3339), e.Alive, e.Before, rejoinWait)
}

// rejoining returns an *ErrRejoining while Ray, answering again after an outage, shows fewer alive GPU nodes than
// the last healthy pass before it, for at most rejoinWait after the cluster could be read again; nil otherwise.
// rayErr is this pass's (an outage begins, or goes on; a pass whose job lookups fail while the cluster reads is
// held too). record is true for the loop's own pass, which keeps what it learns (the count of a healthy pass, when
// the cluster came back); a reader (Snapshot) only asks.
func (l *Loop) rejoining(now time.Time, view *mvp.ClusterView, rayErr error, record bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	expect, backAt, fromStart := l.expect, l.backAt, l.fromStart
	if rayErr != nil && expect == 0 {
		expect, fromStart = l.gpuNodes, false // the count before this outage
	}
	if view == nil { // nothing is admitted without a reading anyway
		if record {
			l.expect, l.backAt, l.fromStart = expect, time.Time{}, fromStart
		}
		return nil
	}
	alive := 0
	for _, n := range view.Nodes {
		if n.Alive && n.Total[ResGPU] > 0 {
			alive++
		}
	}
	var why error
	if expect > 0 {
		if backAt.IsZero() {
			backAt = now
		}
		switch {
		case alive < expect && now.Sub(backAt) < rejoinWait:
			why = &ErrRejoining{Alive: alive, Before: expect, Since: backAt, Started: fromStart}
		case rayErr == nil:
			expect, backAt, fromStart = 0, time.Time{}, false // back, or waited long enough
		}
	}
	if record {
		l.expect, l.backAt, l.fromStart = expect, backAt, fromStart
		if expect == 0 && rayErr == nil {
			l.gpuNodes = alive
		}
	}
	return why
}

// loadGPUNodes takes, once per process, the count of GPU nodes an earlier process last saw healthy as the count
// before an outage: mvp's start is a return to Ray, which may still be coming back (both start together in the
// head container), so nothing is admitted until as many nodes are alive, for at most rejoinWait.
func (l *Loop) loadGPUNodes(ctx context.Context) {
	if l.Nodes == nil || l.nodesLoaded {
		return
	}
	n, err := l.Nodes.GPUNodesSeen(ctx)
	if err != nil {
		l.Logger.Error("read the GPU nodes last seen", "err", err)
		return
	}
	known, most, err := l.Nodes.GPUNodesKnown(ctx)
	if err != nil {
		// Only the shapes of nodes that are down are missing: such a gang says never_fits until they are back.
		l.Logger.Error("read the GPU nodes seen alive", "err", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodesLoaded, l.nodesSaved = true, n
	if n > 0 && l.gpuNodes == 0 && l.expect == 0 {
		l.gpuNodes, l.expect, l.fromStart = n, n, true
	}
	// What an earlier process saw alive (withDown): a node that died before this one started, or while it was
	// down, is known by its shape.
	for _, node := range known {
		if _, ok := l.nodesAlive[node.ID]; !ok {
			if l.nodesAlive == nil {
				l.nodesAlive = map[string]mvp.Node{}
			}
			l.nodesAlive[node.ID] = node
		}
	}
	l.mostGPUNodes = max(l.mostGPUNodes, most)
}

// saveKnownNodes records the GPU nodes seen alive and the most seen at once (withDown's) when they changed, so
// that a restarted mvp knows the nodes that are down. A record that fails is logged, and tried again by the next
// pass; the error is returned too.
func (l *Loop) saveKnownNodes(ctx context.Context, now time.Time) error {
	if l.Nodes == nil {
		return nil
	}
	l.saveMu.Lock()
	defer l.saveMu.Unlock()
	l.mu.Lock()
	if !l.knownDirty || !l.nodesLoaded {
		l.mu.Unlock()
		return nil
	}
	nodes := make([]mvp.Node, 0, len(l.nodesAlive))
	for _, n := range l.nodesAlive {
		nodes = append(nodes, n)
	}
	most := l.mostGPUNodes
	l.knownDirty = false
	l.mu.Unlock()
	slices.SortFunc(nodes, func(a, b mvp.Node) int { return strings.Compare(a.ID, b.ID) })
	if err := l.Nodes.RecordGPUNodesKnown(ctx, nodes, most, now); err != nil {
		l.Logger.Error("record the GPU nodes seen alive", "gpu_nodes", len(nodes), "err", err)
		l.mu.Lock()
		l.knownDirty = true // the next pass tries again
		l.mu.Unlock()
		return err
	}
	return nil
}

// withDown returns view with Down set: the GPU nodes this process (or, by Nodes' record, an earlier one) saw alive
// that Ray now lists as dead, with the
// totals they had (Ray keeps none for a dead node), at most as many as the alive GPU nodes fall short of the most
// seen alive at once; a node that came back under a new id leaves its old one dead, and is not counted then.
// record is true for the loop's own pass, which keeps what view shows; a reader (Snapshot) only asks. view is not
// changed: a copy is returned when Down is not empty.
func (l *Loop) withDown(view *mvp.ClusterView, record bool) *mvp.ClusterView {
	l.mu.Lock()
	defer l.mu.Unlock()
	alive := 0
	for i := range view.Nodes {
		if n := &view.Nodes[i]; n.Alive && n.Total[ResGPU] > 0 {
			alive++
			if record {
				if l.nodesAlive == nil {
					l.nodesAlive = map[string]mvp.Node{}
				}
				if was, ok := l.nodesAlive[n.ID]; !ok || was.IP != n.IP || !maps.Equal(was.Total, n.Total) || !maps.Equal(was.Labels, n.Labels) {
					l.knownDirty = true
				}
				l.nodesAlive[n.ID] = mvp.Node{ID: n.ID, IP: n.IP, Total: n.Total, Labels: n.Labels}
			}
		}
	}
	if record {
		if alive > l.mostGPUNodes {
			l.mostGPUNodes, l.knownDirty = alive, true
		}
		listed := make(map[string]bool, len(view.Nodes))
		for i := range view.Nodes {
			listed[view.Nodes[i].ID] = true
		}
		for id := range l.nodesAlive {
			if !listed[id] { // gone from Ray's table (its GCS restarted): nothing to wait for
				delete(l.nodesAlive, id)
				l.knownDirty = true
			}
		}
	}
	short := l.mostGPUNodes - alive
	if short <= 0 {
		return view
	}
	// A dead entry at the address of an alive GPU node is most likely that node before it restarted under a new
	// id: the entries at other addresses are taken first.
	aliveAt := map[string]bool{}
	for i := range view.Nodes {
		if n := &view.Nodes[i]; n.Alive && n.Total[ResGPU] > 0 && n.IP != "" {
			aliveAt[n.IP] = true
		}
	}
	var down []mvp.Node
	for _, restarted := range []bool{false, true} {
		for i := len(view.Nodes) - 1; i >= 0 && len(down) < short; i-- {
			if n := &view.Nodes[i]; !n.Alive {
				if seen, ok := l.nodesAlive[n.ID]; ok {
					if n.IP != "" {
						seen.IP = n.IP
					}
					if aliveAt[seen.IP] == restarted {
						down = append(down, seen)
					}
				}
			}
		}
	}
	if len(down) == 0 {
		return view
	}
	c := *view
	c.Down = down
	return &c
}

// saveGPUNodes records the count of GPU nodes of the last healthy pass when it changed.
func (l *Loop) saveGPUNodes(ctx context.Context, now time.Time) {
	if l.Nodes == nil {
		return
	}
	l.mu.Lock()
	n, expect, loaded, saved := l.gpuNodes, l.expect, l.nodesLoaded, l.nodesSaved
	l.mu.Unlock()
	if !loaded || expect > 0 || n == 0 || n == saved {
		return
	}
	if err := l.Nodes.RecordGPUNodesSeen(ctx, n, now); err != nil {
		l.Logger.Error("record the GPU nodes seen", "gpu_nodes", n, "err", err)
		return
	}
	l.mu.Lock()
	l.nodesSaved = n
	l.mu.Unlock()
}

// unfollowedEvery is how often the loop lists Ray's jobs (a list reads every job Ray keeps) for jobs of its own
// that it does not follow.
const unfollowedEvery = 10 * time.Minute

// checkUnfollowed lists Ray's jobs, at the first pass that follows every live attempt and every unfollowedEvery
// after, and logs once each live job whose metadata names this database (Instance) but that no live attempt in
// the database is: a database restored from a copy older than the job, or rows lost. Such a job holds GPUs outside
// mvp's admission; mvp does not stop it (it cannot tell what it is for), the operator can.
func (l *Loop) checkUnfollowed(ctx context.Context, now time.Time) {
	if l.Instance == "" || l.Jobs == nil {
		return
	}
	var looked map[string]bool // the held jobs this pass looked at: the listing below does not look again
	l.mu.Lock()
	var held []*mvp.JobInfo
	for _, h := range l.heldLate {
		held = append(held, h.job)
	}
	l.mu.Unlock()
	for _, j := range held {
		l.stopClosed(ctx, now, j)
		if looked == nil {
			looked = map[string]bool{}
		}
		looked[j.SubmissionID] = true
	}
	l.mu.Lock()
	due := l.lastUnfollowed.IsZero() || now.Sub(l.lastUnfollowed) >= unfollowedEvery
	if due {
		l.lastUnfollowed = now
	}
	l.mu.Unlock()
	if !due {
		return
	}
	jobs, err := l.Jobs.ListJobs(ctx)
	if err != nil {
		l.Logger.Warn("list Ray's jobs for jobs mvp does not follow; will try again", "err", err)
		return
	}
	active, err := l.Store.Active(ctx) // read after the list: a job submitted meanwhile is in it
	if err != nil {
		l.Logger.Error("load active tasks", "err", err)
		return
	}
	followed := make(map[string]bool, len(active))
	for _, t := range active {
		if a := t.Latest(); a != nil {
			followed[a.RaySubmissionID] = true
		}
	}
	for _, j := range jobs {
		if j == nil || j.Metadata[mvp.MetaInstance] != l.Instance || j.Status.Terminal() || followed[j.SubmissionID] ||
			looked[j.SubmissionID] {
			continue
		}
		if l.stopClosed(ctx, now, j) {
			continue
		}
		if l.firstTime(&l.unfollowedWarned, j.SubmissionID) {
			l.Logger.Warn("a Ray job submitted by this mvp runs, but its database does not follow it (restored from an "+
				"older copy?): it holds its GPUs outside mvp's admission; stop it with `ray job stop` if it should not run",
				"submission_id", j.SubmissionID, "task_id", j.Metadata["task_id"], "ray_status", j.Status)
		}
	}
}

// stopClosed stops job j, which this mvp submitted and does not follow, when its database holds j's attempt as
// closed: a POST whose answer was lost reached Ray only after mvp had given the attempt up (a cancel landed and the
// submit grace passed with no job in Ray). The job runs what its user canceled, on GPUs mvp counts free. It reports
// whether j was such a job. A job whose task or attempt the database does not know (restored from an older copy)
// is not stopped: mvp cannot tell what it is for.
func (l *Loop) stopClosed(ctx context.Context, now time.Time, j *mvp.JobInfo) bool {
	id := j.Metadata["task_id"]
	if id == "" {
		return false
	}
	t, err := l.Store.GetTask(ctx, id)
	if err != nil {
		if errors.Is(err, mvp.ErrNotFound) {
			l.release(j)
		}
		return false // not known (or not readable now: the next listing, or pass for a held job, looks again)
	}
	var a *mvp.Attempt
	for _, x := range t.Attempts {
		if x.RaySubmissionID == j.SubmissionID {
			a = x
		}
	}
	if a == nil || (!a.RayStatus.Terminal() && a.EndTime == nil) {
		l.release(j)
		return false
	}
	info, err := l.Ray.GetJob(ctx, j.SubmissionID)
	if err != nil {
		return l.isHeld(j.SubmissionID) // a held job is looked at again at the next pass
	}
	if info.Status.Terminal() {
		l.release(j) // ended since the listing: nothing to stop
		return true
	}
	if StopTooSoon(l.Build, t, &mvp.Attempt{No: a.No, RayStatus: info.Status,
		RunningAt: l.hold(j, info.Status, now)}, now) {
		// A shell that may not have started its driver yet: a stop now could miss it. Held, and looked at again
		// at every pass.
		return true
	}
	why := fmt.Sprintf("the Ray job of attempt %d appeared after mvp had closed the attempt (%s): a submission "+
		"whose answer was lost reached Ray late; stopped by mvp", a.No, a.RayStatus)
	l.Logger.Warn("stopping a Ray job of an attempt mvp had closed", "task_id", t.ID, "submission_id", j.SubmissionID,
		"task_state", t.State)
	if err := l.askStop(ctx, j.SubmissionID, true); err != nil {
		l.Logger.Warn("stop a job of a closed attempt; will try again at the next pass", "task_id", t.ID,
			"submission_id", j.SubmissionID, "err", err)
		l.hold(j, info.Status, now)
		return true
	}
	l.release(j)
	if l.firstTime(&l.unfollowedWarned, j.SubmissionID) {
		b, _ := json.Marshal(map[string]any{"submission_id": j.SubmissionID, "attempt_no": a.No, "reason": why})
		if err := l.Store.AddEvent(ctx, &mvp.Event{TaskID: t.ID, TS: now, Type: mvp.EventStopRequested, Payload: b}); err != nil {
			l.Logger.Error("record the stop of a job of a closed attempt", "task_id", t.ID, "err", err)
		}
	}
	return true
}

// heldJob is a job of a closed attempt whose stop stopClosed holds back: the job as the listing gave it, and when
// this mvp first saw it RUNNING (zero while it has not).
type heldJob struct {
	job     *mvp.JobInfo
	running time.Time
}

// hold notes that job j (whose status is now st) is held by stopClosed, and returns when this mvp first saw it
// RUNNING (nil while it has not).
func (l *Loop) hold(j *mvp.JobInfo, st mvp.RayStatus, now time.Time) *time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.heldLate == nil {
		l.heldLate = map[string]*heldJob{}
	}
	h := l.heldLate[j.SubmissionID]
	if h == nil {
		h = &heldJob{job: j}
		l.heldLate[j.SubmissionID] = h
	}
	if st == mvp.RayRunning && h.running.IsZero() {
		h.running = now
	}
	if h.running.IsZero() {
		return nil
	}
	at := h.running
	return &at
}

// release notes that job j is held no more (stopped, ended, or not a job to stop).
func (l *Loop) release(j *mvp.JobInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.heldLate, j.SubmissionID)
}

// isHeld reports whether stopClosed holds back the stop of the job with submission id sid.
func (l *Loop) isHeld(sid string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heldLate[sid] != nil
}

// firstTime reports whether key is new to the set *m (made on first use), and adds it: what is logged once per
// attempt or job.
func (l *Loop) firstTime(m *map[string]bool, key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if *m == nil {
		*m = map[string]bool{}
	}
	if (*m)[key] {
		return false
	}
	(*m)[key] = true
	return true
}

// waitsPerWrite is how many Waits one request to the store carries; up to waitWritesInFlight such requests are
// in flight at once, so that their commits can overlap with the API's writes.
const (
	waitsPerWrite      = 64
	waitWritesInFlight = 4
)

// applyWaits writes waits with ApplyAll, in chunks, each stamped when it is written.
func (l *Loop) applyWaits(ctx context.Context, waits []*Wait) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, waitWritesInFlight)
	for len(waits) > 0 {
		chunk := waits[:min(len(waits), waitsPerWrite)]
		waits = waits[len(chunk):]
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			cs := make([]mvp.Change, len(chunk))
			now := l.Clock.Now()
			for i, w := range chunk {
				cs[i] = waitChange(now, w)
			}
			errs, err := l.Store.ApplyAll(ctx, cs)
			if err != nil {
				l.Logger.Error("apply waits", "waits", len(chunk), "err", err) // the next pass decides them again
				return
			}
			for i, w := range chunk {
				l.applied(w, errs[i])
			}
		}()
	}
	wg.Wait()
}

// waitChange is what a Wait writes: the task waits (PENDING_RESOURCES) with its reason.
func waitChange(now time.Time, a *Wait) mvp.Change {
	reason := a.Reason
	return mvp.Change{TaskID: a.Task.ID, From: a.Task.State, To: mvp.StatePendingResources, At: now,
		PendingReason: &reason, EventPayload: map[string]any{"reason": reason, "never_fits": a.Never()}}
}

// applied logs an action that failed, unless the task moved meanwhile (e.g. canceled): then there is nothing to do;
// one cut by mvp's stop is said at INFO.
func (l *Loop) applied(a Action, err error) {
	if errors.Is(err, context.Canceled) {
		l.Logger.Info("action cut by the stop; decided again at the next start", "action", fmt.Sprintf("%T", a), "err", err)
		return
	}
	var said saidError
	if errors.As(err, &said) {
		return // logged where it happened, at the level it deserves
	}
	if err != nil && !errors.Is(err, mvp.ErrConflict) {
		l.Logger.Error("apply action", "action", fmt.Sprintf("%T", a), "err", err)
	}
}

// saidError is an error already logged where it happened (a submission Ray's outage kept from going through, a
// WARN): applied does not log it again. It wraps the error as it is, for errors.Is and errors.As.
type saidError struct{ error }

func (e saidError) Unwrap() error { return e.error }

// Snapshot reads what Decide looks at now, exactly as a tick does: the cluster, the queue and the live attempts
// with how long each gang has been unplaceable. The API's dry run and queue view use it, so that what they show is
// what the loop decides on. When the cluster cannot be read, Cluster is nil and ClusterErr says why. It only reads:
// what the loop keeps between ticks (since when each gang is unplaceable, what it read of progress files) is the
// loop's own.
func (l *Loop) Snapshot(ctx context.Context) (Snapshot, error) {
	view, cerr := l.readForReader(ctx)
	now := l.Clock.Now()
	if cerr != nil {
		view = nil
	}
	l.mu.Lock()
	jd := l.jobsDown
	l.mu.Unlock()
	if jd != nil && view != nil {
		view, cerr = nil, jd // as the loop's own passes see it: nothing is admitted while the job server is down
	}
	if why := l.rejoining(now, view, nil, false); why != nil {
		view, cerr = nil, why // as the loop's own pass sees it: nothing is admitted yet
	}
	if view != nil {
		view = l.withDown(view, false)
	}
	return l.snapshot(ctx, now, view, cerr, false)
}

// readerReadLimit bounds a reading of the cluster made for readers (Snapshot), which runs on after the reader
// that asked for it has stopped waiting, so that the next readers share it instead of asking for another.
const readerReadLimit = 30 * time.Second

// clusterRead is a reading of the cluster under way for readers; done is closed once view and err are set.
type clusterRead struct {
	done chan struct{}
	view *mvp.ClusterView
	err  error
}

// readForReader reads the cluster for a reader, waiting at most ReaderWait: one reading at a time, shared by the
// readers that ask while it is under way (the web page, mvp list and mvp queue at once took a reading each, in line
// behind a hung one). A reading that does not come in time leaves the cluster unknown, saying so; it is not
// abandoned (an abandoned probe reading restarts the probe): the readers that come while it is still under way
// wait on it rather than starting another.
func (l *Loop) readForReader(ctx context.Context) (*mvp.ClusterView, error) {
	wait := l.ReaderWait
	if wait <= 0 {
		wait = 3 * time.Second
	}
	l.mu.Lock()
	r := l.readerRead
	if r == nil {
		r = &clusterRead{done: make(chan struct{})}
		l.readerRead = r
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readerReadLimit)
			defer cancel()
			v, err := l.Cluster.ReadCluster(rctx)
			l.mu.Lock()
			r.view, r.err = v, err
			l.readerRead = nil
			l.mu.Unlock()
			close(r.done)
		}()
	}
	l.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-r.done:
		return r.view, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("read the cluster: %w", ctx.Err())
	case <-timer.C:
		why := "Ray's GCS may not be answering, or mvp's probe of it is starting"
		l.mu.Lock()
		if l.passStep == StepCluster {
			why += "; the scheduler's pass waits on its own reading too, and admits nothing until it comes"
		}
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: no reading of the cluster came within %s (%s)", mvp.ErrRayUnavailable, wait, why)
	}
}

// snapshot reads what Decide looks at; record is true for the loop's own tick, which updates what the loop keeps
// between ticks, and false for a reader (Snapshot).
func (l *Loop) snapshot(ctx context.Context, now time.Time, view *mvp.ClusterView, cerr error, record bool) (Snapshot, error) {
	queue, err := l.Store.Runnable(ctx)
	if err != nil {
		return Snapshot{}, fmt.Errorf("load queue: %w", err)
	}
	// The dependencies' states are read before the live attempts: a run canceled between the two reads is then
	// still running among the dependencies, or CANCELED in both (Decide holds its after_any dependents while its
	// job stops, stoppingRuns). Read the other way round, it was CANCELED among the dependencies and RUNNING among
	// the live attempts, and its after_any dependent started beside it (TestAfterAnyWaitsForARunCanceledDuringThePass).
	deps, err := l.Store.TaskStates(ctx, DependencyIDs(queue))
	if err != nil {
		return Snapshot{}, fmt.Errorf("load dependencies: %w", err)
	}
	active, err := l.Store.Active(ctx)
	if err != nil {
		return Snapshot{}, fmt.Errorf("load active tasks: %w", err)
	}
	as := l.activeAttempts(now, view, active, record)
	l.fillProgressAt(as, record) // heartbeats (loop_progress.go)
	var usage map[string]float64
	if l.Policy.FairShare {
		if usage, err = l.usage(ctx, now, active); err != nil {
			return Snapshot{}, err
		}
	}
	return Snapshot{Cluster: view, Queue: queue, Active: as, ClusterErr: cerr, Deps: deps, Usage: usage}, nil
}

// UsageEvery is how often the loop reads the attempts again to compute fair share's decayed usage while the same
// tasks are live; in between it reuses the last sums (usage with a half-life of days moves little in a minute, and
// the read covers 20 half-lives of attempts). A task that starts or ends makes the next snapshot read them again.
const UsageEvery = time.Minute

// usage is each owner's decayed GPU-seconds at now, read from the store at most every UsageEvery while the live
// tasks stay the same.
func (l *Loop) usage(ctx context.Context, now time.Time, active []*mvp.Task) (map[string]float64, error) {
	live := make(map[string]bool, len(active))
	for _, t := range active {
		live[t.ID] = true
	}
	l.mu.Lock()
	same := len(live) == len(l.usageLive)
	for id := range live {
		same = same && l.usageLive[id]
	}
	if same && l.usageSums != nil && now.Sub(l.usageAt) < UsageEvery && !now.Before(l.usageAt) {
		u := l.usageSums
		l.mu.Unlock()
		return u, nil
	}
	l.mu.Unlock()
	spans, err := l.Store.UsageSpans(ctx, UsageSince(now, l.Policy.HalfLife))
	if err != nil {
		return nil, fmt.Errorf("load usage: %w", err)
	}
	u := DecayedUsage(now, l.Policy.HalfLife, spans)
	l.mu.Lock()
	l.usageSums, l.usageAt, l.usageLive = u, now, live
	l.mu.Unlock()
	return u, nil
}

// setHealth records the reading's outcome and the backoff; it reports whether Ray's availability changed.
func (l *Loop) setHealth(now time.Time, view *mvp.ClusterView, rayErr error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := &l.health
	h.LastTick = now
	wasOK := h.RayOK || h.RayDownSince == nil
	if rayErr == nil {
		if h.RayDownSince != nil {
			l.lastDownSince = *h.RayDownSince // for the log line of Ray's return (recordOutage)
		}
		h.RayOK, h.RayError, h.RayDownSince = true, "", nil
		l.backoff, l.skipUntil = 0, time.Time{}
	} else {
		l.backoff = l.nextBackoff(l.backoff)
		jitter := time.Duration(rand.Int64N(int64(l.backoff)/5 + 1))
		l.skipUntil = now.Add(l.backoff - l.backoff/10 + jitter)
		if h.RayDownSince == nil {
			since := now
			h.RayDownSince = &since
		}
		h.RayOK, h.RayError = false, outageCause(rayErr)
	}
	if view != nil {
		h.ClusterSource, h.ProbeError = view.Source, view.ProbeError
	} else {
		h.ClusterSource, h.ProbeError = "none", "" // nothing read: the last reading's source is not this one's
	}
	return wasOK != h.RayOK
}

// outageCause is what is said of Ray's absence in every live task's history and in /healthz: the error from Ray's
// unavailability on (its cause), without the call it was noticed on, which names one task's Ray job (another user's,
// perhaps).
func outageCause(err error) string {
	if jd := (*ErrJobServerDown)(nil); errors.As(err, &jd) {
		return jd.Error() // its cause is one already
	}
	if both := (*clusterAndJobsDown)(nil); errors.As(err, &both) {
		// The cluster's reading names no job: said whole (its cause may come before "ray is unavailable").
		return calledURL.ReplaceAllString(both.cluster.Error(), "") + jobsDownToo + outageCause(both.jobs)
	}
	s := err.Error()
	if i := strings.Index(s, mvp.ErrRayUnavailable.Error()); i >= 0 {
		s = s[i:]
	}
	// Go's own error for the call names it too (Get "http://…/api/jobs/<submission id>": …).
	return calledURL.ReplaceAllString(s, "")
}

// clusterAndJobsDown is a pass's failure to read the cluster (the GCS, through the probe, then the dashboard's
// view) and to reach Ray's job server. The cluster's comes first: the dashboard reads the GCS too, and with the GCS
// hung the job server's timeouts alone sent the operator to the dashboard's `address`.
type clusterAndJobsDown struct{ cluster, jobs error }

const jobsDownToo = "; Ray's job server did not answer either: "

func (e *clusterAndJobsDown) Error() string   { return e.cluster.Error() + jobsDownToo + e.jobs.Error() }
func (e *clusterAndJobsDown) Unwrap() []error { return []error{e.cluster, e.jobs} }

// calledURL matches the call and URL that net/http's errors begin with (`Get "http://…": `).
var calledURL = regexp.MustCompile(`\b(Get|Post|Put|Patch|Delete|Head) "[^"]*": `)

// recordOutage writes RAY_UNAVAILABLE / RAY_AVAILABLE in the history of every live task when Ray goes away or
// comes back, so that a user reading a task sees why nothing moved. Both are stamped when Ray's answer (or its
// failure) came, not when the pass began: a pass can wait long on a job server that hangs.
func (l *Loop) recordOutage(ctx context.Context, active []*mvp.Task, rayErr error) {
	now := l.Clock.Now()
	typ, payload := mvp.EventRayAvailable, map[string]any{}
	if rayErr != nil {
		typ, payload = mvp.EventRayUnavailable, map[string]any{"error": outageCause(rayErr)}
		l.Logger.Warn("Ray is unavailable; backing off", "err", rayErr)
	} else {
		l.mu.Lock()
		since := l.lastDownSince
		l.mu.Unlock()
		if since.IsZero() {
			l.Logger.Info("Ray is available again")
		} else {
			l.Logger.Info("Ray is available again", "down_since", since, "down_for", now.Sub(since).Round(time.Second))
		}
	}
	b, _ := json.Marshal(payload)
	for _, t := range active {
		if err := l.Store.AddEvent(ctx, &mvp.Event{TaskID: t.ID, TS: now, Type: typ, Payload: b}); err != nil {
			l.Logger.Error("record outage event", "task_id", t.ID, "err", err)
		}
	}
}

// activeAttempts pairs each live task with its latest attempt and tracks since when its gang is unplaceable. With
// record false it changes nothing the loop keeps (a gang first seen unplaceable counts from now). Without a
// cluster reading it judges no gang and forgets none: not seeing a gang is not seeing it placed.
func (l *Loop) activeAttempts(now time.Time, view *mvp.ClusterView, tasks []*mvp.Task, record bool) []ActiveAttempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stuck == nil {
		l.stuck = map[string]time.Time{}
	}
	seen, live := map[string]bool{}, map[string]bool{}
	var out []ActiveAttempt
	for _, t := range tasks {
		a := t.Latest()
		if a == nil || a.RayStatus.Terminal() {
			continue
		}
		live[a.RaySubmissionID] = true
		aa := ActiveAttempt{Task: t, Attempt: a, Nodes: placedNodes(view, a.RayJobID), PlacedAt: placedAt(view, a.RayJobID, DemandOf(t, l.Policy).Groups, now)}
		if record && a.PlacedAt == nil && !aa.PlacedAt.IsZero() {
			if l.placed == nil {
				l.placed = map[string]time.Time{}
			}
			l.placed[a.RaySubmissionID] = aa.PlacedAt
		}
		if view != nil && a.RayJobID != "" && a.FailureKind == mvp.FailureNone && t.State != mvp.StateCanceled {
			if ray, pending := pendingSince(view, a.RayJobID, a.CreatedAt, now); pending {
				// A reading that says when Ray made the group (the live probe's; the first after a restart may be
				// the dashboard's, which does not) moves the start back to it.
				since, ok := l.stuck[a.RaySubmissionID]
				if !ok || ray.Before(since) {
					since = ray
					if record {
						l.stuck[a.RaySubmissionID] = since
					}
				}
				aa.StuckSince = since
				aa.Infeasible, aa.Rescheduling = unplacedKinds(view, a.RayJobID)
				seen[a.RaySubmissionID] = true
			}
		}
		out = append(out, aa)
	}
	if !record {
		return out
	}
	for id := range l.stuck {
		if !seen[id] && (view != nil || !live[id]) {
			delete(l.stuck, id)
		}
	}
	for id := range l.copied {
		if !live[id] {
			delete(l.copied, id)
		}
	}
	for id := range l.placed {
		if !live[id] {
			delete(l.placed, id)
		}
	}
	for id := range l.posted {
		if !live[id] {
			delete(l.posted, id)
		}
	}
	for id := range l.stopAsked {
		if !live[id] {
			delete(l.stopAsked, id)
		}
	}
	for id := range l.runningSeen {
		if !live[id] {
			delete(l.runningSeen, id)
		}
	}
	return out
}

// seenRunning is attempt a with its RunningAt no later than when this mvp first saw it RUNNING (runningSeen).
func (l *Loop) seenRunning(a *mvp.Attempt, now time.Time) *mvp.Attempt {
	if a.RayStatus != mvp.RayRunning {
		return a
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runningSeen == nil {
		l.runningSeen = map[string]time.Time{}
	}
	seen, ok := l.runningSeen[a.RaySubmissionID]
	if !ok {
		seen = now
		l.runningSeen[a.RaySubmissionID] = now
	}
	if a.RunningAt != nil && !seen.Before(*a.RunningAt) {
		return a
	}
	c := *a
	c.RunningAt = &seen
	return &c
}

// askStop asks Ray to stop job id. Asked again while Ray still reports the job live (its stop wait runs), it asks
// at most once per StopResend; now asks at once (a new judgement, a cancel that landed during the submit). A
// failed ask, and one Ray answered "no such job" (it may still appear), is made again at the next pass; the
// latter is not an error.
func (l *Loop) askStop(ctx context.Context, id string, now bool) error {
	at := l.Clock.Now()
	l.mu.Lock()
	if last, ok := l.stopAsked[id]; ok && !now && at.Sub(last) < StopResend {
		l.mu.Unlock()
		return nil
	}
	if l.stopAsked == nil {
		l.stopAsked = map[string]time.Time{}
	}
	l.stopAsked[id] = at
	l.mu.Unlock()
	err := l.Ray.StopJob(ctx, id)
	if err != nil {
		// Asked again at the next pass: a failed ask, or a job Ray does not know yet (a POST that may still land).
		l.mu.Lock()
		delete(l.stopAsked, id)
		l.mu.Unlock()
	}
	if err != nil && !errors.Is(err, mvp.ErrJobNotFound) {
		return err
	}
	return nil
}

// pendingSince reports whether the job has a placement group waiting to be placed, PENDING or RESCHEDULING (its node
// died), and since when, at mvp's first look at it: when Ray took the creation request of its earliest PENDING group,
// so that a restart of mvp does not begin the gang wait again (a RESCHEDULING group's creation was its first
// placement: alone, it waits from now, and the caller keeps the first look's time). It is never before floor (the
// attempt's record: the head's clock may differ from mvp's) nor after now, and now when the view does not say (the
// dashboard's fallback view).
func pendingSince(v *mvp.ClusterView, jobID string, floor, now time.Time) (since time.Time, pending bool) {
	var first int64
	for _, g := range v.Groups {
		if g.CreatorJobID != jobID || (g.State != "PENDING" && g.State != "RESCHEDULING") {
			continue
		}
		pending = true
		if g.State == "PENDING" && g.CreatedNs > 0 && (first == 0 || g.CreatedNs < first) {
			first = g.CreatedNs
		}
	}
	if !pending || first == 0 {
		return now, pending
	}
	since = time.Unix(0, first)
	if since.Before(floor) {
		since = floor
	}
	if since.After(now) {
		since = now
	}
	return since, true
}

// placedAt is when the job's gang of groups placement groups had been placed: the groups-th earliest placement of
// its groups, placed or removed since, as the live probe reads it (no later than now); zero when fewer were placed,
// or the reading does not say. A group made later in the run (an evaluation's) is not the gang's: taking the last
// placement, such a group started the run's max_runtime_s again.
func placedAt(v *mvp.ClusterView, jobID string, groups int, now time.Time) time.Time {
	if v == nil || jobID == "" || groups <= 0 {
		return time.Time{}
	}
	var at []int64
	for i := range v.Groups {
		// A REMOVED group keeps its placement (ray.Probe keeps it a while): its run ended, and judged from
		// running_at again the driver was stopped as it exited (MAX_RUNTIME_EXCEEDED on a finished run; e2e).
		if g := &v.Groups[i]; g.CreatorJobID == jobID && g.PlacedNs > 0 {
			at = append(at, g.PlacedNs)
		}
	}
	if len(at) < groups {
		return time.Time{}
	}
	slices.Sort(at)
	if t := time.Unix(0, at[groups-1]); t.Before(now) {
		return t
	}
	return now
}

// placedNodes lists the node of each of the job's placed groups, when the view knows them all; nil otherwise.
func placedNodes(v *mvp.ClusterView, jobID string) []string {
	if v == nil || jobID == "" {
		return nil
	}
	var out []string
	for i := range v.Groups {
		g := &v.Groups[i]
		if g.CreatorJobID != jobID || !g.Placed() {
			continue
		}
		if g.Node == "" {
			return nil
		}
		out = append(out, g.Node)
	}
	return out
}

// unplacedKinds reports whether Ray says one of the job's pending groups can never be placed, and whether one of
// its groups lost its node and waits to be placed again.
func unplacedKinds(v *mvp.ClusterView, jobID string) (infeasible, rescheduling bool) {
	for _, g := range v.Groups {
		if g.CreatorJobID != jobID {
			continue
		}
		infeasible = infeasible || g.State == "PENDING" && g.SchedulingState == "INFEASIBLE"
		rescheduling = rescheduling || g.State == "RESCHEDULING"
	}
	return infeasible, rescheduling
}

func (l *Loop) apply(ctx context.Context, now time.Time, a Action) error {
	switch a := a.(type) {
	case *Wait:
		return l.Store.Apply(ctx, waitChange(now, a))
	case Submit:
		return l.submit(ctx, now, a)
	case Stop:
		return l.stop(ctx, a)
	case DependencyFailed:
		reason := a.Reason
		return l.Store.Apply(ctx, mvp.Change{TaskID: a.Task.ID, From: a.Task.State, To: mvp.StateCanceled, At: now,
			ErrorSummary: &reason, EventType: mvp.EventDependencyFailed,
			EventPayload: map[string]any{"dependency": a.Dependency, "reason": reason}})
	case Expire:
		reason := a.Reason
		return l.Store.Apply(ctx, mvp.Change{TaskID: a.Task.ID, From: a.Task.State, To: mvp.StateFailed, At: now,
			ErrorSummary: &reason, EventPayload: map[string]any{"failure_kind": mvp.FailureMaxQueuedExceeded, "reason": reason}})
	}
	return fmt.Errorf("unknown action %T", a)
}

// stop records the judgement on the attempt (unless already recorded), then asks Ray to stop the job. A failed
// call is returned; Decide emits Stop again on the next pass while Ray reports the job live. A judgement whose
// task or attempt changed since the pass read them (a cancel landed while an earlier action of the pass waited on
// Ray; the attempt moved on) is not written nor acted on: the next pass decides on what is true then, and a
// canceled task is never judged (the cancel stops its job).
func (l *Loop) stop(ctx context.Context, a Stop) error {
	att := *a.Attempt
	if !a.Retry {
		att.FailureKind, att.Message = a.Kind, a.Reason
		err := l.Store.JudgeAttempt(ctx, a.Task.State, a.Attempt.RayStatus, &att, a.Event, map[string]any{
			"reason": a.Reason, "attempt_no": att.No, "failure_kind": a.Kind})
		if errors.Is(err, mvp.ErrConflict) {
			l.Logger.Info("not stopping attempt: its task or attempt changed since the pass read it", "task_id",
				a.Task.ID, "submission_id", att.RaySubmissionID, "failure_kind", a.Kind, "err", err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("record stop of attempt %s: %w", att.RaySubmissionID, err)
		}
		l.Logger.Warn("stopping attempt", "task_id", a.Task.ID, "submission_id", att.RaySubmissionID,
			"failure_kind", a.Kind, "reason", a.Reason)
		l.crash("judged_before_stop")
	}
	if err := l.askStop(ctx, att.RaySubmissionID, !a.Retry); err != nil {
		return fmt.Errorf("stop attempt %s: %w", att.RaySubmissionID, err)
	}
	return nil
}

// submit records the attempt (with its deterministic submission id) before calling Ray, then calls Ray.
func (l *Loop) submit(ctx context.Context, now time.Time, s Submit) error {
	tc := *s.Task // the queue's tasks are shared with the store and later passes: this submission changes its own copy
	t := &tc
	if len(t.SpecJSON) == 0 { // the queue holds no specs (Store.Runnable)
		yml, spec, err := l.Store.TaskSpec(ctx, t.ID)
		if err != nil {
			return fmt.Errorf("read the spec of %s to submit it: %w", t.ID, err)
		}
		t.JobSpecYAML, t.SpecJSON = yml, spec
	}
	payload, err := l.Build(t, s.AttemptNo)
	if err != nil {
		msg := fmt.Sprintf("attempt %d cannot be built, so the task can never be submitted: %v", s.AttemptNo, err)
		l.Logger.Error("build submission", "task_id", t.ID, "attempt_no", s.AttemptNo, "err", err)
		if aerr := l.Store.Apply(ctx, mvp.Change{TaskID: t.ID, From: t.State, To: mvp.StateFailed, At: now,
			ErrorSummary: &msg, EventPayload: map[string]any{"error": msg}}); aerr != nil {
			return fmt.Errorf("fail unbuildable task %s: %w", t.ID, aerr)
		}
		return nil
	}
	kept, ran := l.keptEnd(t, s.AttemptNo, payload.SubmissionID)
	if !ran {
		// The task folder first: a run whose folder cannot be written (shared_root full or read-only) would fail
		// as its own error, with nothing kept of it. It waits instead, and is submitted once the folder can be
		// written.
		if down, err := l.writeFolder(t, s.AttemptNo, payload); err != nil {
			return l.holdForFolder(ctx, now, t, err, down)
		}
	}
	att := &mvp.Attempt{TaskID: t.ID, No: s.AttemptNo, RaySubmissionID: payload.SubmissionID, CreatedAt: now}
	l.crash("queued_to_submitting") // decided and built, QUEUED→SUBMITTING not yet written
	var none *time.Time
	empty := ""
	ev := map[string]any{"submission_id": att.RaySubmissionID, "nodes": s.Nodes}
	if ran {
		ev["already_ran"] = "its end is in the task folder: not sent to Ray again"
	}
	if err := l.Store.Apply(ctx, mvp.Change{TaskID: t.ID, From: t.State, To: mvp.StateSubmitting, At: now,
		NewAttempt: att, NextRunAt: &none, PendingReason: &empty, EventType: mvp.EventSubmit,
		EventPayload: ev}); err != nil {
		return fmt.Errorf("record attempt %s: %w", att.RaySubmissionID, err)
	}
	t.State = mvp.StateSubmitting
	if ran {
		// This attempt ran to its end before, in a life of the database that this one does not remember (restored
		// from an older copy) and Ray no longer has the job (pruned): its end, kept in the task folder, is its end
		// now. Sending it again would run the same work twice under the same submission id.
		l.Logger.Warn("attempt already ran: its end is read from its task folder, not run again (the database is "+
			"older than the run: restored from a copy?)", "task_id", t.ID, "submission_id", att.RaySubmissionID,
			"ray_status", kept.Info.Status)
		return l.conclude(ctx, t, att, kept)
	}
	mvp.ObserverOr(l.Observer).TaskAdmitted(t.Workload)
	l.crash("submitting_before_ray")
	return l.callRay(ctx, t, att, payload, false)
}

// keptEnd reads attempt n's end from the task folder (status.json, written when mvp concluded it, and its kept
// driver log): what Ray said last about a job it may have deleted since. ok is false when the folder holds none
// for this submission id.
func (l *Loop) keptEnd(t *mvp.Task, n int, submissionID string) (r Report, ok bool) {
	info, kind, err := l.Files.ReadResult(t.ID, n)
	if errors.Is(err, taskfs.ErrNotSealed) {
		// Not mvp's (the job can write in its attempt's folder), or from before the seal: not trusted.
		l.Logger.Warn("an attempt's status.json in its task folder is not mvp's (no valid seal): ignored",
			"task_id", t.ID, "attempt_no", n)
	}
	if err != nil || info.SubmissionID != submissionID || !info.Status.Terminal() {
		return Report{}, false
	}
	r.Info, r.Kind = info, kind
	// Its log, when there: the final copy once it was kept, else the last running copy (log_kept stays false).
	if log, err := l.Files.ReadLogTail(t.ID, n, LogTail); err == nil {
		r.Log = log
	}
	return r, true
}

// writeFolder writes what the task folder holds before attempt n is sent: for the first, the jobspec as submitted
// and the effective spec (the database holds both from the moment the task was accepted; the folder is for people
// and tools on the shared disk); for every attempt, its payload and its results folder. down says whether a
// failure is shared_root's as a whole, and why (sharedRootDown, asked once: the health and the task's hold agree).
func (l *Loop) writeFolder(t *mvp.Task, n int, payload *mvp.JobSubmission) (down, err error) {
	if n == 1 {
		err = l.Files.WriteTask(t.ID, []byte(t.JobSpecYAML), t.SpecJSON)
	}
	if err == nil {
		err = l.Files.WriteSubmission(t.ID, n, payload)
	}
	if err != nil {
		down = l.sharedRootDown(err)
	}
	l.mu.Lock()
	l.folderErr = nil
	if down != nil { // one task's own folder in the way is not the service's health
		l.folderErr = fmt.Errorf("a task folder cannot be written on shared_root (%s): %w; free space there or make it "+
			"writable (or set shared_root in dev.yaml); waiting tasks are submitted once it can be", l.Files.Root, down)
	}
	l.mu.Unlock()
	return down, err
}

// folderHold begins the reason of a task held because its folder cannot be written.
const folderHold = "its task folder cannot be written on shared_root"

// OwnFolderHold begins the reason of a task held because its own folder is in the way while shared_root can be
// written: it waits out of the passes until its next_run_at (listed as backing off, with this reason).
const OwnFolderHold = "its own task folder cannot be written"

// heldForOwnFolder reports whether t waits for its own folder (holdForFolder wrote its reason).
func heldForOwnFolder(t *mvp.Task) bool { return strings.HasPrefix(t.PendingReason, OwnFolderHold) }

// endFolderErr forgets the latest task folder's write error once no waiting task is held for its folder (in a pass
// that wrote none): kept until the next write, it left /healthz degraded after the held task was canceled.
func (l *Loop) endFolderErr(queue []*mvp.Task) {
	for _, t := range queue {
		if strings.HasPrefix(t.PendingReason, folderHold) {
			return
		}
	}
	l.mu.Lock()
	l.folderErr = nil
	l.mu.Unlock()
}

// holdForFolder leaves a task whose folder cannot be written (err) waiting. While shared_root as a whole cannot be
// (down, why), every task the policy starts is held so, and the next pass that admits it tries again; the reason is
// written only when it changes. Otherwise the task's own folder is in the way: it waits until its next_run_at,
// one retry interval on, out of the passes (picked by each, it held the GPUs it could not use from the tasks
// behind it), and a renewal of the same hold writes no event.
func (l *Loop) holdForFolder(ctx context.Context, now time.Time, t *mvp.Task, err, down error) error {
	c := mvp.Change{TaskID: t.ID, From: t.State, To: mvp.StatePendingResources, At: now}
	var reason string
	if down != nil {
		reason = fmt.Sprintf(folderHold+" (%s): %v; free space there or make it "+
			"writable (or set shared_root in dev.yaml); it is submitted once the folder can be written", l.Files.Root, down)
		if t.State == mvp.StatePendingResources && t.PendingReason == reason {
			return nil
		}
	} else {
		// shared_root can be written: this task's own folder is in the way. Its runs can write there, and one may
		// have left something where the next attempt's files go; it waited as if shared_root were full, with the
		// whole service's health degraded.
		reason = fmt.Sprintf(OwnFolderHold+" (%v), while shared_root can: an earlier run of it may have left "+
			"something in the way; remove that, or cancel the task; it is tried again every %s", err, l.folderRetry())
		next := now.Add(l.folderRetry())
		nextp := &next
		c.NextRunAt = &nextp
		c.Unrecorded = t.State == mvp.StatePendingResources && t.PendingReason == reason
	}
	if !c.Unrecorded {
		l.Logger.Error("task folder cannot be written; the task waits", "task_id", t.ID, "err", err)
	}
	c.PendingReason, c.EventPayload = &reason, map[string]any{"reason": reason}
	if aerr := l.Store.Apply(ctx, c); aerr != nil && !errors.Is(aerr, mvp.ErrConflict) {
		return fmt.Errorf("hold %s for its folder: %w", t.ID, aerr)
	}
	return nil
}

// folderRetry is how long a task whose own folder is in the way waits before it is tried again: the retry
// interval of attempts that lacked resources (a minute when none is set).
func (l *Loop) folderRetry() time.Duration {
	if l.Retry.RetryInterval > 0 {
		return l.Retry.RetryInterval
	}
	return time.Minute
}

// callRay submits payload; on an unclear outcome it looks the job up before anything else. inGrace says that an
// earlier POST of this attempt may still become a job (MayStillAppear): the attempt is then not failed for a
// submission that cannot be made now.
func (l *Loop) callRay(ctx context.Context, t *mvp.Task, att *mvp.Attempt, payload *mvp.JobSubmission, inGrace bool) error {
	sent, secretValues, err := l.withSecrets(ctx, t, payload) // only what goes to Ray holds them (loop_secrets.go)
	if err != nil {
		if !secretsVerdict(err) {
			// The database could not be read (or the pass was cut): nothing is wrong with the task, and Ray was not
			// called. The attempt stays SUBMITTING and is sent at a later pass, with the same id.
			l.Logger.Warn("the task's secrets could not be read; will try again", "task_id", t.ID,
				"submission_id", att.RaySubmissionID, "err", err)
			return fmt.Errorf("read the secrets of attempt %s: %w", att.RaySubmissionID, err)
		}
		if inGrace {
			return l.holdInGrace(t, att, "attempt cannot be submitted again", err.Error())
		}
		return l.failSubmitting(ctx, t, att, err)
	}
	// The POST may become a job even if its answer is lost: the submit grace counts from it (LastPost). Set before
	// the call, so that a pass that looks at the attempt meanwhile holds it too.
	l.mu.Lock()
	if l.posted == nil {
		l.posted = map[string]time.Time{}
	}
	before, hadBefore := l.posted[att.RaySubmissionID]
	l.posted[att.RaySubmissionID] = l.Clock.Now()
	l.mu.Unlock()
	err = l.Ray.SubmitJob(ctx, sent)
	l.crash("submitting_after_ray")
	if err != nil && !errors.Is(err, mvp.ErrJobExists) && ctx.Err() == nil && !errors.Is(err, mvp.ErrRayUnavailable) {
		// An answer (Ray's refusal, or mvp's side failing before anything was sent): this POST made no job, so it
		// does not move the grace. Moved, a resubmit refused at every pass was held SUBMITTING for ever.
		l.mu.Lock()
		if hadBefore {
			l.posted[att.RaySubmissionID] = before
		} else {
			delete(l.posted, att.RaySubmissionID)
		}
		l.mu.Unlock()
	}
	switch {
	case err == nil || errors.Is(err, mvp.ErrJobExists):
		return l.markSubmitted(ctx, t, att)
	case ctx.Err() != nil:
		// mvp is stopping (or the pass ran out of time) with the answer not read: no verdict of Ray's. The attempt
		// stays SUBMITTING; the next pass, or start, looks its job up before it sends it again with the same id.
		return fmt.Errorf("submit attempt %s: %w", att.RaySubmissionID, ctx.Err())
	case errors.Is(err, mvp.ErrRayUnavailable):
		if _, gerr := l.Ray.GetJob(ctx, att.RaySubmissionID); gerr == nil {
			return l.markSubmitted(ctx, t, att)
		}
		l.Logger.Warn("submit did not go through; will look again next tick", "task_id", t.ID,
			"submission_id", att.RaySubmissionID, "err", redact(err.Error(), secretValues))
		return saidError{fmt.Errorf("submit attempt %s: %w", att.RaySubmissionID, redactedError{err, secretValues})}
	case errors.Is(err, mvp.ErrSubmitInfra):
		// Nothing reached Ray: not Ray's refusal, but mvp's side failing (Unprepared decides).
		text := redact(err.Error(), secretValues)
		if inGrace {
			return l.holdInGrace(t, att, "submission could not be prepared", text)
		}
		l.Logger.Error("submission could not be prepared", "task_id", t.ID, "submission_id", att.RaySubmissionID, "err", text)
		full, gerr := l.Store.GetTask(ctx, t.ID)
		if gerr != nil {
			return fmt.Errorf("read history of %s: %w", t.ID, gerr)
		}
		o := Unprepared(l.Clock.Now(), att, text, HistoryOf(full, att.No), l.Retry)
		return l.applyOutcome(ctx, t, att.RayStatus, o, &mvp.JobInfo{SubmissionID: att.RaySubmissionID, Status: o.Attempt.RayStatus, Message: o.Attempt.Message})
	default:
		// Ray's answer might echo the payload: no secret value goes into the task's record.
		text := redact(err.Error(), secretValues)
		if inGrace {
			return l.holdInGrace(t, att, "resubmit refused", text) // and a proxy's 429 or 408 is no verdict on the job
		}
		msg := "Ray refused the submission: " + text
		up, now := *att, l.Clock.Now()
		up.RayStatus, up.FailureKind, up.Message, up.EndTime = mvp.RayFailed, mvp.FailureUserError, cut(text), &now
		if err := l.Store.Apply(ctx, mvp.Change{TaskID: t.ID, From: mvp.StateSubmitting, To: mvp.StateFailed,
			At: now, AttemptUpdate: &up, ErrorSummary: &msg, EventPayload: map[string]any{"error": msg}}); err != nil {
			return err
		}
		l.logEnd(t, &up, mvp.StateFailed)
		return nil
	}
}

// holdInGrace leaves an attempt that cannot be submitted again as it is while an earlier POST of it may still
// become its job (MayStillAppear): failing or retrying it now could leave that job running unfollowed. The pass
// after the grace decides.
func (l *Loop) holdInGrace(t *mvp.Task, a *mvp.Attempt, what, why string) error {
	l.Logger.Warn(what+"; following the attempt until the submit grace is over", "task_id", t.ID,
		"submission_id", a.RaySubmissionID, "err", why)
	return nil
}

func (l *Loop) markSubmitted(ctx context.Context, t *mvp.Task, att *mvp.Attempt) error {
	up := *att
	up.RayStatus = mvp.RayPending
	err := l.Store.Apply(ctx, mvp.Change{TaskID: t.ID, From: mvp.StateSubmitting, To: mvp.StateSubmitted,
		At: l.Clock.Now(), AttemptUpdate: &up, EventPayload: map[string]any{"submission_id": att.RaySubmissionID}})
	if err == nil {
		l.Logger.Info("attempt submitted to Ray", "task_id", t.ID, "submission_id", att.RaySubmissionID,
			"attempt_no", att.No, "workload", t.Workload, "nnodes", t.NNodes, "n_gpus_per_node", t.GPUsPerNode)
	}
	if errors.Is(err, mvp.ErrConflict) {
		// Canceled while the call was in flight: the job must not run (a shell's is stopped by sync once it has
		// started its command: StopTooSoon).
		if StopTooSoon(l.Build, t, &up, l.Clock.Now()) {
			return nil
		}
		if serr := l.askStop(ctx, att.RaySubmissionID, true); serr != nil {
			return fmt.Errorf("stop canceled attempt %s: %w", att.RaySubmissionID, serr)
		}
		return nil
	}
	return err
}

// sync follows one live task's latest attempt in Ray by its submission id; what an ended or vanished attempt
// means for its task is Conclude's decision.
func (l *Loop) sync(ctx context.Context, t *mvp.Task) error {
	a := t.Latest()
	if a == nil {
		return nil
	}
	info, err := l.Ray.GetJob(ctx, a.RaySubmissionID)
	if errors.Is(err, mvp.ErrJobNotFound) {
		if r, ok := l.keptEnd(t, a.No, a.RaySubmissionID); ok {
			return l.conclude(ctx, t, l.withPlacement(a), r)
		}
		l.mu.Lock()
		last := laterOf(l.posted[a.RaySubmissionID], l.started)
		l.mu.Unlock()
		return l.conclude(ctx, t, l.withPlacement(a), Report{LastPost: last})
	}
	if err != nil {
		return fmt.Errorf("follow attempt %d: %w", a.No, err) // the client names the job
	}
	if info.Status.Terminal() {
		// The job ended: keep its log in the task folder first, so that it outlives Ray's copy. A failed fetch
		// is retried later (keepLogs), and the job stays in Ray until it succeeds or the tries are used up.
		r := Report{Info: info}
		if info.Status == mvp.RaySucceeded || t.State == mvp.StateCanceled {
			// Conclude does not read the log of a run that succeeded or was canceled: it is kept after this
			// pass's actions (keepLogs), so that the download is not on the way from freed GPUs to the next
			// submission.
			l.keepLogsSoon()
		} else {
			node := info.DriverNodeID
			if node == "" {
				node = a.DriverNodeID
			}
			logs, err := l.keepLog(ctx, t.ID, a.No, a.RaySubmissionID, node, LogTail)
			var de *taskfs.DiskError
			switch {
			case errors.As(err, &de):
				l.Logger.Error("write driver log; will try again", "task_id", t.ID, "err", err)
				r.SharedRootUnwritable = true
				// Ray's message holds only the log's last lines (often lines Ray forwarded from actors after the
				// exception): read the log's end for the verdict, without keeping it (keepLogs tries again).
				if tail, err := l.readLogTail(ctx, a.RaySubmissionID, node); err == nil {
					r.Log = tail
				}
			case errors.Is(err, errLogNodeQuiet):
				l.Logger.Debug("fetch driver log; will try again", "task_id", t.ID, "err", err) // noteLogRead said it once
			case err != nil:
				l.Logger.Warn("fetch driver log; will try again", "task_id", t.ID, "submission_id", a.RaySubmissionID, "err", err)
			default:
				r.Log, r.LogKept = logs, true
			}
		}
		l.crash("final_log_fetch")
		l.syncProgress(ctx, t, a, true) // its last word (loop_progress.go)
		return l.conclude(ctx, t, l.withPlacement(a), r)
	}

	up := *a
	up.RayStatus, up.RayJobID, up.DriverNodeID = info.Status, info.JobID, info.DriverNodeID
	up.StartTime, up.EndTime = msTime(info.StartTime), msTime(info.EndTime)
	if info.DriverExitCode != nil {
		up.ExitCode = info.DriverExitCode
	}
	now := l.Clock.Now()
	if info.Status == mvp.RayRunning && a.RayStatus != mvp.RayRunning && up.RunningAt == nil {
		// Ray's start_time is the submission's: the run's clocks (max_runtime_s, the heartbeat) start here.
		up.RunningAt = &now
	}
	up.PlacedAt = l.withPlacement(a).PlacedAt
	if t.State == mvp.StateCanceled && !StopTooSoon(l.Build, t, l.seenRunning(&up, now), now) {
		// Canceled, and the job is (still, or late) alive: stop it, whenever it appeared (a shell's, once it has
		// started its command: StopTooSoon).
		if err := l.askStop(ctx, a.RaySubmissionID, false); err != nil {
			return fmt.Errorf("stop canceled attempt %s: %w", a.RaySubmissionID, err)
		}
	}
	to := t.State
	if t.State == mvp.StateSubmitting {
		to = mvp.StateSubmitted
	}
	if info.Status == mvp.RayRunning && (t.State == mvp.StateSubmitting || t.State == mvp.StateSubmitted) {
		to = mvp.StateRunning
	}
	if to != t.State {
		if to == mvp.StateRunning {
			l.crash("submitted_to_running")
		}
		return l.Store.Apply(ctx, mvp.Change{TaskID: t.ID, From: t.State, To: to, At: now, AttemptUpdate: &up,
			EventPayload: map[string]any{"ray_status": info.Status}})
	}
	if info.Status == mvp.RayRunning {
		l.copyRunningLog(ctx, t, a, now)
		l.syncProgress(ctx, t, a, false) // loop_progress.go
	}
	if attemptChanged(a, &up) {
		// The event names what changed beside the status: Ray reports a job RUNNING before it gives its job id, and a
		// second "ray_status RUNNING" with nothing else read as a repeated step.
		payload := map[string]any{"ray_status": info.Status}
		if up.RayJobID != a.RayJobID {
			payload["ray_job_id"] = up.RayJobID
		}
		if up.DriverNodeID != a.DriverNodeID {
			payload["driver_node_id"] = up.DriverNodeID
		}
		if up.PlacedAt != nil && a.PlacedAt == nil {
			payload["placed_at"] = up.PlacedAt
		}
		return l.Store.UpdateAttempt(ctx, a.RayStatus, &up, mvp.EventRayStatusSync, payload)
	}
	return nil
}

// withPlacement is a with the gang's placement this process read (l.placed) when its row has none yet: an
// attempt that ends before the sync that would write it keeps it in its end's write. a itself is not changed.
func (l *Loop) withPlacement(a *mvp.Attempt) *mvp.Attempt {
	if a.PlacedAt != nil {
		return a
	}
	l.mu.Lock()
	p, ok := l.placed[a.RaySubmissionID]
	l.mu.Unlock()
	if !ok {
		return a
	}
	c := *a
	c.PlacedAt = &p
	return &c
}

// conclude asks Conclude what an ended or vanished attempt means and applies it.
func (l *Loop) conclude(ctx context.Context, t *mvp.Task, a *mvp.Attempt, r Report) error {
	now := l.Clock.Now()
	h := History{}
	if r.Info == nil || r.Info.Status != mvp.RaySucceeded {
		full, err := l.Store.GetTask(ctx, t.ID)
		if err != nil {
			return fmt.Errorf("read history of %s: %w", t.ID, err)
		}
		h = HistoryOf(full, a.No)
	}
	o := Conclude(now, t, a, r, h, l.Retry)
	switch o.Verdict {
	case Follow:
		return nil
	case Resubmit:
		payload, err := l.Build(t, a.No)
		if err != nil {
			if MayStillAppear(now, a, r.LastPost, l.Retry) {
				return l.holdInGrace(t, a, "attempt cannot be built again", err.Error())
			}
			// As for a first submission that cannot be built: the task can never be submitted.
			return l.failSubmitting(ctx, t, a, fmt.Errorf("it cannot be built again: %w", err))
		}
		// Every POST, a resubmit after a restart too, has its payload in the task folder and its results folder
		// made; until they can be written the attempt stays SUBMITTING and this is tried again at the next pass.
		if err := l.Files.WriteSubmission(t.ID, a.No, payload); err != nil {
			return fmt.Errorf("resubmit attempt %s: its task folder cannot be written on shared_root: %w", a.RaySubmissionID, err)
		}
		l.Logger.Info("resubmitting attempt left in SUBMITTING", "task_id", t.ID, "submission_id", a.RaySubmissionID)
		return l.callRay(ctx, t, a, payload, MayStillAppear(now, a, r.LastPost, l.Retry))
	}
	info := r.Info
	if info == nil {
		info = &mvp.JobInfo{SubmissionID: a.RaySubmissionID, Status: o.Attempt.RayStatus, Message: o.Attempt.Message}
	}
	return l.applyOutcome(ctx, t, a.RayStatus, o, info)
}

// applyOutcome writes a Close or Transition outcome of t's attempt, whose Ray status was read as from (info is
// Ray's view of it, kept with its result).
func (l *Loop) applyOutcome(ctx context.Context, t *mvp.Task, from mvp.RayStatus, o Outcome, info *mvp.JobInfo) error {
	now := l.Clock.Now()
	l.writeResult(t, &o.Attempt, info)
	if o.Verdict == Close {
		if err := l.Store.UpdateAttempt(ctx, from, &o.Attempt, o.EventType, o.EventPayload); err != nil {
			return err
		}
		l.logEnd(t, &o.Attempt, t.State)
		return nil
	}
	c := mvp.Change{TaskID: t.ID, From: t.State, To: o.To, At: now, AttemptUpdate: &o.Attempt,
		EventType: o.EventType, EventPayload: o.EventPayload}
	if o.ErrorSummary != "" {
		c.ErrorSummary = &o.ErrorSummary
	}
	if o.To == mvp.StatePendingResources {
		c.NextRunAt, c.PendingReason = &o.NextRunAt, &o.PendingReason
		l.crash("requeue")
	}
	if err := l.Store.Apply(ctx, c); err != nil {
		return err
	}
	l.logEnd(t, &o.Attempt, o.To)
	return nil
}

// logEnd logs an attempt's end once it is recorded, so that the service's log holds, for a task id, when each of
// its attempts went to Ray and how it ended (the events hold the rest); state is the task's state after it.
func (l *Loop) logEnd(t *mvp.Task, a *mvp.Attempt, state mvp.State) {
	kind := string(a.FailureKind)
	if a.FailureKind == mvp.FailureNone {
		kind = "none" // as mvp_attempts_ended_total names it
	}
	l.Logger.Info("attempt ended", "task_id", t.ID, "submission_id", a.RaySubmissionID, "attempt_no", a.No,
		"ray_status", a.RayStatus, "failure_kind", kind, "state", state)
}

func (l *Loop) writeResult(t *mvp.Task, a *mvp.Attempt, info *mvp.JobInfo) {
	if err := l.Files.WriteResult(t.ID, a.No, info, a.FailureKind); err != nil {
		l.Logger.Error("write attempt status", "task_id", t.ID, "err", err)
	}
}

func (l *Loop) crash(point string) {
	if l.Crash != nil {
		l.Crash(point)
	}
}

func attemptChanged(a, b *mvp.Attempt) bool {
	return a.RayStatus != b.RayStatus || a.RayJobID != b.RayJobID || a.DriverNodeID != b.DriverNodeID ||
		(a.StartTime == nil) != (b.StartTime == nil) || (a.PlacedAt == nil) != (b.PlacedAt == nil)
}

func msTime(ms int64) *time.Time {
	if ms <= 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// copyRunningLog copies a running attempt's driver log into the task folder every LogCopyEvery, so that what was
// logged so far stays readable if the Ray head goes away. The copy is made in the scheduler's pass: a log that
// takes long to copy (hundreds of MB) is copied at most every ten times what its last copy took, so that its
// copies take at most a tenth of the loop's time (each running log's: k big logs, k tenths).
func (l *Loop) copyRunningLog(ctx context.Context, t *mvp.Task, a *mvp.Attempt, now time.Time) {
	every := l.LogCopyEvery
	if every == 0 {
		every = 30 * time.Second
	}
	l.mu.Lock()
	if l.copied == nil {
		l.copied = map[string]time.Time{}
	}
	due := !now.Before(l.copied[a.RaySubmissionID])
	if due {
		l.copied[a.RaySubmissionID] = now.Add(every)
	}
	l.mu.Unlock()
	if !due {
		return
	}
	start := l.Clock.Now()
	_, err := l.keepLog(ctx, t.ID, a.No, a.RaySubmissionID, a.DriverNodeID, 0)
	if took := l.Clock.Now().Sub(start); 10*took > every {
		l.mu.Lock()
		l.copied[a.RaySubmissionID] = now.Add(10 * took)
		l.mu.Unlock()
	}
	var de *taskfs.DiskError
	switch {
	case errors.As(err, &de):
		l.Logger.Error("write running log", "task_id", t.ID, "err", err)
	case errors.Is(err, errLogNodeQuiet):
		l.Logger.Debug("copy running log", "task_id", t.ID, "err", err) // noteLogRead said it once
	case err != nil:
		l.Logger.Warn("copy running log", "task_id", t.ID, "err", err)
	}
}

// LogTail is how much of a driver log's end Classify reads when the log is kept: a failed run's cause is in its
// last lines (a log up to this size is read whole).
const LogTail = 8 << 20

// LogCopyTimeout bounds one copy of a driver log from Ray into the task folder (a call's own timeout,
// v2.ray.request_timeout_s, is too short for a log of hundreds of MB).
const LogCopyTimeout = 5 * time.Minute

// passReserve is the time a log copy leaves the pass it runs in, at most (copyTime).
const passReserve = 10 * time.Second

// copyTime is how long a log copy that starts at now may take in a pass whose context ends at deadline (ok false:
// it has none): LogCopyTimeout, and never so long that the pass has no time left once the copy is cut: it keeps
// passReserve, or a quarter of what is left when that is less. Run bounds a pass (2 min) more tightly than
// LogCopyTimeout: a copy cut by the pass's own end failed the pass with it, before the attempt's end was recorded
// or anything decided, and the next pass began with the same copy again.
func copyTime(now, deadline time.Time, ok bool) time.Duration {
	if !ok {
		return LogCopyTimeout
	}
	left := deadline.Sub(now)
	return min(LogCopyTimeout, left-min(passReserve, left/4))
}

// keepLog streams the driver log of attempt no (Ray job id, its driver on node, "" if not known) into the task
// folder, replacing the copy there only once it is whole, and returns its last tail bytes (0: none kept, for a
// caller that does not classify the run). A failure to write the task folder is a *taskfs.DiskError; any other
// error is Ray's. The copy ends in time for the pass to go on (copyTime): one cut short is an error like any other.
func (l *Loop) keepLog(ctx context.Context, taskID string, no int, id, node string, tail int) (string, error) {
	return l.readFromNode(ctx, id, node, func(fill func(io.Writer) error) (string, error) {
		return l.Files.KeepLog(taskID, no, tail, fill)
	})
}

// readLogTail reads the last LogTail bytes of a job's driver log from Ray without keeping them, in the time
// keepLog has.
func (l *Loop) readLogTail(ctx context.Context, id, node string) (string, error) {
	return l.readFromNode(ctx, id, node, func(fill func(io.Writer) error) (string, error) {
		return taskfs.ReadTail(LogTail, fill)
	})
}

// readFromNode runs read on job id's driver log as Ray gives it from node, in the time a copy has (copyContext),
// unless the node is quiet (quietNode); what the read got and how long it took tell whether the node answers
// (noteLogRead). A failure of mvp's own disk (*taskfs.DiskError) says nothing of the node.
func (l *Loop) readFromNode(ctx context.Context, id, node string, read func(fill func(io.Writer) error) (string, error)) (string, error) {
	if err := l.quietNode(id, node); err != nil {
		return "", err
	}
	ctx, cancel := copyContext(ctx)
	defer cancel()
	start := l.Clock.Now()
	var got int64
	out, err := read(l.copyFromRay(ctx, id, node, &got))
	if de := (*taskfs.DiskError)(nil); !errors.As(err, &de) {
		l.noteLogRead(node, start, got, err)
	}
	return out, err
}

// copyContext bounds a copy of a driver log so that the pass can go on after it (copyTime), and marks it as the
// scheduler's own read (mvp.WithSchedulerRead: readers' copies do not hold it up).
func copyContext(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	return context.WithTimeout(mvp.WithSchedulerRead(ctx), copyTime(time.Now(), deadline, ok))
}

// copyFromRay writes job id's driver log (its driver on node) as Ray gives it, counting the bytes in got.
func (l *Loop) copyFromRay(ctx context.Context, id, node string, got *int64) func(io.Writer) error {
	return func(w io.Writer) error {
		n, err := l.Ray.CopyJobLog(ctx, id, node, w)
		*got = n
		return err
	}
}

// slowLogRead is how long a failed read of a driver log from a node (keepLog, readLogTail) that got no byte takes
// before the node counts as not answering, and is not asked for logs for logQuiet (quietNode): Ray's state API waits 20 s for a
// node's agent that does not answer (its processes stopped, or cut off; measured on Ray 2.60) before it fails the
// read, until Ray marks the node dead a minute or so later.
const slowLogRead = 10 * time.Second

// logQuiet is how long the logs of a node that did not answer are not asked of Ray. Read one after the other in
// the pass (each ended attempt's, then keepLogs's), they held the pass 20 s each: 91 s for one pass measured,
// while a task that fit waited.
const logQuiet = time.Minute

// errLogNodeQuiet marks a log not asked of Ray because its node did not answer the last read (quietNode): not a
// try of keeping it. The read after the quiet minute is one (keepLogs's, every keepLogEvery, comes first but for
// an attempt ending there then), so a node that never answers has its logs given up as any failing log is.
var errLogNodeQuiet = errors.New("its driver's node did not answer a read of a log just before")

// quietNode returns errLogNodeQuiet, wrapped with when it may be asked again, while node is not asked for logs.
func (l *Loop) quietNode(id, node string) error {
	if node == "" {
		return nil
	}
	now := l.Clock.Now()
	l.mu.Lock()
	until, ok := l.logQuiet[node]
	l.mu.Unlock()
	if !ok || !now.Before(until) {
		return nil
	}
	return fmt.Errorf("logs of job %s: %w (node %s): not asked again before %s", id, errLogNodeQuiet, node,
		until.UTC().Format(time.RFC3339))
}

// noteLogRead records the outcome of a read of a log from node that began at start and got bytes: one that failed
// after slowLogRead with no byte makes the node quiet for logQuiet (said once); one that succeeded ends its quiet.
// A read that got bytes (a big log cut by its copy's time) says the node answers.
func (l *Loop) noteLogRead(node string, start time.Time, got int64, err error) {
	if node == "" {
		return
	}
	now := l.Clock.Now()
	took := now.Sub(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil || got > 0 {
		delete(l.logQuiet, node)
		return
	}
	if took < slowLogRead || errors.Is(err, context.Canceled) {
		return
	}
	if l.logQuiet == nil {
		l.logQuiet = map[string]time.Time{}
	}
	l.logQuiet[node] = now.Add(logQuiet)
	l.Logger.Warn("a node did not answer a read of a driver log; its logs are not asked of Ray for a while, so "+
		"that the scheduler's passes go on", "node_id", node, "took", took.Round(time.Millisecond).String(),
		"quiet_for", logQuiet.String(), "err", err)
}

// keepLogEvery spaces the retries of a failed driver-log fetch.
const keepLogEvery = 5 * time.Second

// keepLogQuietSkip is how many unkept logs of quiet nodes keepLogs may pass over in one run to reach ten others.
const keepLogQuietSkip = 40

// keepLogBudget bounds the time one pass spends keeping ended jobs' logs: no new copy starts past it.
const keepLogBudget = 20 * time.Second

// keepLogsSoon makes the next keepLogs due at once: an attempt was concluded without its log.
func (l *Loop) keepLogsSoon() {
	l.mu.Lock()
	l.lastKeep = time.Time{}
	l.mu.Unlock()
}

// keepLogs fetches the driver logs of ended jobs that are not kept yet (a success's, after the pass that concluded
// it; one whose fetch failed when it ended), a few per pass and at most every keepLogEvery unless made due.
func (l *Loop) keepLogs(ctx context.Context, now time.Time) {
	l.mu.Lock()
	due := now.Sub(l.lastKeep) >= keepLogEvery
	if due {
		l.lastKeep = now
	}
	l.mu.Unlock()
	if !due {
		return
	}
	// More than the ten a pass reads: the logs of a quiet node are skipped, and those oldest must not hold every
	// other node's (keepLogQuietSkip).
	todo, err := l.Store.UnkeptLogs(ctx, l.maxLogTries(), 10+keepLogQuietSkip)
	if err != nil {
		l.Logger.Error("list unkept logs", "err", err)
		return
	}
	if len(todo) == 0 {
		l.logsBusy(now, false) // no log waits to be kept: nothing for /healthz to say
	}
	start := l.Clock.Now()
	read := 0
	for _, a := range todo {
		if l.Clock.Now().Sub(start) >= keepLogBudget || read == 10 {
			break // big logs: the rest at the next pass, so that the pass goes on deciding
		}
		_, err := l.keepLog(ctx, a.TaskID, a.No, a.RaySubmissionID, a.DriverNodeID, 0)
		if !errors.Is(err, errLogNodeQuiet) {
			read++
		}
		var de *taskfs.DiskError
		if errors.As(err, &de) && l.sharedRootDown(err) != nil {
			// mvp's own disk failing (shared_root full or read-only) is not a try: the job stays in Ray, which
			// keeps its log, until the folder can be written. Said once per log: every 5 s for each (2,000 lines
			// an hour a log) said nothing more, and /healthz names the condition. A folder of its own that cannot
			// be written while shared_root can (its job, which may write there, put a folder in driver.log's place,
			// or took mvp's right to write it) is a try like any failure: not counted, ten such folders, the
			// oldest unkept logs, took every pass's places for ever, and no later log was kept nor job pruned.
			if l.sayUnkept(a.RaySubmissionID, true) {
				l.Logger.Error("keep driver log: its task folder cannot be written on shared_root; will try again "+
					"(said once for this log)", "task_id", a.TaskID, "submission_id", a.RaySubmissionID, "err", err)
			}
			continue
		}
		if errors.Is(err, errLogNodeQuiet) {
			continue // not asked: kept once its node answers again (or is known dead: Ray then says so at once)
		}
		if errors.Is(err, mvp.ErrRayBusy) {
			// Ray up, but its state API at its limit of requests in progress (others' log streams): not a try
			// either (counted, every log ended while Ray was busy was given up within a minute), and the next
			// job's log would be refused alike.
			if l.sayUnkept(a.RaySubmissionID, true) {
				l.Logger.Warn("keep driver log: Ray's state API is busy; will try again (said once for this log)",
					"task_id", a.TaskID, "submission_id", a.RaySubmissionID, "err", err)
			}
			l.logsBusy(now, true)
			return
		}
		l.logsBusy(now, false)
		l.sayUnkept(a.RaySubmissionID, false)
		l.keepResult(a)
		if errors.Is(err, mvp.ErrJobNotFound) {
			// Ray has no such job (it refused the submission, or lost the job): there is no log to keep and no job
			// to delete; the attempt's message already says what happened to it.
			if err := l.Store.MarkRayDeleted(ctx, a.TaskID, a.No); err != nil {
				l.Logger.Error("mark job gone from Ray", "submission_id", a.RaySubmissionID, "err", err)
				return
			}
			continue
		}
		if errors.Is(err, mvp.ErrRayUnavailable) {
			// Ray down is not a try (it may answer at the next pass); Ray up and failing this job's log only (its
			// driver's node was removed: ray-project/ray#65402) is one, and the next job's log is tried.
			if _, gerr := l.Ray.GetJob(ctx, a.RaySubmissionID); gerr != nil && !errors.Is(gerr, mvp.ErrJobNotFound) {
				return
			}
		}
		if err != nil {
			l.Logger.Warn("keep driver log", "task_id", a.TaskID, "submission_id", a.RaySubmissionID,
				"try", a.LogTries+1, "of", l.maxLogTries(), "err", err)
		}
		if nerr := l.Store.NoteLog(ctx, a.TaskID, a.No, err == nil); nerr != nil {
			l.Logger.Error("note driver log", "task_id", a.TaskID, "err", nerr)
			return
		}
	}
}

// sharedRootDown says why err, a failure to write one task's folder, is shared_root's as a whole, or nil when it is
// not: full, over quota, read-only or failing (its errno), not mounted, or not writable where mvp checks it at
// start (what the check found). The answer names no task's folder: it is the same for every task it holds, and
// the held reasons and /healthz said whichever task's folder the pass tried.
func (l *Loop) sharedRootDown(err error) error {
	if c := wholeDiskCause(err); c != nil {
		return c
	}
	if merr := l.Files.CheckMounted(); merr != nil {
		return merr
	}
	_, werr := l.Files.CheckWritable()
	return werr
}

// wholeDiskCause returns the cause of err when it is one of the whole disk (full, over quota, read-only, failing),
// or nil. Such a failure is said by its cause alone: the file it hit (one task's folder) is not where the fault
// is, and a held task's reason or /healthz quoting it named some other task's folder.
func wholeDiskCause(err error) error {
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, e) {
			return e
		}
	}
	return nil
}

// logsBusy records whether Ray's state API refused a read of an ended job's log as busy at now, for /healthz
// (Health.RayLogsBusySince: from the first refusal until a read gets through).
func (l *Loop) logsBusy(now time.Time, busy bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !busy:
		l.health.RayLogsBusySince = nil
	case l.health.RayLogsBusySince == nil:
		l.health.RayLogsBusySince = &now
	}
}

// sayUnkept records whether the driver log of job id could not be written on shared_root (failed) or was written,
// or failed otherwise; it reports whether a failure is new, to be said.
func (l *Loop) sayUnkept(id string, failed bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !failed {
		delete(l.unkeptSaid, id)
		return false
	}
	if l.unkeptSaid[id] {
		return false
	}
	if l.unkeptSaid == nil {
		l.unkeptSaid = map[string]bool{}
	}
	l.unkeptSaid[id] = true
	return true
}

// keepResult writes an ended attempt's status.json from what the database recorded of its end, when the folder
// has none: writeResult could not write it when the attempt was concluded (shared_root full or not writable then),
// and its log, kept later, is what brings it here again.
func (l *Loop) keepResult(a *mvp.Attempt) {
	if _, _, err := l.Files.ReadResult(a.TaskID, a.No); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	info := &mvp.JobInfo{SubmissionID: a.RaySubmissionID, JobID: a.RayJobID, Status: a.RayStatus, Message: a.Message,
		DriverExitCode: a.ExitCode, DriverNodeID: a.DriverNodeID}
	if a.StartTime != nil {
		info.StartTime = a.StartTime.UnixMilli()
	}
	if a.EndTime != nil {
		info.EndTime = a.EndTime.UnixMilli()
	}
	if err := l.Files.WriteResult(a.TaskID, a.No, info, a.FailureKind); err != nil {
		l.Logger.Warn("write attempt status; will try again with its log", "task_id", a.TaskID, "attempt_no", a.No, "err", err)
		return
	}
	l.Logger.Info("attempt status written once its task folder could be", "task_id", a.TaskID, "attempt_no", a.No)
}

func (l *Loop) maxLogTries() int {
	if l.MaxLogTries > 0 {
		return l.MaxLogTries
	}
	return 10
}

// prune deletes ended jobs from Ray's job server beyond the newest KeepFinishedJobs, a few per tick, each only
// once its driver log is in the task folder, or once every try to keep it has failed (then with a LOG_NOT_KEPT
// event, so that nobody looks for it in vain).
func (l *Loop) prune(ctx context.Context, now time.Time) {
	l.keepLogs(ctx, now)
	if l.KeepFinishedJobs <= 0 {
		return
	}
	old, err := l.Store.FinishedInRay(ctx, l.KeepFinishedJobs, 50)
	if err != nil {
		l.Logger.Error("list finished jobs", "err", err)
		return
	}
	for _, a := range old {
		if !a.LogKept && a.LogTries < l.maxLogTries() {
			continue // keepLogs is still trying
		}
		err := l.Ray.DeleteJob(ctx, a.RaySubmissionID)
		if err != nil && !errors.Is(err, mvp.ErrJobNotFound) {
			l.Logger.Warn("delete finished job from Ray", "submission_id", a.RaySubmissionID, "err", err)
			if errors.Is(err, mvp.ErrRayUnavailable) {
				return
			}
			continue
		}
		if err := l.Store.MarkRayDeleted(ctx, a.TaskID, a.No); err != nil {
			l.Logger.Error("mark job deleted", "submission_id", a.RaySubmissionID, "err", err)
			return
		}
		if !a.LogKept {
			b, _ := json.Marshal(map[string]any{"attempt_no": a.No, "submission_id": a.RaySubmissionID,
				"tries": a.LogTries, "reason": "the driver log could not be fetched from Ray; the job was deleted from Ray without it"})
			if err := l.Store.AddEvent(ctx, &mvp.Event{TaskID: a.TaskID, TS: now, Type: mvp.EventLogNotKept, Payload: b}); err != nil {
				l.Logger.Error("record lost log", "task_id", a.TaskID, "err", err)
			}
		}
	}
}
