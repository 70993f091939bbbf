package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
)

// TestAUserFollowsBoundedlyManyLogsAtOnce: each follow of a log holds a goroutine that reads the database every
// poll (and, while the attempt runs, a stream from Ray's node agent) for as long as the connection stays open, so a
// named user's token could hold thousands of them for the price of idle connections. A user may follow at most
// api.MaxFollowsPerUser logs at once: one more is 429 too_many; one that ends frees its place. The operator (whose
// token the web page follows with) is not held by a user's follows.
func TestAUserFollowsBoundedlyManyLogsAtOnce(t *testing.T) {
	base := usersServer(t)
	call := func(tok string) string {
		t.Helper()
		resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec, as(tok))
		if resp.StatusCode != 201 {
			t.Fatalf("submit: %d %s", resp.StatusCode, b)
		}
		var m struct {
			TaskID string `json:"task_id"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m.TaskID
	}
	call(bobToken)            // takes the node
	waiting := call(bobToken) // waits: a follow of it waits for its first attempt, holding its connection
	follow := func(ctx context.Context, tok string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v2/tasks/"+waiting+"/logs?follow=true", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	// Twice as many follows as a user may hold at once, all kept open: as many as the cap are held, the rest refused.
	held, release := context.WithCancel(context.Background())
	t.Cleanup(release)
	codes := make(chan int, 2*api.MaxFollowsPerUser)
	var wg sync.WaitGroup
	for range 2 * api.MaxFollowsPerUser {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := follow(held, bobToken) // a held one ends with the context: code 0
			codes <- code
		}()
	}
	refused := 0
	for deadline := time.After(30 * time.Second); refused < api.MaxFollowsPerUser; {
		select {
		case code := <-codes:
			if code != http.StatusTooManyRequests {
				t.Fatalf("a follow of bob's answered %d while the others were held; want 429 or held", code)
			}
			refused++
		case <-deadline:
			t.Fatalf("%d of bob's %d follows were refused with 429; want %d", refused, 2*api.MaxFollowsPerUser,
				api.MaxFollowsPerUser)
		}
	}
	select {
	case code := <-codes:
		t.Fatalf("one more of bob's follows answered %d; want %d held and the rest refused", code, api.MaxFollowsPerUser)
	case <-time.After(time.Second):
	}
	// The operator is not held by bob's follows (it waits: its request times out rather than being refused).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if code, _ := follow(ctx, token); code == http.StatusTooManyRequests {
		t.Errorf("the operator's follow was refused with 429")
	}
	cancel()
	release()
	wg.Wait()
	// Once bob's follows ended, he may follow again.
	freed := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !freed; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		code, err := follow(ctx, bobToken)
		cancel()
		freed = err != nil && code == 0 // held open (timed out), not refused
	}
	if !freed {
		t.Errorf("bob's follows stayed refused after his earlier ones ended")
	}
}

// TestAJSONJobspecWithAnEscapedPairIsTaken: a JSON jobspec with a character outside the Basic Multilingual Plane
// escaped as its UTF-16 surrogate pair (what Python's json.dumps writes by default) holds that character, as
// resubmit and secrets take it; the YAML parser the jobspec goes through refused the escape ("not valid YAML or
// JSON"). A lone half is still refused, saying what to send instead.
func TestAJSONJobspecWithAnEscapedPairIsTaken(t *testing.T) {
	base := usersServer(t)
	body := `{"workload":"ppo","nnodes":1,"n_gpus_per_node":4,"model_path":"/m","train_file":"/t","val_file":"/v","env":{"X":"\ud83d\ude00"}}`
	resp, b := do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/json", body, nil)
	if resp.StatusCode != 200 || !strings.Contains(string(b), "😀") {
		t.Errorf("a JSON jobspec with an escaped pair: %d %s; want 200 with the character", resp.StatusCode, b)
	}
	lone := strings.Replace(body, `\ude00`, ``, 1)
	resp, b = do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/json", lone, nil)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "surrogate") {
		t.Errorf("a JSON jobspec with a lone half: %d %s; want 400 saying so", resp.StatusCode, b)
	}
}
