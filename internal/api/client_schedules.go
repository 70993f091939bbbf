package api

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/mvp2/mvp/internal/mvp"
)

// ScheduleRequest is the body of POST /api/v2/schedules; JobSpec is the jobspec as a JSON object.
type ScheduleRequest struct {
	Name     string          `json:"name"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone,omitempty"`
	Overlap  mvp.Overlap     `json:"overlap,omitempty"`
	JobSpec  json.RawMessage `json:"jobspec"`
}

// CreateSchedule makes a recurring schedule.
func (c *Client) CreateSchedule(ctx context.Context, req ScheduleRequest) (*mvp.Schedule, json.RawMessage, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, nil, err
	}
	var s mvp.Schedule
	raw, err := c.JSON(ctx, "POST", "/api/v2/schedules", nil, body, "application/json", &s)
	return &s, raw, err
}

// Schedules lists the caller's schedules (the operator's: everyone's).
func (c *Client) Schedules(ctx context.Context) ([]*mvp.Schedule, json.RawMessage, error) {
	return c.SchedulesOf(ctx, "")
}

// SchedulesOf lists owner's schedules ("": the caller's; the operator's: everyone's).
func (c *Client) SchedulesOf(ctx context.Context, owner string) ([]*mvp.Schedule, json.RawMessage, error) {
	var out struct {
		Schedules []*mvp.Schedule `json:"schedules"`
	}
	raw, err := c.JSON(ctx, "GET", "/api/v2/schedules", ownerQuery(owner), nil, "", &out)
	return out.Schedules, raw, err
}

// Schedule returns one of the caller's schedules with the ids of the tasks it made.
func (c *Client) Schedule(ctx context.Context, name string) (*mvp.Schedule, json.RawMessage, error) {
	return c.ScheduleOf(ctx, "", name)
}

// ScheduleOf returns owner's schedule name (the operator may name a user; "" is the caller).
func (c *Client) ScheduleOf(ctx context.Context, owner, name string) (*mvp.Schedule, json.RawMessage, error) {
	var s mvp.Schedule
	raw, err := c.JSON(ctx, "GET", "/api/v2/schedules/"+url.PathEscape(name), ownerQuery(owner), nil, "", &s)
	return &s, raw, err
}

// SetSchedulePaused pauses (true) or resumes (false) one of the caller's schedules.
func (c *Client) SetSchedulePaused(ctx context.Context, name string, paused bool) (*mvp.Schedule, json.RawMessage, error) {
	return c.SetSchedulePausedOf(ctx, "", name, paused)
}

// SetSchedulePausedOf pauses (true) or resumes (false) owner's schedule name ("" is the caller).
func (c *Client) SetSchedulePausedOf(ctx context.Context, owner, name string, paused bool) (*mvp.Schedule, json.RawMessage, error) {
	verb := "resume"
	if paused {
		verb = "pause"
	}
	var s mvp.Schedule
	raw, err := c.JSON(ctx, "POST", "/api/v2/schedules/"+url.PathEscape(name)+"/"+verb, ownerQuery(owner), nil, "", &s)
	return &s, raw, err
}

// DeleteSchedule deletes one of the caller's schedules (the tasks it made stay).
func (c *Client) DeleteSchedule(ctx context.Context, name string) (json.RawMessage, error) {
	return c.DeleteScheduleOf(ctx, "", name)
}

// DeleteScheduleOf deletes owner's schedule name ("" is the caller; the tasks it made stay).
func (c *Client) DeleteScheduleOf(ctx context.Context, owner, name string) (json.RawMessage, error) {
	return c.JSON(ctx, "DELETE", "/api/v2/schedules/"+url.PathEscape(name), ownerQuery(owner), nil, "", nil)
}
