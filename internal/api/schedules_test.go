package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

const scheduleJobspec = `{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/m","train_file":"/t","val_file":"/v"}`

type movableClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *movableClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *movableClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestScheduleBadRequests: every bad schedule is a 400 naming its field, and nothing is stored.
func TestScheduleBadRequests(t *testing.T) {
	base, db := newServer(t)
	good := map[string]any{"name": "nightly", "cron": "0 2 * * *", "timezone": "Europe/Berlin", "overlap": "skip",
		"jobspec": json.RawMessage(scheduleJobspec)}
	with := func(k string, v any) string {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, c := range []struct{ body, field, says string }{
		{`[1]`, "", "JSON object"},
		{`{"name":"x","cronn":"@daily"}`, "", "unknown field"},
		{with("name", "a") + ` {"name":"b"}`, "", "more than one JSON value"},
		{with("name", "Nightly Eval"), "name", "[a-z0-9-]"},
		{with("name", nil), "name", "[a-z0-9-]"},
		{with("cron", nil), "cron", "required"},
		{with("cron", "every day"), "cron", "5 fields"},
		{with("cron", "@every 100ms"), "cron", "at least 1s"},
		{with("cron", "0 0 30 2 *"), "cron", "never"}, // 30 February
		// Control characters the parser takes as spaces, kept as written and shown (a table's rows broken).
		{with("cron", "0 2 * * *\r\v\f"), "cron", "control character"},
		{with("cron", "0\x1b[2J 2 * * *"), "cron", "control character"},
		{with("timezone", "Nowhere/City"), "timezone", "IANA"},
		{with("overlap", "parallel"), "overlap", "skip"},
		{with("jobspec", nil), "jobspec", "required"},
		{with("jobspec", "workload: ppo"), "jobspec", "JSON object"},
		{with("jobspec", json.RawMessage(strings.Replace(scheduleJobspec, `"nnodes":1`, `"nnodes":0`, 1))), "jobspec.nnodes", ""},
		{with("jobspec", json.RawMessage(strings.Replace(scheduleJobspec, `"model_path":"/m",`, ``, 1))), "jobspec.model_path", ""},
	} {
		resp, b := do(t, base, "POST", "/api/v2/schedules", "application/json", c.body, nil)
		var eb api.ErrorBody
		_ = json.Unmarshal(b, &eb)
		if resp.StatusCode != 400 || eb.Error.Field != c.field || !strings.Contains(eb.Error.Message, c.says) {
			t.Errorf("%s: %d %s", c.body, resp.StatusCode, b)
		}
	}
	if list, err := db.ListSchedules(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("bad requests stored schedules: %v %v", list, err)
	}
	for _, p := range []string{"/api/v2/schedules/nope", "/api/v2/schedules/nope/pause", "/api/v2/schedules/..%2F..%2Fetc"} {
		method := "GET"
		if strings.HasSuffix(p, "pause") {
			method = "POST"
		}
		if resp, b := do(t, base, method, p, "", "", nil); resp.StatusCode != 404 {
			t.Errorf("%s %s: %d %s", method, p, resp.StatusCode, b)
		}
	}
}

// TestScheduleLifecycle: create, list with next_run_at, a run when the (injected) clock reaches it, the task it
// made linked to it, pause (no next run, no runs), resume, delete.
func TestScheduleLifecycle(t *testing.T) {
	clock := &movableClock{t: time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC)}
	m := servicetest.Start(t, &service.Main{Clock: clock, Cluster: servicetest.OneNode(0)})
	c := m.Client()
	ctx := context.Background()
	sc, _, err := c.CreateSchedule(ctx, api.ScheduleRequest{Name: "nightly", Cron: "*/5 * * * *", JobSpec: json.RawMessage(scheduleJobspec)})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Timezone != "UTC" || sc.Overlap != mvp.OverlapSkip || sc.NextRunAt == nil ||
		!sc.NextRunAt.Equal(time.Date(2026, 1, 1, 10, 5, 0, 0, time.UTC)) {
		t.Fatalf("created: %+v (next %v)", sc, sc.NextRunAt)
	}
	if _, _, err := c.CreateSchedule(ctx, api.ScheduleRequest{Name: "nightly", Cron: "@daily", JobSpec: json.RawMessage(scheduleJobspec)}); !errors.Is(err, mvp.ErrConflict) && !isStatus(err, 409) {
		t.Errorf("second schedule of the same name: %v", err)
	}
	list, _, err := c.Schedules(ctx)
	if err != nil || len(list) != 1 || list[0].NextRunAt == nil {
		t.Fatalf("list: %+v %v", list, err)
	}

	clock.add(5 * time.Minute) // 10:05:30: the 10:05 run is due
	var got *mvp.Schedule
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got, _, err = c.Schedule(ctx, "nightly"); err != nil {
			t.Fatal(err)
		}
		if len(got.TaskIDs) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got.TaskIDs) != 1 || got.LastTaskID != got.TaskIDs[0] || !got.NextRunAt.Equal(time.Date(2026, 1, 1, 10, 10, 0, 0, time.UTC)) {
		t.Fatalf("after the run: %+v", got)
	}
	task, _, err := c.Get(ctx, got.TaskIDs[0])
	if err != nil || task.Workload != mvp.WorkloadPPO {
		t.Fatalf("the task made: %+v %v", task, err)
	}

	paused, _, err := c.SetSchedulePaused(ctx, "nightly", true)
	if err != nil || !paused.Paused || paused.NextRunAt != nil {
		t.Fatalf("paused: %+v %v", paused, err)
	}
	resumed, _, err := c.SetSchedulePaused(ctx, "nightly", false)
	if err != nil || resumed.Paused || resumed.NextRunAt == nil {
		t.Fatalf("resumed: %+v %v", resumed, err)
	}
	if _, err := c.DeleteSchedule(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Schedule(ctx, "nightly"); !isStatus(err, 404) {
		t.Errorf("after delete: %v", err)
	}
	if _, _, err := c.Get(ctx, task.ID); err != nil {
		t.Errorf("the schedule's task went with it: %v", err)
	}
}

func isStatus(err error, code int) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status == code
}

// TestGetScheduleAlwaysHasTaskIDs: specs/api.md gives GET of one schedule "with task_ids: the tasks it made"; a
// schedule that had made none answered without the key (`jq '.task_ids[]'` failed: cannot iterate over null;
// Python's d["task_ids"] a KeyError). It is an empty list then; the list of schedules still leaves it out.
func TestGetScheduleAlwaysHasTaskIDs(t *testing.T) {
	base, _ := newServer(t)
	body := `{"name":"nightly","cron":"0 2 * * *","jobspec":` + scheduleJobspec + `}`
	if resp, b := do(t, base, "POST", "/api/v2/schedules", "application/json", body, nil); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	resp, b := do(t, base, "GET", "/api/v2/schedules/nightly", "", "", nil)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(b, &got); resp.StatusCode != 200 || err != nil {
		t.Fatalf("get: %d %s %v", resp.StatusCode, b, err)
	}
	if ids, ok := got["task_ids"]; !ok || string(ids) != "[]" {
		t.Errorf("task_ids of a schedule that made no task = %s (present %v), want []: %s", ids, ok, b)
	}
	_, b = do(t, base, "GET", "/api/v2/schedules", "", "", nil)
	if strings.Contains(string(b), "task_ids") {
		t.Errorf("the list names task_ids, which only GET of one schedule gives: %s", b)
	}
}
