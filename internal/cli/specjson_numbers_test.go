package cli

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/jobspec"
)

// TestScheduleJSONKeepsTheNumbersASubmitTakes: `mvp schedule create -f` sends the jobspec as JSON, and a YAML
// integer not written as a JSON number (+1, 04) went as a JSON string, which the server refuses for a number
// field ("write +1, not \"+1\"", quotes the user never wrote), where `mvp submit -f` of the same file is taken.
// A string field keeps the text as written (env: {X: +1} runs with "+1"). Found by a review; it failed before.
func TestScheduleJSONKeepsTheNumbersASubmitTakes(t *testing.T) {
	const rest = "workload: ppo\nmodel_path: /m\ntrain_file: /t\nval_file: /v\nenv: {X: +1}\n"
	for _, y := range []string{
		"nnodes: +1\nn_gpus_per_node: 4\n" + rest,
		"nnodes: 1\nn_gpus_per_node: 04\npriority: +070\n" + rest,
	} {
		direct, err := jobspec.Parse([]byte(y), jobspec.DefaultLimits)
		if err != nil {
			t.Fatalf("the submit's parse: %v", err)
		}
		js, err := specJSON([]byte(y))
		if err != nil {
			t.Fatalf("specJSON: %v", err)
		}
		sent, err := jobspec.Parse(js, jobspec.DefaultLimits)
		if err != nil {
			t.Errorf("taken as a submit, refused as a schedule's JSON %s: %v", js, err)
			continue
		}
		if sent.NNodes != direct.NNodes || sent.GPUsPerNode != direct.GPUsPerNode || (sent.Priority == nil) != (direct.Priority == nil) || sent.Priority != nil && *sent.Priority != *direct.Priority ||
			sent.Env["X"] != "+1" || !strings.Contains(string(js), `"X":"+1"`) {
			t.Errorf("%s: sent %+v, want %+v with env X \"+1\"", js, sent, direct)
		}
	}
}
