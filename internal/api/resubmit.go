package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
)

// ResubmitRequest is the body of POST /api/v2/tasks/{task_id}/resubmit; an empty body resubmits the task as it
// was.
type ResubmitRequest struct {
	// Set changes fields of the stored effective spec before it is submitted again, as `mvp submit -e` does:
	// "nnodes=1", "env.WANDB_MODE=offline", "overrides=trainer.total_epochs=2" (appends).
	Set []string `json:"set,omitempty"`
	// Resume continues from the origin's checkpoints: the new task's resume_from is the task whose checkpoint
	// folder the origin used (the origin itself, or what it resumed from).
	Resume bool `json:"resume,omitempty"`
}

// resubmitTask makes a new task from a task's stored effective spec with the requested changes; the new task
// names its origin (resubmitted_from) and the origin lists it (resubmits).
func (s *Server) resubmitTask(w http.ResponseWriter, r *http.Request) error {
	origin, err := s.task(r)
	if err != nil {
		return err
	}
	if info, ok := origin.Workload.Info(); ok && info.RayDoor {
		return mvp.Errorf(mvp.CodeInvalid, "task_id", "task %s was submitted through the Ray door (workload %s): it holds "+
			"a Ray job request, not a jobspec; submit it again the same way (ray job submit, or JobSubmissionClient)",
			origin.ID, origin.Workload)
	}
	dry, err := boolParam(r, "dry_run")
	if err != nil {
		return err
	}
	var req ResubmitRequest
	if err := checkContentType(r, jsonOnly); err != nil {
		return err
	}
	body, err := s.readAll(w, r)
	if err != nil {
		return err
	}
	if !utf8.Valid(body) {
		// Go's decoder would turn each such byte into U+FFFD: the new task would run with a value not sent.
		return mvp.Errorf(mvp.CodeInvalid, "", "the body is not valid UTF-8")
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := decodeJSON(body, &req); err != nil {
			return mvp.Errorf(mvp.CodeInvalid, "", "the body must be JSON {\"set\": [\"key=value\", …], \"resume\": true}: %v", err)
		}
	}
	doc := map[string]any{}
	if err := json.Unmarshal(origin.SpecJSON, &doc); err != nil {
		return fmt.Errorf("decode the stored spec of %s: %w", origin.ID, err)
	}
	// A default of the day the task was accepted is not the user's: a field the jobspec as sent did not give (or
	// gave empty, or as 0 or "", the same as absent) is filled again with today's (a lowered cap refused a resubmit over a
	// number nobody wrote).
	// A text that cannot be read as a mapping (none is accepted so now; a task an older mvp stored) leaves every
	// field as the origin ran with: reading it as empty took every field for left to default, and a JSON
	// jobspec's surrogate pairs once did so with the priority and time limits its user gave.
	if given, err := jobspec.Given([]byte(origin.JobSpecYAML)); err == nil {
		for _, k := range jobspec.DefaultedFields {
			if jobspec.LeftToDefault(given, k) {
				delete(doc, k)
			}
		}
	}
	for i, kv := range req.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return mvp.Errorf(mvp.CodeInvalid, fmt.Sprintf("set[%d]", i), "%q: want key=value, e.g. nnodes=1", clip(kv))
		}
		if req.Resume && k == "resume_from" {
			return mvp.Errorf(mvp.CodeInvalid, fmt.Sprintf("set[%d]", i), "resume (--resume) resumes from the checkpoints "+
				"of %s's run and sets resume_from itself: give either it or resume_from=…, not both", origin.ID)
		}
		if err := jobspec.SetPath(doc, k, v); err != nil {
			return mvp.Errorf(mvp.CodeInvalid, fmt.Sprintf("set[%d]", i), "%s", err)
		}
	}
	if req.Resume {
		owner := origin.ResumeFrom
		if owner == "" {
			owner = origin.ID
		}
		doc["resume_from"] = owner
	}
	spec, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode the resubmitted spec: %w", err)
	}
	t, err := s.Prepare(spec)
	if err != nil {
		return err
	}
	// A resume that starts after the origin (the next segment of a training: -e after_any=<origin>) waits for its
	// run to end, as resume_from with after_any does; admit checks the folder's other writers. Any other resume
	// needs the origin's run over.
	if req.Resume && !slices.Contains(t.AfterOK, origin.ID) && !slices.Contains(t.AfterAny, origin.ID) {
		if !origin.State.Terminal() {
			return mvp.Errorf(mvp.CodeConflict, "resume", "task %s is %s: a run can resume only from a task that ended "+
				"(its checkpoints must not be written meanwhile); cancel it first, wait, or have the new run start "+
				"after it (-e after_any=%s, or after_ok to run only if it succeeds)", origin.ID, origin.State, origin.ID)
		}
		if err := stillStopping(origin, "resume"); err != nil {
			return err
		}
	}
	t.OriginID = origin.ID
	// A rerun of a user's task is that user's, whoever asks for it (the operator may): it is checked, capped and
	// counted as the user's own resubmit would be, and stays in the user's view.
	if owner := origin.Owner; owner != "" && owner != mvp.Operator && mvp.CallerOf(r.Context()).Name != owner {
		c := mvp.Caller{Name: owner}
		if s.user(c) == nil {
			// The owner's, it would be held for ever with no limits to apply (as a schedule of theirs is refused).
			return mvp.Errorf(mvp.CodeForbidden, "task_id", "task %s's owner %q is no longer a user in "+
				"v2.auth.users, and a resubmit stays the owner's: it would be held for ever with no limits to apply; "+
				"add the user back, or submit its jobspec "+
				"yourself (mvp get %s -o json shows it)", origin.ID, owner, origin.ID)
		}
		// Who asked stays known: a refusal tells the operator what to fix in alice's name, not in its own.
		ctx := context.WithValue(r.Context(), requesterKey{}, mvp.CallerOf(r.Context()))
		r = r.WithContext(mvp.WithCaller(ctx, c))
	}
	return s.admit(w, r, t, dry)
}

