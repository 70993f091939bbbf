// Package recurring runs recurring schedules: Due decides, as a pure function of the time, the schedule and its
// previous task, whether a run is due and what it does; Loop applies that once a second.
//
// Missed runs: when mvp was not running (or the loop could not write) across one or more scheduled times, the
// schedule makes at most one catch-up run, at once, standing for the latest of those times; the earlier ones are
// counted in the schedule's `missed` and not run. A paused schedule makes no runs, and on resume it starts from
// the time it was resumed (runs that fell due while paused are not made up, nor counted as missed).
package recurring

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/mvp2/mvp/internal/mvp"
)

// parser reads standard 5-field cron expressions and descriptors (@hourly, @daily, @every 3s, …), as dev.yaml's
// checkpoint_schedule does.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// CheckEvery refuses "@every D" with D under a second, which robfig's parser rounds up to one second silently.
func CheckEvery(expr string) error {
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		if dur, err := time.ParseDuration(strings.TrimSpace(d)); err == nil && dur < time.Second {
			return mvp.Errorf(mvp.CodeInvalid, "cron", "@every must be at least 1s, got %s", dur)
		}
	}
	return nil
}

// ParseStandard parses a standard cron line or descriptor that may start with its own TZ= or CRON_TZ= zone, as
// dev.yaml's checkpoint_schedule does (cron.ParseStandard). A zone with nothing after it is refused: robfig/cron
// slices past the end of such a line and panics instead of saying the schedule is missing.
func ParseStandard(spec string) (cron.Schedule, error) {
	if (strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=")) && !strings.Contains(spec, " ") {
		return nil, errors.New("it names a time zone but no schedule after it")
	}
	return cron.ParseStandard(spec)
}

