//go:build e2e

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestProgressIsShown: the stand-in writes progress.json into its attempt folder each step, as verl's file logger
// would be adapted to; mvp shows it on the task and in the list while it runs, and its last word once it ended.
func TestProgressIsShown(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	task := s.submit(spec("ppo", 1, 1, 8))
	waitFor(t, 90*time.Second, "progress on the running task", func() (bool, string) {
		got := s.get(task.ID)
		if got.Progress == nil || got.Progress.Step == nil {
			return false, string(got.State)
		}
		return got.State == mvp.StateRunning && *got.Progress.Step >= 1, fmt.Sprintf("%s step %d", got.State, *got.Progress.Step)
	})
	page, _, err := s.c.List(ctxT(t), "", "", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tasks) != 1 || page.Tasks[0].Progress == nil || page.Tasks[0].Progress.AttemptNo != 1 {
		t.Errorf("the list does not show the progress: %+v", page.Tasks)
	}
	done := s.waitState(task.ID, mvp.StateSucceeded, 90*time.Second)
	p := done.Progress
	if p == nil || p.PercentComplete == nil || *p.PercentComplete != 100 || p.Name != "done" || p.Metrics["loss"] <= 0 {
		t.Errorf("final progress %+v", p)
	}
	if got := readFile(t, s.sharedRoot+"/jobs/"+task.ID+"/attempts/a01/metrics.jsonl"); !strings.Contains(got, `"step": 1`) {
		t.Errorf("metrics.jsonl: %q", got)
	}
}

// TestHeartbeatLostIsRetriedThenFails: a run that stops writing progress for heartbeat_timeout_s is stopped by mvp
// through Ray (HEARTBEAT_LOST), retried like an INFRA failure, and the task fails when max_infra_retries is used up.
func TestHeartbeatLostIsRetriedThenFails(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{schedExtra: ", max_infra_retries: 1, runtime_grace_s: 2"})
	// The timeout must outlast the stand-in's start on a loaded machine (the second attempt counts from its job's
	// start until its first progress file): 8 s was too short once with both cores busy.
	task := s.submit(spec("ppo", 1, 1, 300, "mvp_test.stall_after=2") + "heartbeat_timeout_s: 30\n") // 20 s left 5 to spare
	done := s.waitState(task.ID, mvp.StateFailed, 4*time.Minute)
	if len(done.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2 (one retry, max_infra_retries: 1)", len(done.Attempts))
	}
	for _, a := range done.Attempts {
		if a.FailureKind != mvp.FailureHeartbeatLost || a.RayStatus != mvp.RayStopped {
			t.Errorf("attempt %d: %s %s %q", a.No, a.FailureKind, a.RayStatus, a.Message)
		}
	}
	if !strings.Contains(done.ErrorSummary, "HEARTBEAT_LOST") || !strings.Contains(done.ErrorSummary, "max_infra_retries") {
		t.Errorf("summary %q", done.ErrorSummary)
	}
	lost := 0
	for _, e := range s.events(task.ID) {
		if e.Type == mvp.EventHeartbeatLost {
			lost++
		}
	}
	if lost != 2 {
		t.Errorf("%d HEARTBEAT_LOST events, want 2", lost)
	}
	if done.Progress == nil || *done.Progress.Step != 2 || done.Progress.AttemptNo != 2 {
		t.Errorf("the last progress before the stall: %+v", done.Progress)
	}
}

