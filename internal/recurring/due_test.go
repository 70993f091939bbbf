package recurring

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestDue(t *testing.T) {
	running := &mvp.Task{ID: "mvp2-ppo-20260101-100000-aaaa", State: mvp.StateRunning}
	waiting := &mvp.Task{ID: "mvp2-ppo-20260101-100000-bbbb", State: mvp.StatePendingResources}
	done := &mvp.Task{ID: "mvp2-ppo-20260101-100000-cccc", State: mvp.StateSucceeded}
	cases := []struct {
		name            string
		cron, tz        string
		overlap         mvp.Overlap
		paused          bool
		last, now       string
		prev            *mvp.Task
		run, submit     bool
		fire, next      string
		missed          int
		cancel, outcome string
	}{
		{name: "not due yet", cron: "0 * * * *", last: "2026-01-01T10:00:00Z", now: "2026-01-01T10:30:00Z",
			next: "2026-01-01T11:00:00Z"},
		{name: "due on the minute", cron: "0 * * * *", last: "2026-01-01T10:00:00Z", now: "2026-01-01T11:00:00Z",
			run: true, submit: true, fire: "2026-01-01T11:00:00Z", next: "2026-01-01T12:00:00Z", outcome: "submitted"},
		{name: "late by a few seconds: still that run", cron: "0 * * * *", last: "2026-01-01T10:00:00Z", now: "2026-01-01T11:00:07Z",
			run: true, submit: true, fire: "2026-01-01T11:00:00Z", next: "2026-01-01T12:00:00Z"},
		{name: "down across four runs: one catch-up for the latest, three missed", cron: "0 * * * *",
			last: "2026-01-01T10:00:00Z", now: "2026-01-01T14:30:00Z", run: true, submit: true,
			fire: "2026-01-01T14:00:00Z", next: "2026-01-01T15:00:00Z", missed: 3, outcome: "one catch-up run for 4 scheduled times"},
		{name: "paused: nothing, no next run", cron: "0 * * * *", paused: true, last: "2026-01-01T10:00:00Z",
			now: "2026-01-01T14:30:00Z"},
		{name: "skip while the previous task runs", cron: "0 * * * *", overlap: mvp.OverlapSkip, prev: running,
			last: "2026-01-01T10:00:00Z", now: "2026-01-01T11:00:00Z", run: true, fire: "2026-01-01T11:00:00Z",
			next: "2026-01-01T12:00:00Z", outcome: "skipped: the previous task " + running.ID + " is still RUNNING"},
		{name: "skip while the previous task waits", cron: "0 * * * *", overlap: mvp.OverlapSkip, prev: waiting,
			last: "2026-01-01T10:00:00Z", now: "2026-01-01T11:00:00Z", run: true, fire: "2026-01-01T11:00:00Z",
			next: "2026-01-01T12:00:00Z", outcome: "skipped"},
		{name: "skip: the previous task ended", cron: "0 * * * *", overlap: mvp.OverlapSkip, prev: done,
			last: "2026-01-01T10:00:00Z", now: "2026-01-01T11:00:00Z", run: true, submit: true,
			fire: "2026-01-01T11:00:00Z", next: "2026-01-01T12:00:00Z", outcome: "submitted"},
		{name: "queue: submit beside the running one", cron: "0 * * * *", overlap: mvp.OverlapQueue, prev: running,
			last: "2026-01-01T10:00:00Z", now: "2026-01-01T11:00:00Z", run: true, submit: true,
			fire: "2026-01-01T11:00:00Z", next: "2026-01-01T12:00:00Z", outcome: "(overlap: queue)"},
		{name: "replace: cancel the waiting one, then submit", cron: "0 * * * *", overlap: mvp.OverlapReplace, prev: waiting,
			last: "2026-01-01T10:00:00Z", now: "2026-01-01T11:00:00Z", run: true, submit: true, cancel: waiting.ID,
			fire: "2026-01-01T11:00:00Z", next: "2026-01-01T12:00:00Z", outcome: "canceled the previous task"},
		{name: "replace: nothing to cancel once it ended", cron: "0 * * * *", overlap: mvp.OverlapReplace, prev: done,
			last: "2026-01-01T10:00:00Z", now: "2026-01-01T11:00:00Z", run: true, submit: true,
			fire: "2026-01-01T11:00:00Z", next: "2026-01-01T12:00:00Z", outcome: "submitted"},
		{name: "time zone: 02:00 in Berlin is 01:00 UTC in winter", cron: "0 2 * * *", tz: "Europe/Berlin",
			last: "2026-01-01T00:00:00Z", now: "2026-01-01T01:00:00Z", run: true, submit: true,
			fire: "2026-01-01T01:00:00Z", next: "2026-01-02T01:00:00Z"},
		{name: "time zone: and 00:00 UTC in summer", cron: "0 2 * * *", tz: "Europe/Berlin",
			last: "2026-07-01T01:00:00Z", now: "2026-07-02T00:00:00Z", run: true, submit: true,
			fire: "2026-07-02T00:00:00Z", next: "2026-07-03T00:00:00Z"},
		{name: "@every 3s, one period missed", cron: "@every 3s", last: "2026-01-01T10:00:00Z", now: "2026-01-01T10:00:07Z",
			run: true, submit: true, fire: "2026-01-01T10:00:06Z", next: "2026-01-01T10:00:09Z", missed: 1},
		{name: "@every 1s after two days down: the walk stops, the catch-up stands for now", cron: "@every 1s",
			last: "2026-01-01T00:00:00Z", now: "2026-01-03T00:00:00Z", run: true, submit: true,
			fire: "2026-01-03T00:00:00Z", next: "2026-01-03T00:00:01Z", missed: maxWalk},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cr, err := Parse(c.cron, c.tz)
			if err != nil {
				t.Fatal(err)
			}
			overlap := c.overlap
			if overlap == "" {
				overlap = mvp.OverlapSkip
			}
			s := &mvp.Schedule{Name: "nightly", Cron: c.cron, Timezone: c.tz, Overlap: overlap, Paused: c.paused,
				LastFireAt: at(c.last)}
			d := Due(Input{Now: at(c.now), Schedule: s, Cron: cr, Previous: c.prev})
			if d.Run != c.run || d.Submit != c.submit || d.Missed != c.missed || d.Cancel != c.cancel {
				t.Fatalf("got run=%v submit=%v missed=%d cancel=%q, want run=%v submit=%v missed=%d cancel=%q (%s)",
					d.Run, d.Submit, d.Missed, d.Cancel, c.run, c.submit, c.missed, c.cancel, d.Outcome)
			}
			if c.fire != "" && !d.FireAt.Equal(at(c.fire)) {
				t.Errorf("fire at %s, want %s", d.FireAt.UTC(), c.fire)
			}
			if c.next == "" && !d.Next.IsZero() {
				t.Errorf("next %s, want none", d.Next)
			}
			if c.next != "" && !d.Next.Equal(at(c.next)) {
				t.Errorf("next %s, want %s", d.Next.UTC(), c.next)
			}
			if !strings.Contains(d.Outcome, c.outcome) {
				t.Errorf("outcome %q lacks %q", d.Outcome, c.outcome)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, ok := range []string{"@every 3s", "@hourly", "@daily", "*/5 * * * *", "0 2 * * 1-5"} {
		if _, err := Parse(ok, "Europe/Berlin"); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, c := range []struct{ cron, tz, field, says string }{
		{"* * *", "", "cron", "5 fields"},
		{"61 * * * *", "", "cron", "5 fields"},
		// The field at fault is named, with its range (robfig/cron said "end of range (61) above maximum (59): 61").
		{"61 * * * *", "", "cron", "its minute field (61) must be from 0 to 59"},
		{"0 2 * 13 *", "", "cron", "its month field (13) must be from 1 to 12"},
		{"0 2 * * 1-9", "", "cron", "its weekday field (1-9) must be from 0 to 6"},
		{"0 x * * *", "", "cron", "its hour field (x)"},
		{"@every 500ms", "", "cron", "at least 1s"},
		{"CRON_TZ=UTC 0 * * * *", "", "cron", "timezone field"},
		{"0 * * * *", "Mars/Olympus", "timezone", "IANA"},
		{"0 * * * *", "../../etc/passwd", "timezone", "IANA"},
		// Go's name for the server's own zone: a schedule would move with the machine mvp runs on.
		{"0 * * * *", "Local", "timezone", "IANA"},
	} {
		_, err := Parse(c.cron, c.tz)
		var e *mvp.Error
		if err == nil || !errors.As(err, &e) || e.Code != mvp.CodeInvalid || e.Field != c.field || !strings.Contains(e.Message, c.says) {
			t.Errorf("Parse(%q, %q) = %v; want an invalid %s error saying %q", c.cron, c.tz, err, c.field, c.says)
		}
	}
	// NextRun: the next scheduled time, none while paused.
	cr, _ := Parse("0 * * * *", "")
	s := &mvp.Schedule{LastFireAt: at("2026-01-01T10:00:00Z")}
	if n := NextRun(s, cr); n == nil || !n.Equal(at("2026-01-01T11:00:00Z")) {
		t.Errorf("next run %v", n)
	}
	s.Paused = true
	if n := NextRun(s, cr); n != nil {
		t.Errorf("paused: next run %v", n)
	}
}

// fires steps Due a minute at a time from from to to, as the loop does, and returns the fire times.
func fires(t *testing.T, cron, tz, from, to string) []time.Time {
	t.Helper()
	c, err := Parse(cron, tz)
	if err != nil {
		t.Fatal(err)
	}
	s := &mvp.Schedule{Name: "n", Cron: cron, Timezone: tz, LastFireAt: at(from)}
	var out []time.Time
	for now := at(from); !now.After(at(to)); now = now.Add(time.Minute) {
		if d := Due(Input{Now: now, Schedule: s, Cron: c}); d.Run {
			out = append(out, d.FireAt.UTC())
			s.LastFireAt = d.FireAt
		}
	}
	return out
}

// TestDaylightSavingTime: a daily 02:00 (or 02:30) in Europe/Berlin ran twice on the night the clocks go back
// (02:00 CEST and 02:00 CET) and not at all on the night they go forward (02:00–03:00 does not exist). As cron
// does it: a time the clock passes twice runs once, the first time; a time the clock skips runs once, at the
// change. Every-N-minutes expressions follow real time through both.
func TestDaylightSavingTime(t *testing.T) {
	// Clocks go back on 2026-10-25 at 01:00 UTC (03:00 CEST → 02:00 CET).
	got := fires(t, "0 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z")
	want := []time.Time{at("2026-10-25T00:00:00Z"), at("2026-10-26T01:00:00Z")}
	if !slices.Equal(got, want) {
		t.Errorf("fall back, 0 2 * * *: %v, want %v", got, want)
	}
	got = fires(t, "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z")
	want = []time.Time{at("2026-10-25T00:30:00Z"), at("2026-10-26T01:30:00Z")}
	if !slices.Equal(got, want) {
		t.Errorf("fall back, 30 2 * * *: %v, want %v", got, want)
	}
	// Clocks go forward on 2026-03-29 at 01:00 UTC (02:00 CET → 03:00 CEST).
	got = fires(t, "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", "2026-03-30T12:00:00Z")
	want = []time.Time{at("2026-03-29T01:00:00Z"), at("2026-03-30T00:30:00Z")}
	if !slices.Equal(got, want) {
		t.Errorf("spring forward, 30 2 * * *: %v, want %v", got, want)
	}
	// Every 30 minutes: real time, straight through the repeated hour (4 runs from 00:00 to 01:30 UTC).
	got = fires(t, "*/30 * * * *", "Europe/Berlin", "2026-10-24T23:45:00Z", "2026-10-25T01:40:00Z")
	if len(got) != 4 {
		t.Errorf("fall back, */30: %v", got)
	}
	// Santiago moves its clocks at midnight: @daily's 00:00 does not exist on 2026-09-06 and runs at the change.
	got = fires(t, "@daily", "America/Santiago", "2026-09-04T12:00:00Z", "2026-09-07T12:00:00Z")
	if want := []time.Time{at("2026-09-05T04:00:00Z"), at("2026-09-06T04:00:00Z"), at("2026-09-07T03:00:00Z")}; !slices.Equal(got, want) {
		t.Errorf("Santiago @daily: %v, want %v", got, want)
	}
	// A zone without the change is untouched.
	got = fires(t, "0 2 * * *", "UTC", "2026-10-24T12:00:00Z", "2026-10-26T12:00:00Z")
	if want := []time.Time{at("2026-10-25T02:00:00Z"), at("2026-10-26T02:00:00Z")}; !slices.Equal(got, want) {
		t.Errorf("UTC: %v", got)
	}
}
