package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/recurring"
)

// scheduleNamePattern is what a schedule's name may be; the name is its identity in paths and the CLI.
var scheduleNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// scheduleRequest is the body of POST /api/v2/schedules.
type scheduleRequest struct {
	Name     string          `json:"name"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone"`
	Overlap  mvp.Overlap     `json:"overlap"`
	JobSpec  json.RawMessage `json:"jobspec"`
}

// createSchedule stores a recurring schedule after checking its cron expression, time zone and overlap policy,
// and its jobspec exactly as a submission is checked.
func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r, jsonOnly, "a JSON object {name, cron, timezone, overlap, jobspec}")
	if err != nil {
		return err
	}
	var req scheduleRequest
	if err := decodeJSON(body, &req); err != nil {
		return mvp.Errorf(mvp.CodeInvalid, "", "the body must be a JSON object {name, cron, timezone, overlap, jobspec}: %v", err)
	}
	if !scheduleNamePattern.MatchString(req.Name) {
		return mvp.Errorf(mvp.CodeInvalid, "name", "name %q must be 1 to 40 of [a-z0-9-], starting with a letter or digit", clip(req.Name))
	}
	if req.Cron == "" {
		return mvp.Errorf(mvp.CodeInvalid, "cron", "cron is required, e.g. \"0 2 * * *\" or \"@every 1h\"")
	}
	if strings.ContainsFunc(req.Cron, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) {
		// The parser splits the fields on any white space, and the line is kept and shown as written: a line end
		// or an escape in it would break, or drive, the terminal of whoever lists the schedules.
		return mvp.Errorf(mvp.CodeInvalid, "cron", "cron %q holds a control character; separate its fields with "+
			"spaces", clip(req.Cron))
	}
	if req.Timezone == "" {
		req.Timezone = "UTC"
	}
	c, err := recurring.Parse(req.Cron, req.Timezone)
	if err != nil {
		return err
	}
	if c.Next(s.Clock.Now()).IsZero() { // robfig/cron looks five years ahead
		return mvp.Errorf(mvp.CodeInvalid, "cron", "cron %q never fires (no time matches it in the next five years, "+
			"e.g. 30 February); check the day-of-month and month fields", clip(req.Cron))
	}
	if req.Overlap == "" {
		req.Overlap = mvp.OverlapSkip
	}
	if !req.Overlap.Valid() {
		return mvp.Errorf(mvp.CodeInvalid, "overlap", "overlap %q must be one of %v", clip(string(req.Overlap)), mvp.Overlaps)
	}
	spec := bytes.TrimSpace(req.JobSpec)
	if len(spec) == 0 || string(spec) == "null" {
		return mvp.Errorf(mvp.CodeInvalid, "jobspec", "jobspec is required: the jobspec as a JSON object, as POST /api/v2/tasks takes it")
	}
	if spec[0] != '{' {
		return mvp.Errorf(mvp.CodeInvalid, "jobspec", "jobspec must be a JSON object (the jobspec's fields, as POST "+
			"/api/v2/tasks takes them), not %s: `mvp schedule create -f job.yaml` sends a YAML file as one", jsonWhat(spec[0]))
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, spec); err != nil {
		return mvp.Errorf(mvp.CodeInvalid, "jobspec", "jobspec is not valid JSON: %v", err)
	}
	prepared, err := s.Prepare(compact.Bytes())
	if err == nil {
		err = s.checkCaps(r.Context(), prepared) // a user's schedule asks for no more than they may
	}
	if err == nil {
		prepared.Owner = mvp.CallerOf(r.Context()).Name
		_, err = s.checkNames(r.Context(), prepared, nil) // nor names what is not theirs
	}
	if err != nil {
		var e *mvp.Error
		if errors.As(err, &e) {
			field := "jobspec"
			if e.Field != "" {
				field += "." + e.Field
			}
			return mvp.Errorf(e.Code, field, "%s", e.Message)
		}
		return err
	}
	now := s.Clock.Now().UTC()
	sc := &mvp.Schedule{Name: req.Name, Owner: mvp.CallerOf(r.Context()).Name, Cron: req.Cron, Timezone: req.Timezone, Overlap: req.Overlap,
		JobSpec: compact.Bytes(), CreatedAt: now, UpdatedAt: now, LastFireAt: now}
	if err := s.Schedules.CreateSchedule(r.Context(), sc); err != nil {
		return err
	}
	sc.NextRunAt = recurring.NextRun(sc, c)
	if s.WakeSchedules != nil {
		s.WakeSchedules()
	}
	w.Header().Set("Location", "/api/v2/schedules/"+sc.Name)
	writeJSON(w, http.StatusCreated, sc)
	return nil
}