// TestResultsServed: the stand-in writes its results into MVP_RESULTS_DIR (results/a01/); mvp lists and serves
// them (ranges, content type), the CLI fetches one, and nothing outside the results folder is ever served.
func TestResultsServed(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	task := s.submit(spec("sft", 1, 1, 1))
	s.waitState(task.ID, mvp.StateSucceeded, 90*time.Second)
	resultsDir := filepath.Join(s.sharedRoot, "jobs", task.ID, "results")
	// Something hostile beside the results: a link to the task's own spec and one to a file outside.
	if err := os.Symlink(filepath.Join(s.sharedRoot, "jobs", task.ID, "spec.json"), filepath.Join(resultsDir, "a01", "spec-link")); err != nil {
		t.Fatal(err)
	}
	l, _, err := s.c.Results(ctxT(t), task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range l.Files {
		paths = append(paths, fmt.Sprintf("%s:%d:%d", f.Path, f.AttemptNo, f.Size))
	}
	if got, want := strings.Join(paths, " "), "a01/model/weights.bin:1:1024 a01/summary.json:1:"; !strings.HasPrefix(got, want) {
		t.Errorf("listed %q, want %q…", got, want)
	}
	get := func(path string, hdr map[string]string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", s.c.Addr+"/api/v2/tasks/"+task.ID+"/results/"+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := get("a01/summary.json", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"workload": "sft"`) {
		t.Errorf("summary: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, body = get("a01/model/weights.bin", map[string]string{"Range": "bytes=256-259"})
	if resp.StatusCode != 206 || body != "\x00\x01\x02\x03" {
		t.Errorf("range: %d %q", resp.StatusCode, body)
	}
	for _, p := range []string{"a01/spec-link", "..%2Fspec.json", "%2e%2e/spec.json", "a01%2F..%2F..%2Fspec.json", "%2Fetc%2Fpasswd"} {
		if resp, body := get(p, nil); resp.StatusCode < 300 || strings.Contains(body, "model_path") {
			t.Errorf("%s: served (%d) %.80q", p, resp.StatusCode, body)
		}
	}
	out := filepath.Join(t.TempDir(), "summary.json")
	if stdout, stderr, code := s.cli("results", task.ID, "--get", "a01/summary.json", "-o", out); code != 0 {
		t.Fatalf("mvp results --get: %d %s %s", code, stdout, stderr)
	}
	if got := readFile(t, out); !strings.Contains(got, `"steps"`) {
		t.Errorf("fetched %q", got)
	}
	if stdout, _, code := s.cli("results", task.ID); code != 0 || !strings.Contains(stdout, "a01/model/weights.bin") {
		t.Errorf("mvp results: %d %s", code, stdout)
	}
}

// TestDependencies: after_ok waits for its dependency to succeed (reason "dependency: …" meanwhile) and starts only
// after it ended; an after_ok dependency that fails cancels its dependent with the reason; after_any starts after
// the failure; an unknown dependency is refused at submit. While a runs, a whole-cluster gang h queued behind b is
// reserved at a's declared end, but the forecast starts b (ahead of it, startable once a ends) then and h only at
// b's declared end: `mvp queue`'s reserved line says h is estimated to start later (3d86fe3; it printed the
// reserved start alone, and the two times disagreed with no word why).
func TestDependencies(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	a := s.submit(spec("ppo", 1, 1, 20) + "max_runtime_s: 60\n")
	b := s.submit(spec("ppo", 1, 1, 1) + "max_runtime_s: 60\nafter_ok: [" + a.ID + "]\n")
	if got := s.get(b.ID); got.State.Active() || got.LatestAttemptNo != 0 {
		t.Fatalf("b started at once: %s", got.State)
	}
	waitFor(t, 30*time.Second, "b to wait for a", func() (bool, string) {
		got := s.get(b.ID)
		return strings.HasPrefix(got.PendingReason, "dependency: waiting for "+a.ID), got.PendingReason
	})
	// The queue estimates b at a's declared end (a's run counted as succeeding then).
	waitFor(t, 30*time.Second, "b estimated at a's declared end", func() (bool, string) {
		var since *time.Time
		for _, at := range s.get(a.ID).Attempts {
			since = at.RunStart() // from its gang's placement once recorded, as mvp counts
		}
		if since == nil {
			return false, "a is not running yet"
		}
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		for _, e := range v.Queue {
			if e.TaskID == b.ID {
				want := since.Add(60 * time.Second)
				return e.Code == scheduler.CodeDependency && e.EstStart != nil && e.EstStart.Sub(want).Abs() < 2*time.Second,
					fmt.Sprintf("%+v; want est_start %s", e, want.Format(time.RFC3339Nano))
			}
		}
		return false, "b is not in the queue"
	})
	// h declares 600 s: on the cluster emptied at a's end, drain chaining does not put it ahead of b (600 > b's 60).
	h := s.submit(spec("ppo", 2, 4, 1) + "max_runtime_s: 600\n")
	waitFor(t, 30*time.Second, "h reserved at a's declared end and estimated at b's", func() (bool, string) {
		if got := s.get(a.ID); got.State != mvp.StateRunning {
			t.Fatalf("a is %s before h was seen reserved: the scene needs a longer hold", got.State)
		}
		v, _, err := s.c.Queue(ctxT(t))
		if err != nil {
			return false, err.Error()
		}
		var est *time.Time
		for _, e := range v.Queue {
			if e.TaskID == h.ID {
				est = e.EstStart
			}
		}
		return len(v.Reservations) == 1 && v.Reservations[0].TaskID == h.ID && v.Reservations[0].Start != nil &&
				est != nil && est.Sub(v.Reservations[0].Start.Add(60*time.Second)).Abs() < 2*time.Second,
			fmt.Sprintf("reservations %+v, h estimated %v: want h reserved at a's declared end and estimated at "+
				"b's, 60 s later", v.Reservations, est)
	})
	out, errOut, code := s.cli("queue")
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "reserved: "+h.ID+" on ") {
			line = l
		}
	}
	if code != 0 || !strings.Contains(line, "estimated to start later, at ") {
		t.Errorf("mvp queue's reserved line for h: %q; want it to say h is estimated to start later (exit %d, %s):\n%s",
			line, code, errOut, out)
	}
	if _, _, code := s.cli("cancel", h.ID); code != 0 {
		t.Fatalf("cancel h: exit %d", code)
	}
	s.waitState(h.ID, mvp.StateCanceled, 30*time.Second)
	d := s.submit(spec("ppo", 1, 1, 1, "mvp_test.exit_code=1"))
	e := s.submit(spec("ppo", 1, 1, 1) + "after_ok: [" + d.ID + "]\n")
	f := s.submit(spec("ppo", 1, 1, 1) + "after_any: [" + d.ID + "]\n")

	doneA := s.waitState(a.ID, mvp.StateSucceeded, 90*time.Second)
	doneB := s.waitState(b.ID, mvp.StateSucceeded, 90*time.Second)
	if aEnd, bStart := doneA.Attempts[0].EndTime, doneB.Attempts[0].StartTime; aEnd == nil || bStart == nil || bStart.Before(*aEnd) {
		t.Errorf("b started at %v, before a ended at %v", bStart, aEnd)
	}
	s.waitState(d.ID, mvp.StateFailed, 90*time.Second)
	canceled := s.waitState(e.ID, mvp.StateCanceled, 60*time.Second)
	if len(canceled.Attempts) != 0 || !strings.Contains(canceled.ErrorSummary, d.ID) || !strings.Contains(canceled.ErrorSummary, "FAILED") {
		t.Errorf("e: %d attempts, summary %q", len(canceled.Attempts), canceled.ErrorSummary)
	}
	s.waitState(f.ID, mvp.StateSucceeded, 90*time.Second)

	_, err := s.c.Submit(ctxT(t), []byte(spec("ppo", 1, 1, 1)+"after_ok: [mvp2-ppo-20251223-143201-ffff]\n"), false)
	if err == nil || !strings.Contains(err.Error(), "after_ok[0]") || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("unknown dependency: %v", err)
	}
}

