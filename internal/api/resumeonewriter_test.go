package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// eventually calls try every 10 ms until it returns nil, and fails the test with its last error after 10 s.
func eventually(t *testing.T, what string, try func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := try()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ranAndCanceled submits goodSpec, waits until its first attempt has been sent to Ray (so it may have left
// checkpoints) and cancels it: a task to resume from once its job has stopped.
func ranAndCanceled(t *testing.T, c *api.Client) *mvp.Task {
	t.Helper()
	origin := sentToRay(t, c)
	if _, _, err := c.Cancel(context.Background(), origin.ID); err != nil {
		t.Fatal(err)
	}
	return origin
}

// sentToRay submits goodSpec and waits until its first attempt has been sent to Ray.
func sentToRay(t *testing.T, c *api.Client) *mvp.Task {
	t.Helper()
	ctx := context.Background()
	raw, err := c.Submit(ctx, []byte(goodSpec), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	_ = json.Unmarshal(raw, &task)
	eventually(t, "the task is sent to Ray", func() error {
		got, _, err := c.Get(ctx, task.ID)
		if err == nil && got.LatestAttemptNo == 0 {
			err = errors.New("not yet")
		}
		return err
	})
	return &task
}

// TestOneRunWritesACheckpointFolderAtATime: a run that resumes writes its checkpoints into the folder it resumes
// from. Two resumes of one failed task were both taken (the user ran mvp resubmit --resume twice, or resumed while
// an earlier resume still waited): the two runs then wrote global_step_N and the tracker of one folder at once.
// And resume_from naming a task that had itself resumed pointed verl at that task's own, empty, folder (its run
// had written into the first task's): the run started from step 0 without a word. A second writer of a folder is
// refused (409, naming the run that holds it); a resume of a resume continues in the chain's folder; and a resume
// from a folder with no checkpoint says so in the answer's warning.
func TestOneRunWritesACheckpointFolderAtATime(t *testing.T) {
	m := servicetest.Start(t, nil)
	c := m.Client()
	ctx := context.Background()
	origin := ranAndCanceled(t, c)
	var first *mvp.Task
	var firstRaw json.RawMessage
	eventually(t, "a resume once the origin's job stopped", func() (err error) {
		first, firstRaw, err = c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true})
		return err
	})
	var created struct {
		Warning string `json:"warning"`
	}
	_ = json.Unmarshal(firstRaw, &created)
	if !strings.Contains(created.Warning, "no checkpoint") || !strings.Contains(created.Warning, "step 0") {
		t.Errorf("a resume from a folder with no checkpoint: warning %q, want one saying it starts from step 0", created.Warning)
	}

	var e *mvp.Error
	if _, _, err := c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true}); !errors.As(err, &e) ||
		e.Code != mvp.CodeConflict || !strings.Contains(e.Message, first.ID) {
		t.Errorf("a second resume while %s waits to resume: %v, want 409 naming it", first.ID, err)
	}
	if resp, body := do(t, m.URL(), "POST", "/api/v2/tasks", "application/yaml", goodSpec+"resume_from: "+origin.ID+"\n", nil); resp.StatusCode != 409 ||
		!strings.Contains(string(body), first.ID) {
		t.Errorf("resume_from a folder %s writes: %d %s, want 409 naming it", first.ID, resp.StatusCode, body)
	}
	if _, err := c.ResubmitDryRun(ctx, origin.ID, api.ResubmitRequest{Resume: true}); !errors.As(err, &e) || e.Code != mvp.CodeConflict {
		t.Errorf("a dry run of a second resume: %v, want the 409 the resume would get", err)
	}

	// Once the first resume ended (and its job, if it had one, stopped), a resume of it continues in the origin's
	// folder, whichever way it is asked for; with a checkpoint there, without a warning.
	if _, _, err := c.Cancel(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(m.Config.SharedRoot, "jobs", origin.ID, "checkpoints")
	if err := os.MkdirAll(filepath.Join(ckpt, "global_step_3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ckpt, "latest_checkpointed_iteration.txt"), []byte("3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var chained mvp.Task
	var chainedRaw []byte
	eventually(t, "resume_from the first resume", func() error {
		resp, body := do(t, m.URL(), "POST", "/api/v2/tasks", "application/yaml", goodSpec+"resume_from: "+first.ID+"\n", nil)
		if resp.StatusCode != 201 {
			return errors.New(string(body))
		}
		chainedRaw = body
		return json.Unmarshal(body, &chained)
	})
	var spec struct {
		ResumeFrom string `json:"resume_from"`
	}
	_, eff, err := m.Store().TaskSpec(ctx, chained.ID)
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(eff, &spec)
	if chained.ResumeFrom != origin.ID || spec.ResumeFrom != origin.ID {
		t.Errorf("resume_from %s, which resumed from %s: the task resumes from %q (effective spec %q), want the chain's folder's %s",
			first.ID, origin.ID, chained.ResumeFrom, spec.ResumeFrom, origin.ID)
	}
	created.Warning = ""
	_ = json.Unmarshal(chainedRaw, &created)
	if created.Warning != "" {
		t.Errorf("a resume from a folder with a checkpoint: warning %q, want none", created.Warning)
	}
	if _, _, err := c.Resubmit(ctx, first.ID, api.ResubmitRequest{Resume: true}); !errors.As(err, &e) ||
		e.Code != mvp.CodeConflict || !strings.Contains(e.Message, chained.ID) {
		t.Errorf("--resume of %s while %s resumes in the same folder: %v, want 409 naming it", first.ID, chained.ID, err)
	}
}

// TestAResumeMayWaitForTheRunsThatWriteItsFolder: segments of a long training chained by dependencies (each resumes
// from the folder the one before it writes, and starts once it has ended: how a run longer than max_runtime_s
// goes on, as with Slurm's --dependency=afterany) never run two writers at once, since each waits for the writers
// it names. 79138dc refused them as a second writer. A writer that the new task does not wait for is still
// refused, and so is a resume from a live task without waiting for it.
func TestAResumeMayWaitForTheRunsThatWriteItsFolder(t *testing.T) {
	m := servicetest.Start(t, nil)
	c := m.Client()
	ctx := context.Background()
	origin := ranAndCanceled(t, c)
	var seg2 *mvp.Task
	eventually(t, "a resume once the origin's job stopped", func() (err error) {
		seg2, _, err = c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true})
		return err
	})
	submit := func(extra string) (int, mvp.Task, string) {
		resp, body := do(t, m.URL(), "POST", "/api/v2/tasks", "application/yaml", goodSpec+extra, nil)
		var got mvp.Task
		_ = json.Unmarshal(body, &got)
		return resp.StatusCode, got, string(body)
	}
	code, seg3, body := submit("resume_from: " + seg2.ID + "\nafter_any: [" + seg2.ID + "]\n")
	if code != 201 || seg3.ResumeFrom != origin.ID {
		t.Fatalf("a resume from %s after it ends: %d %s; want 201 resuming from the chain's folder %s", seg2.ID, code, body, origin.ID)
	}
	if code, _, body := submit("resume_from: " + origin.ID + "\nafter_ok: [" + seg2.ID + "]\n"); code != 409 || !strings.Contains(body, seg3.ID) {
		t.Errorf("a resume after %s but not after %s, which writes the folder too: %d %s; want 409 naming %s", seg2.ID, seg3.ID, code, body, seg3.ID)
	}
	code, seg4, body := submit("resume_from: " + seg3.ID + "\nafter_any: [" + seg3.ID + ", " + seg2.ID + "]\n")
	if code != 201 || seg4.ResumeFrom != origin.ID {
		t.Errorf("a resume after every writer of the folder: %d %s; want 201", code, body)
	}
	if code, _, body := submit("resume_from: " + seg4.ID + "\n"); code != 409 || !strings.Contains(body, "after_any") {
		t.Errorf("a resume from a task that waits, without waiting for it: %d %s; want 409 saying to name it in after_any", code, body)
	}
}

