package service_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
	"github.com/mvp2/mvp/internal/web"
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

// TestAHeadOfTheWebPagesFollowedLogDoesNotFollow: the web page's log (/ui/tasks/ID/log) is the API's, asked for
// as a GET whatever the page was asked with: a HEAD of …/log?follow=true followed the attempt to its end, holding a
// stream from Ray for a body thrown away, as a HEAD of the API's log did before.
func TestAHeadOfTheWebPagesFollowedLogDoesNotFollow(t *testing.T) {
	ray := servicetest.NewRay()
	id := "mvp2-ppo-20251223-143201-0b1f"
	m, at, att := runningInRay(t, ray, id)
	up := *att
	up.RayStatus, up.DriverNodeID = mvp.RayRunning, "w1"
	if err := m.Store().Apply(context.Background(), mvp.Change{TaskID: id, From: mvp.StateSubmitting,
		To: mvp.StateRunning, At: at, AttemptUpdate: &up}); err != nil {
		t.Fatal(err)
	}
	ray.AddLog(att.RaySubmissionID, "step 1\n")
	noRedirect := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(m.URL()+"/ui/login", url.Values{"token": {m.APIToken()}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == web.CookieName {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("login: %s, no session cookie", resp.Status)
	}
	req, err := http.NewRequest(http.MethodHead, m.URL()+"/ui/tasks/"+id+"/log?follow=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(cookie)
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatalf("HEAD of the page's followed running log: %v (it followed the attempt?)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(api.LogAttemptHeader) != "1" {
		t.Errorf("HEAD: %s, %s %q; want 200 naming attempt 1", resp.Status, api.LogAttemptHeader, resp.Header.Get(api.LogAttemptHeader))
	}
	if _, follows := ray.LogReads(); follows != 0 {
		t.Errorf("a HEAD of the page's log opened %d stream(s) of the log from Ray: it follows the attempt", follows)
	}
}
