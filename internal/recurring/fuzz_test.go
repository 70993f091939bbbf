package recurring

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// FuzzParse feeds a schedule's cron expression and time zone, as a user sends them, to Parse, and steps what it
// takes through Next and Due from a fuzzed time. A refusal is an invalid *mvp.Error naming cron or timezone with a
// message; a schedule taken has each next time after the one before (or none), and Due's catch-up run stands for
// a time after the last run and not after now.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		cron, tz string
	}{
		{"@every 3s", ""}, {"@hourly", "Europe/Berlin"}, {"@daily", "America/Santiago"}, {"*/5 * * * *", ""},
		{"0 2 * * 1-5", "Europe/Berlin"}, {"30 2 * * *", "Europe/Berlin"}, {"*/30 * * * *", "Europe/Berlin"},
		{"* * *", ""}, {"61 * * * *", ""}, {"@every 500ms", ""}, {"CRON_TZ=UTC 0 * * * *", ""},
		{"0 * * * *", "Mars/Olympus"}, {"0 * * * *", "../../etc/passwd"}, {"0 * * * *", "Local"},
		{"0 0 30 2 *", "UTC"}, {"0 0 29 2 *", "Australia/Lord_Howe"}, {"@every 1s", ""}, {"TZ=", ""},
	}
	for i, s := range seeds {
		f.Add(s.cron, s.tz, int64(1767225600+i*86400*37), int64(3600*(i+1)))
	}
	f.Fuzz(func(t *testing.T, expr, tz string, from, span int64) {
		c, err := Parse(expr, tz)
		if err != nil {
			var e *mvp.Error
			if !errors.As(err, &e) || e.Code != mvp.CodeInvalid || (e.Field != "cron" && e.Field != "timezone") ||
				strings.TrimSpace(e.Message) == "" {
				t.Fatalf("Parse(%q, %q): %#v, want an invalid *mvp.Error naming cron or timezone", expr, tz, err)
			}
			return
		}
		// From 1970 to about 2200, stepped over at most two days.
		start := time.Unix(0, 0).Add(time.Duration(uint64(from)%(230*365*86400)) * time.Second)
		now := start.Add(time.Duration(uint64(span)%(2*86400)) * time.Second)
		prev := start
		for i := 0; i < 5; i++ {
			n := c.Next(prev)
			if n.IsZero() {
				break
			}
			if !n.After(prev) {
				t.Fatalf("Parse(%q, %q): Next(%s) = %s, not after it", expr, tz, prev.UTC(), n.UTC())
			}
			prev = n
		}
		d := Due(Input{Now: now, Schedule: &mvp.Schedule{Cron: expr, Timezone: tz, LastFireAt: start}, Cron: c})
		if d.Run && (!d.FireAt.After(start) || d.FireAt.After(now)) {
			t.Fatalf("Parse(%q, %q): from %s to %s, a run for %s", expr, tz, start.UTC(), now.UTC(), d.FireAt.UTC())
		}
		if d.Run && !d.Next.IsZero() && !d.Next.After(d.FireAt) {
			t.Fatalf("Parse(%q, %q): a run for %s, the next at %s", expr, tz, d.FireAt.UTC(), d.Next.UTC())
		}
	})
}

// FuzzParseStandard feeds dev.yaml's checkpoint_schedule to ParseStandard: a line, with or without its own TZ= or
// CRON_TZ= zone, is a schedule or an error with a message, never a panic (robfig/cron panics on some).
func FuzzParseStandard(f *testing.F) {
	for _, s := range []string{"*/10 * * * *", "TZ=UTC */10 * * * *", "TZ=UTC", "CRON_TZ=Europe/Berlin", "TZ=",
		"@daily", "@every 1h", "CRON_TZ=Europe/Berlin 0 3 * * *", "0 3 * * * *", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseStandard(spec)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("ParseStandard(%q): an error with no message", spec)
			}
			return
		}
		at := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
		if n := s.Next(at); !n.IsZero() && !n.After(at) {
			t.Fatalf("ParseStandard(%q): Next(%s) = %s", spec, at, n)
		}
	})
}