// TestResubmitResumeOfALiveTaskThatItStartsAfter: `mvp resubmit X --resume -e after_any=X` of a running X is the
// next segment of a training (it resumes from X's folder once X has ended). The jobspec route took it (resume_from
// with after_any); the resubmit route refused it (409 "cancel it first or wait") whatever the changes said. It is
// taken now, and still refused without the dependency, with a hint naming it.
func TestResubmitResumeOfALiveTaskThatItStartsAfter(t *testing.T) {
	m := servicetest.Start(t, nil)
	c := m.Client()
	ctx := context.Background()
	live := sentToRay(t, c)
	var e *mvp.Error
	if _, _, err := c.Resubmit(ctx, live.ID, api.ResubmitRequest{Resume: true}); !errors.As(err, &e) ||
		e.Code != mvp.CodeConflict || !strings.Contains(e.Message, "after_any="+live.ID) {
		t.Errorf("--resume of a live task without waiting for it: %v, want 409 naming -e after_any=%s", err, live.ID)
	}
	next, _, err := c.Resubmit(ctx, live.ID, api.ResubmitRequest{Resume: true, Set: []string{"after_any=" + live.ID}})
	if err != nil {
		t.Fatalf("--resume -e after_any=%s of the live task: %v", live.ID, err)
	}
	if next.ResumeFrom != live.ID || !slices.Equal(next.AfterAny, []string{live.ID}) || next.OriginID != live.ID {
		t.Errorf("the next segment: resume_from %q after_any %v origin %q, want %s for all three", next.ResumeFrom, next.AfterAny, next.OriginID, live.ID)
	}
	if _, _, err := c.Resubmit(ctx, live.ID, api.ResubmitRequest{Resume: true, Set: []string{"after_ok=" + live.ID}}); !errors.As(err, &e) ||
		e.Code != mvp.CodeConflict || !strings.Contains(e.Message, next.ID) {
		t.Errorf("a second next segment beside %s: %v, want 409 naming it", next.ID, err)
	}
}
