package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// slowStopRay is Ray during its stop wait: a job asked to stop goes on running (SIGTERM, then SIGKILL after
// runtime_grace_s), as a driver that saves a checkpoint on SIGTERM does.
type slowStopRay struct{ *servicetest.Ray }

func (slowStopRay) StopJob(context.Context, string) error { return nil }

// canceledWhileRunning starts a service whose Ray keeps a job running when asked to stop it (slowStopRay), runs
// goodSpec's task and cancels it: CANCELED, its job still RUNNING until the test sets it STOPPED.
func canceledWhileRunning(t *testing.T) (*service.Main, *servicetest.Ray, *mvp.Task) {
	t.Helper()
	ray := servicetest.NewRay()
	m := servicetest.Start(t, &service.Main{Ray: slowStopRay{ray}})
	c := m.Client()
	ctx := context.Background()
	raw, err := c.Submit(ctx, []byte(goodSpec), false)
	if err != nil {
		t.Fatal(err)
	}
	var origin mvp.Task
	_ = json.Unmarshal(raw, &origin)
	sid := mvp.SubmissionID(origin.ID, 1)
	ray.WaitJob(t, sid)
	ray.Set(sid, mvp.RayRunning)
	eventually(t, "the origin runs", func() error {
		got, _, err := c.Get(ctx, origin.ID)
		if err == nil && got.State != mvp.StateRunning {
			err = errors.New(string(got.State))
		}
		return err
	})
	if _, _, err := c.Cancel(ctx, origin.ID); err != nil {
		t.Fatal(err)
	}
	return m, ray, &origin
}

// TestAResumeWaitsForTheCanceledRunToStop: a cancel records CANCELED at once and then asks Ray to stop the job,
// which runs on for its stop wait (or longer, while the stop call fails). A resume taken meanwhile started a second
// run in the same checkpoint folder while the first still wrote there: two runs of one training at once. The
// origin has not ended until its attempt has; the door says so too (raycompat's ended).
func TestAResumeWaitsForTheCanceledRunToStop(t *testing.T) {
	m, ray, origin := canceledWhileRunning(t)
	c := m.Client()
	ctx := context.Background()
	sid := mvp.SubmissionID(origin.ID, 1)
	var e *mvp.Error
	if _, _, err := c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true}); !errors.As(err, &e) || e.Code != mvp.CodeConflict ||
		!strings.Contains(err.Error(), "-e after_any="+origin.ID) {
		// The way out is named: mvp wait has returned already (CANCELED), so "wait for it to stop" had no verb.
		t.Errorf("--resume of a canceled task whose job still runs: %v, want 409 naming -e after_any=%s", err, origin.ID)
	}
	if resp, body := do(t, m.URL(), "POST", "/api/v2/tasks", "application/yaml", goodSpec+"resume_from: "+origin.ID+"\n", nil); resp.StatusCode != 409 ||
		!strings.Contains(string(body), "after_any") {
		t.Errorf("resume_from a canceled task whose job still runs: %d %s, want 409", resp.StatusCode, body)
	}
	// Once Ray reports the job stopped (and the loop recorded it), the resume is taken.
	ray.Set(sid, mvp.RayStopped)
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, _, err := c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true})
		if err == nil {
			break
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "stop") {
			t.Fatalf("--resume once the job stopped: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestANextSegmentMayBeTakenWhileTheRunStops: a resume that starts after the canceled run (after_any) cannot run
// beside it, since the scheduler holds it until the run's Ray job has stopped (TestAfterAnyWaitsForAStoppingRun);
// it was refused as "still stopping" all the same, on both routes, so a user chaining segments had to poll. It is
// taken now, and held until the job stops; without the dependency it is still refused.
func TestANextSegmentMayBeTakenWhileTheRunStops(t *testing.T) {
	m, ray, origin := canceledWhileRunning(t)
	c := m.Client()
	ctx := context.Background()
	sid := mvp.SubmissionID(origin.ID, 1)
	var e *mvp.Error
	if _, _, err := c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true}); !errors.As(err, &e) || e.Code != mvp.CodeConflict {
		t.Errorf("--resume of a canceled task whose job still runs, not after it: %v, want 409", err)
	}
	if _, err := c.ResubmitDryRun(ctx, origin.ID, api.ResubmitRequest{Resume: true, Set: []string{"after_any=" + origin.ID}}); err != nil {
		t.Errorf("a dry run of --resume -e after_any=%s while its job stops: %v", origin.ID, err)
	}
	if resp, body := do(t, m.URL(), "POST", "/api/v2/tasks?dry_run=true", "application/yaml",
		goodSpec+"resume_from: "+origin.ID+"\nafter_any: ["+origin.ID+"]\n", nil); resp.StatusCode != 200 {
		t.Errorf("a dry run of resume_from with after_any while its job stops: %d %s, want 200", resp.StatusCode, body)
	}
	next, _, err := c.Resubmit(ctx, origin.ID, api.ResubmitRequest{Resume: true, Set: []string{"after_any=" + origin.ID}})
	if err != nil {
		t.Fatalf("--resume -e after_any=%s while its job stops: %v", origin.ID, err)
	}
	// Held while the job stops: no attempt is sent to Ray.
	eventually(t, "the next segment is held", func() error {
		got, _, err := c.Get(ctx, next.ID)
		if err == nil && (got.State != mvp.StatePendingResources || !strings.Contains(got.PendingReason, "stopping")) {
			err = fmt.Errorf("%s %q", got.State, got.PendingReason)
		}
		return err
	})
	for _, s := range ray.Submissions() {
		if s.SubmissionID == mvp.SubmissionID(next.ID, 1) {
			t.Fatalf("the next segment was sent to Ray while %s's job still ran", origin.ID)
		}
	}
	ray.Set(sid, mvp.RayStopped)
	ray.WaitJob(t, mvp.SubmissionID(next.ID, 1))
}