// TestResubmitResume: a run that saved checkpoints and failed is resubmitted with --resume and a fixed override:
// the new task is linked both ways, verl is pointed at the origin's checkpoint folder with
// trainer.resume_mode=auto, and the stand-in reports the step it resumed from. A plain resubmit from the CLI makes
// a new task from the stored spec.
func TestResubmitResume(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	origin := s.submit(spec("ppo", 1, 1, 3, "trainer.save_freq=1", "mvp_test.exit_code=1"))
	unsaved := s.submit(spec("ppo", 1, 1, 1, "mvp_test.exit_code=1")) // verl's default save_freq saves nothing
	s.waitState(origin.ID, mvp.StateFailed, 90*time.Second)
	latest := strings.TrimSpace(readFile(t, filepath.Join(s.sharedRoot, "jobs", origin.ID, "checkpoints", "latest_checkpointed_iteration.txt")))
	if latest == "" || latest == "0" {
		t.Fatalf("the origin saved no checkpoint: %q", latest)
	}
	resumed, _, err := s.c.Resubmit(ctxT(t), origin.ID, api.ResubmitRequest{Set: []string{"overrides=mvp_test.exit_code=0"}, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.OriginID != origin.ID || resumed.ResumeFrom != origin.ID {
		t.Errorf("links: origin %q resume_from %q", resumed.OriginID, resumed.ResumeFrom)
	}
	// One run writes a checkpoint folder at a time: a second resume while the first waits or runs is refused,
	// naming it (its run takes seconds to start and 3 s to run; the refusal is asked at once).
	if _, stderr, code := s.cli("resubmit", origin.ID, "--resume"); code == 0 || !strings.Contains(stderr, resumed.ID) {
		t.Errorf("a second mvp resubmit --resume while %s resumes: exit %d, %s; want a refusal naming it", resumed.ID, code, stderr)
	}
	done := s.waitState(resumed.ID, mvp.StateSucceeded, 90*time.Second)
	// Not its log's "verl-standin: resumed from step N": the TaskRunner prints that, and Ray forwards it to the
	// driver's log asynchronously, so a short run's driver can exit before it arrives. The progress says it.
	if p := done.Progress; p == nil || fmt.Sprint(p.Metrics["resumed_from_step"]) != latest {
		t.Errorf("progress %+v, want resumed_from_step %s", p, latest)
	}
	if got := s.get(origin.ID); len(got.Resubmits) != 1 || got.Resubmits[0] != resumed.ID {
		t.Errorf("the origin's resubmits: %v", got.Resubmits)
	}
	stdout, stderr, code := s.cli("resubmit", origin.ID, "-e", "name=plain")
	if code != 0 || !strings.Contains(stdout, "(resubmitted from "+origin.ID+")") {
		t.Fatalf("mvp resubmit: %d %s %s", code, stdout, stderr)
	}
	plain := s.get(strings.Fields(stdout)[0])
	if plain.Name != "plain" || plain.ResumeFrom != "" || plain.OriginID != origin.ID {
		t.Errorf("plain resubmit: %+v", plain)
	}
	if _, _, err := s.c.Cancel(ctxT(t), plain.ID); err != nil {
		t.Errorf("cancel: %v", err)
	}
	// A run that saved no checkpoint leaves nothing to resume from: the resume is taken, with a warning that it
	// starts from step 0.
	s.waitState(unsaved.ID, mvp.StateFailed, 90*time.Second)
	stdout, stderr, code = s.cli("resubmit", unsaved.ID, "--resume")
	if code != 0 || !strings.Contains(stderr, "warning: ") || !strings.Contains(stderr, "step 0") {
		t.Errorf("mvp resubmit --resume of a run that saved nothing: exit %d, %s %s; want a warning that it starts from step 0",
			code, stdout, stderr)
	}
	if f := strings.Fields(stdout); len(f) > 0 {
		if _, _, err := s.c.Cancel(ctxT(t), f[0]); err != nil {
			t.Errorf("cancel: %v", err)
		}
	}
}

// TestSecretsReachOnlyTheJob: a stored secret reaches the job's environment (the stand-in dumps it) and nothing
// else: not the task folder, not the events, not mvp's log; a rotated secret reaches the next submission; a
// secret deleted while a task that needs it waits makes that task fail at submit, naming the secret.
func TestSecretsReachOnlyTheJob(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{env: []string{"MVP_SECRETS_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"}})
	v1, v2 := uniq("wandb-first"), uniq("wandb-second")
	if _, _, err := s.c.PutSecret(ctxT(t), "wandb", v1); err != nil {
		t.Fatal(err)
	}
	run := func(want string) *mvp.Task {
		t.Helper()
		dump := filepath.Join(t.TempDir(), "args.json")
		task := s.submit(spec("ppo", 1, 1, 1, "mvp_test.dump_args="+dump) + "secrets: {WANDB_API_KEY: wandb}\n")
		s.waitState(task.ID, mvp.StateSucceeded, 90*time.Second)
		if got := readFile(t, dump); !strings.Contains(got, `"WANDB_API_KEY": "`+want+`"`) {
			t.Errorf("the job's environment lacks the secret's value %q:\n%s", want, got)
		}
		return task
	}
	a := run(v1)
	if _, _, err := s.c.PutSecret(ctxT(t), "wandb", v2); err != nil {
		t.Fatal(err)
	}
	b := run(v2)

	first := s.submit(spec("ppo", 1, 1, 4))
	waiting := s.submit(spec("ppo", 1, 1, 1) + "after_ok: [" + first.ID + "]\nsecrets: {WANDB_API_KEY: wandb}\n")
	if err := s.c.DeleteSecret(ctxT(t), "wandb"); err != nil {
		t.Fatal(err)
	}
	s.waitState(first.ID, mvp.StateSucceeded, 90*time.Second)
	failed := s.waitState(waiting.ID, mvp.StateFailed, 60*time.Second)
	if !strings.Contains(failed.ErrorSummary, "wandb") || !strings.Contains(failed.ErrorSummary, "has no secret(s) wandb") {
		t.Errorf("summary %q", failed.ErrorSummary)
	}
	l, _, err := s.c.Secrets(ctxT(t))
	if err != nil || len(l.Secrets) != 0 {
		t.Errorf("secrets after the delete: %+v %v", l, err)
	}

	leaks := func(where, text string) {
		if strings.Contains(text, v1) || strings.Contains(text, v2) {
			t.Errorf("%s holds a secret value", where)
		}
	}
	_ = filepath.WalkDir(s.sharedRoot, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			leaks(p, string(b))
		}
		return nil
	})
	for _, id := range []string{a.ID, b.ID, waiting.ID} {
		for _, e := range s.events(id) {
			leaks("event "+e.Type+" of "+id, string(e.Payload))
		}
		raw, _ := json.Marshal(s.get(id))
		leaks("the task "+id, string(raw))
	}
	leaks("mvp's log", readFile(t, s.logPath))
}