// checkResumeFrom refuses a task that resumes from a task that does not exist, is of another workload (its
// checkpoints are another trainer's), has not ended and is not waited for (a live run may still write the
// checkpoints the new one would start from) or never ran (it has none). A task that resumed keeps its checkpoints
// in the folder of the task it resumed from, so a resume from it is a resume from that folder: t.ResumeFrom becomes
// the chain's first task, in the effective spec too. A folder another run writes, or may still, is refused unless
// t starts after that run (after_ok or after_any: mvp.UnawaitedWriter, mvp.CheckpointsInUse; CreateTask refuses it
// again in the transaction that inserts t): so segments of one training chained by dependencies each resume where
// the one before stopped, and no two write at once. replaces (may be nil), a task canceled in the transaction that
// stores t (a schedule's overlap replace), is no writer while it waits: it has no run, and that transaction cancels
// it before it checks the folder's writers again (one with a run still live is refused there).
func (s *Server) checkResumeFrom(ctx context.Context, t, replaces *mvp.Task) error {
	if t.ResumeFrom == "" {
		return nil
	}
	from, err := s.Store.GetTask(ctx, t.ResumeFrom)
	if errors.Is(err, mvp.ErrNotFound) {
		return mvp.Errorf(mvp.CodeInvalid, "resume_from", "no task %s to resume from", t.ResumeFrom)
	}
	if err != nil {
		return err
	}
	if !mvp.CallerOf(ctx).Owns(from.Owner) {
		return notYours("resume_from", "task", from.ID)
	}
	if from.Workload != t.Workload {
		return mvp.Errorf(mvp.CodeInvalid, "resume_from", "task %s is a %s task: a %s run resumes only from the "+
			"checkpoints of a %s task", from.ID, from.Workload, t.Workload, t.Workload)
	}
	switch {
	case slices.Contains(t.AfterOK, from.ID) || slices.Contains(t.AfterAny, from.ID):
		// t starts after from: it is held until from's run has ended, its Ray job stopped too (the scheduler's
		// stoppingRuns), so it may be taken while from runs or stops.
	case from.State.Terminal():
		if err := stillStopping(from, "resume_from"); err != nil {
			return err
		}
	default:
		return mvp.Errorf(mvp.CodeConflict, "resume_from", "task %s is %s: a run can resume only from a task that "+
			"ended, or from one it starts after (after_any: [%s], or after_ok to run only if it succeeds)",
			from.ID, from.State, from.ID)
	}
	folder := from
	if from.ResumeFrom != "" {
		// Its run wrote into the chain's folder; its own holds no checkpoints.
		if folder, err = s.Store.GetTask(ctx, from.ResumeFrom); err != nil {
			return fmt.Errorf("read %s, whose checkpoints %s resumed from: %w", from.ResumeFrom, from.ID, err)
		}
		if err := resumeFromFolder(t, folder.ID); err != nil {
			return err
		}
	}
	if folder.State.Terminal() && folder.LatestAttemptNo == 0 {
		// Its folder holds no checkpoints: verl would start from scratch while the user believes it resumes.
		return mvp.Errorf(mvp.CodeConflict, "resume_from", "task %s never ran (it ended %s before any attempt was sent "+
			"to Ray), so it left no checkpoints to resume from: submit or resubmit it without resuming", folder.ID, folder.State)
	}
	writers, err := s.Store.CheckpointWriters(ctx, folder.ID)
	if err != nil {
		return err
	}
	if replaces != nil && replaces.State.Waiting() {
		delete(writers, replaces.ID)
	}
	if id, state := mvp.UnawaitedWriter(t, writers); id != "" {
		return mvp.CheckpointsInUse(folder.ID, id, state)
	}
	return nil
}

