package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestTheDoorsTailOfALostLogIsNotClosedAsComplete: a Ray door job's Ray job vanishes (the Ray head restarted) after
// the tail has sent every line of mvp's last running copy. Read on from there, the copy gives nothing more and
// Ray has no job: the tail closed normally, and Ray's client (`ray job logs -f`) took the lines as the whole log,
// though what the driver wrote after the copy is lost. It is dropped (1006), as for a log cut short.
func TestTheDoorsTailOfALostLogIsNotClosedAsComplete(t *testing.T) {
	ray := servicetest.NewRay()
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.MaxInfraRetries = 0 // the lost job's attempt is the task's last: its log ends the tail
	m := servicetest.Start(t, &service.Main{Ray: ray, Config: cfg})
	resp, body := do(t, m.URL(), "POST", "/ray/api/jobs/", "application/json", `{"entrypoint":"python train.py"}`, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("ray submit: %d %s", resp.StatusCode, body)
	}
	var rj struct {
		SubmissionID string `json:"submission_id"`
	}
	if err := json.Unmarshal(body, &rj); err != nil {
		t.Fatal(err)
	}
	sub, want := runUntilCopied(t, m, ray, rj.SubmissionID)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(m.URL(), "http")+"/ray/api/jobs/"+rj.SubmissionID+"/logs/tail",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + m.Token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var got strings.Builder
	for got.String() != want {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("the tail ended before it sent the running log: %q, %v", got.String(), err)
		}
		got.Write(data)
	}
	ray.AddLog(sub, "step 2\n")     // after the last copy: lost with the job
	ray.DeleteJob(t.Context(), sub) // the Ray head restarted: the job is gone
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatalf("the tail did not end within its time after the job vanished (sent %q)", got.String())
			}
			if st := websocket.CloseStatus(err); st != -1 {
				t.Errorf("the tail of a log lost with its Ray job ended with close status %d (%v) after %q; want the "+
					"connection dropped (1006), as for a log cut short", st, err, got.String())
			}
			return
		}
		got.Write(data)
	}
}