// TestAResumeOfACanceledRunWaitsForItsStop: a cancel records CANCELED at once, and Ray stops the job after its stop
// wait; a run that saves on SIGTERM (here: ignores it) goes on writing its checkpoints meanwhile. A resume from it
// then would start a second run in the same checkpoint folder: 409 until the attempt has ended, taken after.
func TestAResumeOfACanceledRunWaitsForItsStop(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{schedExtra: ", runtime_grace_s: 10"})
	origin := s.submit(spec("ppo", 1, 1, 300, "trainer.save_freq=1", "mvp_test.ignore_sigterm=1"))
	waitFor(t, 90*time.Second, "the origin running past its first step (its SIGTERM handler set)", func() (bool, string) {
		got := s.get(origin.ID)
		stepped := got.Progress != nil && got.Progress.Step != nil && *got.Progress.Step >= 1
		return got.State == mvp.StateRunning && stepped, string(got.State)
	})
	// The next segment, after it however it ends: it must not start beside the run still stopping either.
	next := s.submit(spec("ppo", 1, 1, 1) + "resume_from: " + origin.ID + "\nafter_any: [" + origin.ID + "]\n")
	if out, errs, code := s.cli("cancel", origin.ID); code != 0 {
		t.Fatalf("cancel %s: %d %s %s", origin.ID, code, out, errs)
	}
	waitFor(t, 30*time.Second, "the next segment to wait for the canceled run's stop", func() (bool, string) {
		got := s.get(next.ID)
		return strings.Contains(got.PendingReason, "still stopping"), fmt.Sprintf("%s %q", got.State, got.PendingReason)
	})
	_, _, err := s.c.Resubmit(ctxT(t), origin.ID, api.ResubmitRequest{Resume: true})
	var e *mvp.Error
	if !errors.As(err, &e) || e.Code != mvp.CodeConflict || !strings.Contains(err.Error(), "has not stopped yet") {
		t.Fatalf("--resume of a canceled run that is still stopping: %v, want 409 saying it has not stopped yet", err)
	}
	// The same resume as a segment after it (and after the next one, which writes the folder too) is taken while
	// the job stops, through the resubmit route (mvp resubmit X --resume -e after_any=X …).
	seg, _, err := s.c.Resubmit(ctxT(t), origin.ID, api.ResubmitRequest{Resume: true,
		Set: []string{"after_any=" + origin.ID, "after_any=" + next.ID, "overrides=mvp_test.hold_s=1"}})
	if err != nil {
		t.Fatalf("--resume -e after_any=%s -e after_any=%s while the canceled run stops: %v", origin.ID, next.ID, err)
	}
	if seg.ResumeFrom != origin.ID {
		t.Errorf("the resubmitted segment resumes from %q, want %s", seg.ResumeFrom, origin.ID)
	}
	waitFor(t, 90*time.Second, "the canceled run's attempt to end", func() (bool, string) {
		a := s.get(origin.ID).Attempts[0]
		return a.EndTime != nil, fmt.Sprintf("%s %s", a.RayStatus, a.FailureKind)
	})
	if got := s.get(next.ID); len(got.Attempts) > 0 && got.Attempts[0].CreatedAt.Before(*s.get(origin.ID).Attempts[0].EndTime) {
		t.Errorf("the next segment was submitted at %v, before the canceled run's job ended at %v",
			got.Attempts[0].CreatedAt, *s.get(origin.ID).Attempts[0].EndTime)
	}
	// Whether a segment resumed is read from its progress (metrics.resumed_from_step), not from the TaskRunner's
	// line in its log, which Ray forwards asynchronously (a 1-second segment's driver can exit before it arrives).
	resumes := func(id string) bool {
		ok := false
		if p := s.get(id).Progress; p != nil {
			_, ok = p.Metrics["resumed_from_step"]
		}
		return ok
	}
	s.waitState(next.ID, mvp.StateSucceeded, 90*time.Second)
	if !resumes(next.ID) {
		t.Errorf("the next segment did not resume: progress %+v", s.get(next.ID).Progress)
	}
	s.waitState(seg.ID, mvp.StateSucceeded, 90*time.Second)
	if got, prev := s.get(seg.ID), s.get(next.ID); len(got.Attempts) == 0 || prev.Attempts[0].EndTime == nil ||
		got.Attempts[0].CreatedAt.Before(*prev.Attempts[0].EndTime) {
		t.Errorf("the resubmitted segment was submitted before %s (which writes the folder too) ended: %+v", next.ID, got.Attempts)
	}
	if !resumes(seg.ID) {
		t.Errorf("the resubmitted segment did not resume: progress %+v", s.get(seg.ID).Progress)
	}
	resumed, _, err := s.c.Resubmit(ctxT(t), origin.ID, api.ResubmitRequest{Set: []string{"overrides=mvp_test.hold_s=1"}, Resume: true})
	if err != nil {
		t.Fatalf("--resume once the canceled run stopped: %v", err)
	}
	if resumed.ResumeFrom != origin.ID {
		t.Errorf("resume_from %q, want %s", resumed.ResumeFrom, origin.ID)
	}
	s.waitState(resumed.ID, mvp.StateSucceeded, 90*time.Second)
}
