package api_test

import (
	"encoding/json"
	"testing"

	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestResubmitTakesTodaysDefaultsForANullValue: a jobspec that writes a defaulted field with no value
// (`max_runtime_s:` / `code_path:` — YAML null, which the parser takes as absent) must resubmit with today's
// defaults, as an absent field or a 0 / "" does (specs/api.md, resubmit).
func TestResubmitTakesTodaysDefaultsForANullValue(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Scheduler.DefaultMaxRuntimeS, cfg.V2.Scheduler.MaxRuntimeCapS = 259200, 604800
	cfg.UserCodePath = "/code/first"
	var id string
	t.Run("before", func(t *testing.T) {
		base := servicetest.Start(t, &service.Main{Config: cfg}).URL()
		resp, b := do(t, base, "POST", "/api/v2/tasks", "application/yaml",
			goodSpec+"max_runtime_s:\ncode_path:\n", nil)
		var got struct {
			ID string `json:"task_id"`
		}
		if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 201 {
			t.Fatalf("submit: %d %s", resp.StatusCode, b)
		}
		id = got.ID
	})
	cfg.V2.Scheduler.DefaultMaxRuntimeS, cfg.V2.Scheduler.MaxRuntimeCapS = 40000, 50000
	cfg.UserCodePath = "/code/moved"
	base := servicetest.Start(t, &service.Main{Config: cfg}).URL()
	resp, b := do(t, base, "POST", "/api/v2/tasks/"+id+"/resubmit?dry_run=true", "application/json", `{}`, nil)
	var dry struct {
		Spec struct {
			CodePath    string `json:"code_path"`
			MaxRuntimeS int    `json:"max_runtime_s"`
		} `json:"effective_spec"`
	}
	_ = json.Unmarshal(b, &dry)
	if resp.StatusCode != 200 || dry.Spec.CodePath != "/code/moved" || dry.Spec.MaxRuntimeS != 40000 {
		t.Errorf("resubmit of a jobspec with `max_runtime_s:` and `code_path:` (null): %d %s; want 200 with today's 40000 and /code/moved",
			resp.StatusCode, b)
	}
}