// withNext fills a schedule's next_run_at.
func withNext(sc *mvp.Schedule) *mvp.Schedule {
	if c, err := recurring.Parse(sc.Cron, sc.Timezone); err == nil {
		sc.NextRunAt = recurring.NextRun(sc, c)
	}
	return sc
}

// listSchedules answers the caller's schedules (the operator's: everyone's, or owner='s).
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	only, err := s.listedOwner(r, "schedules")
	if err != nil {
		return err
	}
	list, err := s.Schedules.ListSchedules(r.Context())
	if err != nil {
		return err
	}
	own := []*mvp.Schedule{}
	for _, sc := range list {
		if only == "" || mvp.OwnerName(sc.Owner) == only {
			own = append(own, withNext(sc))
		}
	}
	if len(own) == 0 {
		if err := s.unknownOwner(only, "schedules"); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedules": own})
	return nil
}

// schedule reads the schedule named in the path: the caller's (names are each user's own), or, for the
// operator's owner=, that user's.
func (s *Server) schedule(r *http.Request) (*mvp.Schedule, error) {
	name := r.PathValue("name")
	if !scheduleNamePattern.MatchString(name) {
		return nil, mvp.Errorf(mvp.CodeNotFound, "name", "no schedule %q (names are [a-z0-9-], at most 40)", clip(name))
	}
	owner, err := s.namedOwner(r, "schedules", false)
	if err != nil {
		return nil, err
	}
	sc, err := s.Schedules.GetSchedule(r.Context(), owner, name)
	if errors.Is(err, mvp.ErrNotFound) {
		if owner != mvp.CallerOf(r.Context()).Name {
			return nil, mvp.Errorf(mvp.CodeNotFound, "name", "%s has no schedule %q", owner, name)
		}
		if hint := s.othersOf(r, func() ([]string, error) {
			list, err := s.Schedules.ListSchedules(r.Context())
			var owners []string
			for _, sc := range list {
				if sc.Name == name {
					owners = append(owners, mvp.OwnerName(sc.Owner))
				}
			}
			return owners, err
		}, "schedule"); hint != "" {
			return nil, mvp.Errorf(mvp.CodeNotFound, "name", "you have no schedule %q%s", name, hint)
		}
		return nil, mvp.Errorf(mvp.CodeNotFound, "name", "no schedule %q", name)
	}
	return sc, err
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.schedule(r)
	if err != nil {
		return err
	}
	// Its tasks by the run the schedule as read last recorded: a run recorded between the two reads made a task
	// listed while last_task_id and next_run_at said the run before (seen in CI).
	ids, err := s.Schedules.ScheduleTasks(r.Context(), sc.Owner, sc.Name, sc.LastFireAt, 100)
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []string{}
	}
	writeJSON(w, http.StatusOK, scheduleDetail{Schedule: withNext(sc), TaskIDs: ids})
	return nil
}

// scheduleDetail is the answer to GET of one schedule: the schedule with task_ids always present, [] before its
// first task (mvp.Schedule leaves the key out, as the list of schedules does).
type scheduleDetail struct {
	*mvp.Schedule
	TaskIDs []string `json:"task_ids"`
}

func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, true)
}

func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.setPaused(w, r, false)
}

func (s *Server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) error {
	sc, err := s.schedule(r)
	if err != nil {
		return err
	}
	if err := s.Schedules.SetSchedulePaused(r.Context(), sc.Owner, sc.Name, paused, s.Clock.Now()); err != nil {
		return fmt.Errorf("set schedule %s paused=%v: %w", sc.Name, paused, err)
	}
	if !paused && s.WakeSchedules != nil {
		s.WakeSchedules()
	}
	if sc, err = s.Schedules.GetSchedule(r.Context(), sc.Owner, sc.Name); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, withNext(sc))
	return nil
}

// deleteSchedule removes a schedule; the tasks it made stay (and a live one keeps running).
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	sc, err := s.schedule(r)
	if err != nil {
		return err
	}
	if err := s.Schedules.DeleteSchedule(r.Context(), sc.Owner, sc.Name); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": sc.Name})
	return nil
}

// jsonWhat names the kind of JSON value that starts with c.
func jsonWhat(c byte) string {
	switch {
	case c == '"':
		return "a string"
	case c == '[':
		return "a list"
	case c == 't' || c == 'f':
		return "true or false"
	}
	return "a number"
}