// Parse checks a schedule's cron expression and time zone (an IANA name such as Europe/Berlin; "" is UTC) and
// returns the schedule they make. The expression may not carry its own TZ= or CRON_TZ= prefix.
func Parse(expr, timezone string) (cron.Schedule, error) {
	if timezone == "" {
		timezone = "UTC"
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil || timezone == "Local" { // Go's name for the server's own zone, which moves with the machine
		return nil, mvp.Errorf(mvp.CodeInvalid, "timezone", "unknown time zone %q; use an IANA name such as UTC or Europe/Berlin", timezone)
	}
	if len(expr) > 200 {
		return nil, mvp.Errorf(mvp.CodeInvalid, "cron", "the cron expression is longer than 200 characters")
	}
	for _, p := range []string{"TZ=", "CRON_TZ="} {
		if strings.HasPrefix(expr, p) {
			return nil, mvp.Errorf(mvp.CodeInvalid, "cron", "put the time zone in the timezone field, not in the cron expression")
		}
	}
	if err := CheckEvery(expr); err != nil {
		return nil, err
	}
	s, err := parser.Parse(expr)
	if err != nil {
		return nil, mvp.Errorf(mvp.CodeInvalid, "cron", "cron %q: %s; use 5 fields (minute hour day month weekday) or @hourly, @daily, @every 10m", expr, fieldAtFault(expr, err))
	}
	if spec, ok := s.(*cron.SpecSchedule); ok {
		spec.Location = loc
		return dstSafe{spec}, nil
	}
	return s, nil
}

// maxWalk bounds how many missed scheduled times Due steps over; past it, the catch-up run stands for now.
const maxWalk = 100000

// Input is what Due looks at.
type Input struct {
	Now      time.Time
	Schedule *mvp.Schedule
	// Cron is the schedule's parsed expression (Parse).
	Cron cron.Schedule
	// Previous is the task of the schedule's last run that submitted one; nil when there is none (or it is gone).
	Previous *mvp.Task
}

// Decision is what Due decided for one schedule.
type Decision struct {
	// Run is true when a run is due now; the rest but Next are only meaningful then.
	Run bool
	// FireAt is the scheduled time the run stands for (the latest one not after now).
	FireAt time.Time
	// Missed is how many earlier scheduled times since the last run are not run (mvp was down).
	Missed int
	// Cancel names the previous task to cancel (overlap replace), once the new task has been made and admitted.
	Cancel string
	// Submit is true when the run makes a task (false: skipped, because the previous task is still live).
	Submit bool
	// Outcome says in words what the run does (the loop completes it with the new task's id).
	Outcome string
	// EndedOutcome, with Cancel, is the Outcome to record instead should the previous task end before the run is
	// written (then there is nothing to cancel).
	EndedOutcome string
	// Next is the scheduled time after this decision: after FireAt when a run is due, else the next one; zero
	// while paused.
	Next time.Time
}

// Due decides whether a run of the schedule is due at in.Now and what it does. It reads no clock and does no I/O.
func Due(in Input) Decision {
	s := in.Schedule
	if s.Paused {
		return Decision{}
	}
	next := in.Cron.Next(s.LastFireAt)
	if next.IsZero() || next.After(in.Now) {
		return Decision{Next: next}
	}
	fire, missed := next, 0
	for {
		n := in.Cron.Next(fire)
		if n.IsZero() || n.After(in.Now) {
			break
		}
		if missed >= maxWalk {
			fire = in.Now
			break
		}
		fire, missed = n, missed+1
	}
	d := Decision{Run: true, FireAt: fire, Missed: missed, Submit: true, Next: in.Cron.Next(fire)}
	live := in.Previous != nil && !in.Previous.State.Terminal()
	switch {
	case !live:
		d.Outcome = "submitted"
	case s.Overlap == mvp.OverlapSkip:
		d.Submit = false
		d.Outcome = fmt.Sprintf("skipped: the previous task %s is still %s (overlap: skip)", in.Previous.ID, in.Previous.State)
	case s.Overlap == mvp.OverlapReplace:
		d.Cancel = in.Previous.ID
		d.Outcome = fmt.Sprintf("canceled the previous task %s (%s) and submitted (overlap: replace)", in.Previous.ID, in.Previous.State)
		d.EndedOutcome = fmt.Sprintf("submitted (overlap: replace; the previous task %s had ended before this run could cancel it)", in.Previous.ID)
	default:
		d.Outcome = fmt.Sprintf("submitted while the previous task %s is still %s (overlap: queue)", in.Previous.ID, in.Previous.State)
	}
	if missed > 0 {
		catchUp := fmt.Sprintf("; one catch-up run for %d scheduled times that passed before a run could be made (mvp stopped, or too busy to run each)", missed+1)
		d.Outcome += catchUp
		if d.EndedOutcome != "" {
			d.EndedOutcome += catchUp
		}
	}
	return d
}

// NextRun is the next scheduled time of a schedule as GET shows it: nil while paused.
func NextRun(s *mvp.Schedule, c cron.Schedule) *time.Time {
	if s.Paused {
		return nil
	}
	n := c.Next(s.LastFireAt)
	if n.IsZero() {
		return nil
	}
	n = n.UTC()
	return &n
}

// cronFields names the five fields of a cron expression, with the range of each.
var cronFields = [5]struct {
	name     string
	min, max int
	names    string // the names it takes too
}{{"minute", 0, 59, ""}, {"hour", 0, 23, ""}, {"day", 1, 31, ""}, {"month", 1, 12, " or JAN-DEC"}, {"weekday", 0, 6, " or SUN-SAT"}}

// fieldAtFault says what is wrong with expr, which failed to parse with err: the first of its five fields that
// fails alone (the others "*"), with that field's range; err as it is for an expression of another shape.
func fieldAtFault(expr string, err error) string {
	fields := strings.Fields(expr)
	if len(fields) != len(cronFields) {
		return err.Error()
	}
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		if _, ferr := parser.Parse(strings.Join(probe, " ")); ferr != nil {
			c := cronFields[i]
			return fmt.Sprintf("its %s field (%s) must be from %d to %d%s (%v)", c.name, f, c.min, c.max, c.names, ferr)
		}
	}
	return err.Error()
}
