package service_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestAHeadOfAFollowedLogDoesNotFollow: HEAD is GET without the body, and the API serves it wherever it serves GET;
// a HEAD of …/logs?follow=true ran the whole follow with its body thrown away, so it held the connection (and a
// follow and a stream from Ray) until the attempt ended. It answers the headers of the log as it is now.
func TestAHeadOfAFollowedLogDoesNotFollow(t *testing.T) {
	ray := servicetest.NewRay()
	id := "mvp2-ppo-20251223-143201-0b1f"
	m, at, att := runningInRay(t, ray, id)
	up := *att
	up.RayStatus, up.DriverNodeID = mvp.RayRunning, "w1" // as the loop records a running attempt: followed by a stream
	if err := m.Store().Apply(context.Background(), mvp.Change{TaskID: id, From: mvp.StateSubmitting,
		To: mvp.StateRunning, At: at, AttemptUpdate: &up}); err != nil {
		t.Fatal(err)
	}
	ray.AddLog(att.RaySubmissionID, "step 1\n")
	req, err := http.NewRequest(http.MethodHead, m.URL()+"/api/v2/tasks/"+id+"/logs?follow=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+m.APIToken())
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("HEAD of a followed running log: %v (it followed the attempt?)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(api.LogAttemptHeader) != "1" {
		t.Errorf("HEAD: %s, %s %q; want 200 naming attempt 1", resp.Status, api.LogAttemptHeader, resp.Header.Get(api.LogAttemptHeader))
	}
	if _, follows := ray.LogReads(); follows != 0 {
		t.Errorf("a HEAD opened %d stream(s) of the log from Ray: it follows the attempt, its body thrown away", follows)
	}
}
