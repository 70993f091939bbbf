package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestALogRayLostIsNotServedAsWhole: an attempt whose Ray job vanished (the Ray head restarted under it: INFRA,
// log_kept false) has only the copy mvp made while it ran (every v2.ray.log_copy_s) in its folder. `mvp logs
// --attempt 1` printed that copy and exited 0, as if it were the whole log, though what the driver wrote after the
// last copy is gone (seen on the local cluster: a copy ending at step 1 of a run that had reached step 10). The
// answer ends with the trailer cut-short, as a log whose rest Ray cannot give, with the reason in X-Mvp-Log-Why,
// and the client's error says that the rest is lost, not to run the command again.
func TestALogRayLostIsNotServedAsWhole(t *testing.T) {
	ray := servicetest.NewRay()
	m := servicetest.Start(t, &service.Main{Ray: ray})
	task := submitGoodTask(t, m)
	sub, want := runUntilCopied(t, m, ray, task.ID)
	ray.AddLog(sub, "step 2\n")     // after the last copy: lost with the job
	ray.DeleteJob(t.Context(), sub) // the Ray head restarted: the job is gone
	waitEndedUnkept(t, m, task.ID, "its job vanished")
	resp, body := do(t, m.URL(), "GET", "/api/v2/tasks/"+task.ID+"/logs?attempt=1", "", "", nil)
	if string(body) != want || resp.Trailer.Get(api.LogEndTrailer) != api.LogEndCut ||
		!strings.Contains(resp.Trailer.Get(api.LogWhyTrailer), "lost") {
		t.Errorf("status %d, body %q, trailers %v: want the copy, then %s: %s and why", resp.StatusCode, body,
			resp.Trailer, api.LogEndTrailer, api.LogEndCut)
	}
	// A follower that had read the stream past the copy (`mvp logs -f` cut off and asking again from its offset,
	// or the Ray door's tail) gets nothing more: that is lost too, not the log's end.
	resp, body = do(t, m.URL(), "GET", fmt.Sprintf("/api/v2/tasks/%s/logs?attempt=1&offset=%d", task.ID, len(want)+7), "", "", nil)
	if len(body) != 0 || resp.Trailer.Get(api.LogEndTrailer) != api.LogEndCut ||
		!strings.Contains(resp.Trailer.Get(api.LogWhyTrailer), "lost") {
		t.Errorf("from offset %d, past the copy: status %d, body %q, trailers %v: want nothing, then %s: %s and why",
			len(want)+7, resp.StatusCode, body, resp.Trailer, api.LogEndTrailer, api.LogEndCut)
	}
	var out bytes.Buffer
	err := m.Client().Logs(t.Context(), task.ID, 1, false, &out)
	if out.String() != want || err == nil || !strings.Contains(err.Error(), "lost") ||
		strings.Contains(err.Error(), "run the same command again") {
		t.Errorf("client: %q, %v; want the copy and an error saying the rest is lost", out.String(), err)
	}
}

// submitGoodTask submits goodSpec to m and returns the task the answer gives.
func submitGoodTask(t *testing.T, m *service.Main) mvp.Task {
	t.Helper()
	raw, err := m.Client().Submit(t.Context(), []byte(goodSpec), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	return task
}

// waitEndedUnkept waits (20 s at most) until attempt 1 of task id has ended, and fails the test if its log was kept
// meanwhile; why says what ended it.
func waitEndedUnkept(t *testing.T, m *service.Main, id, why string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := m.Store().GetTask(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if a := got.Attempt(1); a != nil && a.RayStatus.Terminal() {
			if a.LogKept {
				t.Fatalf("attempt 1 has its log kept although %s: %+v", why, a)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt 1 did not end after %s: %+v", why, got.Attempt(1))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runUntilCopied runs attempt 1 of task id in ray, its driver having written "step 1", until mvp has copied its
// running log to the task folder (at once when it sees it run, then every v2.ray.log_copy_s), and returns the
// attempt's submission id and that copy.
func runUntilCopied(t *testing.T, m *service.Main, ray *servicetest.Ray, id string) (sub, copied string) {
	t.Helper()
	sub = mvp.SubmissionID(id, 1)
	ray.WaitJob(t, sub)
	ray.AddLog(sub, "step 1\n")
	ray.Set(sub, mvp.RayRunning)
	copyPath := filepath.Join(m.Config.SharedRoot, "jobs", id, "attempts", "a01", "driver.log")
	copied = "log of " + sub + "\nstep 1\n"
	deadline := time.Now().Add(20 * time.Second)
	for b, _ := os.ReadFile(copyPath); string(b) != copied; b, _ = os.ReadFile(copyPath) {
		if time.Now().After(deadline) {
			t.Fatalf("the running log was not copied: %q", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return sub, copied
}
