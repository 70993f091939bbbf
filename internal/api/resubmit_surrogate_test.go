package api_test

import (
	"encoding/json"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestResubmitKeepsWhatAJSONJobspecGave: a JSON jobspec as Python's json.dumps writes it escapes a character
// outside the BMP as a surrogate pair ("\ud83d\ude00"), which the submit takes. Its resubmit must keep the fields
// the user gave (priority 80, max_runtime_s 3600), not replace them with the cluster's defaults.
func TestResubmitKeepsWhatAJSONJobspecGave(t *testing.T) {
	base := servicetest.Start(t, nil).URL()
	spec := `{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/m","train_file":"/t","val_file":"/v",` +
		`"priority":80,"max_runtime_s":3600,"env":{"NOTE":"\ud83d\ude00"}}`
	resp, b := do(t, base, "POST", "/api/v2/tasks", "application/json", spec, nil)
	var got struct {
		ID          string `json:"task_id"`
		Priority    int    `json:"priority"`
		MaxRuntimeS int    `json:"max_runtime_s"`
	}
	if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 201 {
		t.Fatalf("submit: %d %s", resp.StatusCode, b)
	}
	if got.Priority != 80 || got.MaxRuntimeS != 3600 {
		t.Fatalf("submit took priority %d, max_runtime_s %d", got.Priority, got.MaxRuntimeS)
	}
	resp, b = do(t, base, "POST", "/api/v2/tasks/"+got.ID+"/resubmit", "application/json", `{}`, nil)
	var re struct {
		Priority    int `json:"priority"`
		MaxRuntimeS int `json:"max_runtime_s"`
	}
	if err := json.Unmarshal(b, &re); err != nil || resp.StatusCode != 201 {
		t.Fatalf("resubmit: %d %s", resp.StatusCode, b)
	}
	if re.Priority != 80 || re.MaxRuntimeS != 3600 {
		t.Errorf("resubmit of a JSON jobspec with a surrogate pair: priority %d, max_runtime_s %d; want the 80 and 3600 the user gave",
			re.Priority, re.MaxRuntimeS)
	}
}