// resumeFromFolder makes t resume from the checkpoint folder of task folder, in its effective spec too (what the
// Ray job is built from).
func resumeFromFolder(t *mvp.Task, folder string) error {
	if err := editSpec(t, func(spec *jobspec.Spec) { spec.ResumeFrom = folder }); err != nil {
		return err
	}
	t.ResumeFrom = folder
	return nil
}

// resumeWarning is the warning of a task that resumes from a checkpoint folder with no checkpoint in it and no run
// it waits for that may still write one: verl's resume_mode=auto then starts from step 0, which the user did not
// ask for by resuming. "" otherwise, and when the folder cannot be read here (shared_root's trouble is said by
// /healthz).
func (s *Server) resumeWarning(ctx context.Context, t *mvp.Task) string {
	if t.ResumeFrom == "" || s.Files.Root == "" {
		return ""
	}
	step, err := s.Files.LatestCheckpoint(t.ResumeFrom)
	if err != nil || step > 0 {
		return ""
	}
	writers, err := s.Store.CheckpointWriters(ctx, t.ResumeFrom)
	if err != nil {
		return ""
	}
	delete(writers, t.ID) // stored already, it is one
	if len(writers) > 0 {
		return "" // one that t waits for (any other refused it) may save one before t starts
	}
	dir, _ := s.Files.TaskDir(t.ResumeFrom)
	return fmt.Sprintf("it resumes from %s's checkpoints, but there is no checkpoint in %s (no %s naming a "+
		"global_step_N folder there), so its run starts from step 0: verl saves one every trainer.save_freq steps, "+
		"and a run that ends before its first save leaves none", t.ResumeFrom,
		filepath.Join(dir, taskfs.CheckpointFolder), taskfs.CheckpointTracker)
}

// stillStopping refuses a resume from a task that ended (CANCELED is recorded at once) while its latest attempt's
// Ray job may still run: Ray's stop wait (SIGTERM, then SIGKILL after runtime_grace_s), a stop call that failed, or
// a submit whose answer was lost. Its run may still write the checkpoints the new run would start from, in the same
// folder: the two would run at once. It has ended once the loop recorded the attempt's end.
func stillStopping(t *mvp.Task, field string) error {
	a := t.Latest()
	if a == nil || a.RayStatus.Terminal() || a.EndTime != nil {
		return nil
	}
	return mvp.Errorf(mvp.CodeConflict, field, "task %s is %s but its Ray job %s has not stopped yet: a run can resume "+
		"only once the run it resumes from stopped (its checkpoints must not be written meanwhile); try again once it "+
		"has stopped (within runtime_grace_s), or have the new task start after it, which the scheduler holds until "+
		"the job has stopped: mvp resubmit %s --resume -e after_any=%s (after_any: [%s] in a jobspec)",
		t.ID, t.State, a.RaySubmissionID, t.ID, t.ID, t.ID)
}
