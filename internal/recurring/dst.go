package recurring

import (
	"time"

	"github.com/robfig/cron/v3"
)

// dstSafe is a cron expression read in a zone with daylight saving time, run as cron does across the two changes of
// the year: a scheduled wall time the clock skips (spring forward) runs once, at the change, and one the clock
// passes twice (fall back) runs once, the first time. An expression that names every hour (every N minutes, say)
// follows real time through the repeated hour, as before; robfig's schedule alone skipped the first kind of night
// and ran twice on the second.
type dstSafe struct{ spec *cron.SpecSchedule }

// allHours is the Hour bits of an expression that names every hour.
const allHours = 1<<24 - 1

// Next returns the first run after t.
func (d dstSafe) Next(t time.Time) time.Time {
	loc := d.spec.Location
	c := d.spec.Next(t)
	if d.spec.Hour&allHours != allHours {
		// The clock went back: a wall time not after t's has run already (in the first pass of the hour). Bounded
		// by real time, not by a count: the clock goes back an hour at most (30 min in a few zones), and a count of
		// 8 let an expression firing every 5 minutes in that hour run its last 4 wall times twice.
		for !c.IsZero() && !naive(c.In(loc)).After(naive(t.In(loc))) && c.Sub(t) <= 2*time.Hour {
			c = d.spec.Next(c)
		}
	}
	if g, ok := d.skipped(t, c); ok {
		return g
	}
	return c
}

// skipped finds the first change after t (and before c, the next run otherwise) at which the clock jumped forward
// over a wall time the expression names: that run is made at the change.
func (d dstSafe) skipped(t, c time.Time) (time.Time, bool) {
	loc := d.spec.Location
	for cur, i := t.In(loc), 0; i < 4; i++ {
		_, end := cur.ZoneBounds()
		if end.IsZero() || c.IsZero() || !end.Before(c) {
			return time.Time{}, false
		}
		before, after := naive(end.Add(-time.Nanosecond).In(loc)).Truncate(time.Minute).Add(time.Minute), naive(end.In(loc))
		for w := before; w.Before(after); w = w.Add(time.Minute) {
			if w.Sub(before) > 3*time.Hour {
				break
			}
			if d.matches(w) && end.After(t) {
				return end, true
			}
		}
		cur = end
	}
	return time.Time{}, false
}

// matches reports whether the expression names the wall time w (read as UTC), to the minute.
func (d dstSafe) matches(w time.Time) bool {
	s := d.spec
	if s.Minute&(1<<uint(w.Minute())) == 0 || s.Hour&(1<<uint(w.Hour())) == 0 || s.Month&(1<<uint(w.Month())) == 0 {
		return false
	}
	const star = 1 << 63 // robfig's mark of a '*' day field
	dom, dow := s.Dom&(1<<uint(w.Day())) != 0, s.Dow&(1<<uint(w.Weekday())) != 0
	if s.Dom&star != 0 || s.Dow&star != 0 {
		return dom && dow
	}
	return dom || dow
}

// naive is t's wall clock as a UTC time, to compare wall clocks across a change of offset.
func naive(t time.Time) time.Time {
	y, mo, dd := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, dd, h, mi, s, t.Nanosecond(), time.UTC)
}
