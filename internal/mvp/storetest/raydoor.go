package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// rayTask returns a QUEUED ray_job task without a gang, known to the Ray door by sid; it is not stored.
func (h *harness) rayTask(at time.Time, sid string) *mvp.Task {
	h.seq++
	req := `{"entrypoint":"echo hi","submission_id":"` + sid + `"}`
	return &mvp.Task{ID: fmt.Sprintf("mvp2-ray_job-%s-%08x", at.Format("20060102-150405"), h.seq),
		Workload: mvp.WorkloadRayJob, Name: "ray-job", State: mvp.StateQueued, SubmissionID: sid,
		Driver: map[string]float64{"CPU": 1.5, "memory": 1 << 30}, JobSpecYAML: req, SpecJSON: json.RawMessage(req),
		CreatedAt: at, UpdatedAt: at}
}

// testRayDoorSubmissionIDs: a ray_job task (no gang, its own driver resources) round-trips and is found by its
// submission id; a second task with the same id is refused with Ray's words and not stored; a task that has not
// ended cannot be deleted from the door; an ended one can, after which its id is free again, it is no longer found
// by it, and it is still a task with a DOOR_DELETED event.
func testRayDoorSubmissionIDs(h *harness) {
	t0 := time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)
	a := h.rayTask(t0, "job-1")
	h.must(h.s.CreateTask(h.ctx, a))
	got, err := h.s.TaskBySubmissionID(h.ctx, "job-1")
	h.must(err)
	h.checkTask("by submission id", got, a)
	if !reflect.DeepEqual(got.Driver, a.Driver) || got.SubmissionID != "job-1" || got.DoorDeleted {
		h.t.Errorf("door fields: %+v", got)
	}
	dup := h.rayTask(t0, "job-1")
	err = h.s.CreateTask(h.ctx, dup)
	if mvp.ErrorCode(err) != mvp.CodeConflict || !strings.Contains(err.Error(), "Job with submission_id job-1 already exists") {
		h.t.Errorf("a second job-1: %v", err)
	}
	if _, err := h.s.GetTask(h.ctx, dup.ID); mvp.ErrorCode(err) != mvp.CodeNotFound {
		h.t.Errorf("the refused task was stored: %v", err)
	}
	if _, err := h.s.TaskBySubmissionID(h.ctx, "job-2"); mvp.ErrorCode(err) != mvp.CodeNotFound {
		h.t.Errorf("unknown submission id: %v", err)
	}
	before := h.snap(a.ID)
	if err := h.s.DeleteFromDoor(h.ctx, a.ID, t0); mvp.ErrorCode(err) != mvp.CodeConflict {
		h.t.Errorf("delete of a queued task: %v", err)
	}
	h.unchanged("a refused delete", before)
	h.apply(mvp.Change{TaskID: a.ID, From: mvp.StateQueued, To: mvp.StateCanceled, At: t0.Add(time.Second)})
	h.must(h.s.DeleteFromDoor(h.ctx, a.ID, t0.Add(2*time.Second)))
	if _, err := h.s.TaskBySubmissionID(h.ctx, "job-1"); mvp.ErrorCode(err) != mvp.CodeNotFound {
		h.t.Errorf("a deleted job is still found: %v", err)
	}
	if kept := h.get(a.ID); !kept.DoorDeleted || kept.State != mvp.StateCanceled {
		h.t.Errorf("the deleted task: %+v", kept)
	}
	if e := h.lastEvent(a.ID); e.Type != mvp.EventDoorDeleted {
		h.t.Errorf("last event %s, want %s", e.Type, mvp.EventDoorDeleted)
	}
	h.must(h.s.CreateTask(h.ctx, dup))
	if got, err := h.s.TaskBySubmissionID(h.ctx, "job-1"); err != nil || got.ID != dup.ID {
		h.t.Errorf("job-1 after the delete: %+v %v", got, err)
	}
	if err := h.s.DeleteFromDoor(h.ctx, "mvp2-ray_job-20251223-143201-ffff", t0); mvp.ErrorCode(err) != mvp.CodeNotFound {
		h.t.Errorf("delete of an unknown task: %v", err)
	}
	// A jobspec task has no submission id and no driver of its own.
	p := h.create(t0)
	if got := h.get(p.ID); got.SubmissionID != "" || got.Driver != nil {
		h.t.Errorf("a jobspec task: %+v", got)
	}
}
