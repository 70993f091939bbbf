package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEditedJSONJobspecWithASurrogatePair: a JSON jobspec as Python's json.dumps writes it ("\ud83d\ude00" for
// an emoji) is taken by the server as it is (mvp submit -f works), but `-e` and `mvp schedule create` refused it
// locally as "not a YAML mapping: found invalid Unicode character escape code".
func TestEditedJSONJobspecWithASurrogatePair(t *testing.T) {
	f := filepath.Join(t.TempDir(), "job.json")
	body := `{"workload":"ppo","nnodes":1,"n_gpus_per_node":1,"model_path":"/m","train_file":"/t","val_file":"/v","env":{"NOTE":"\ud83d\ude00"}}`
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSpec(f, []string{"nnodes=2"}); err != nil {
		t.Errorf("mvp submit -f job.json -e nnodes=2: %v", err)
	}
	if _, err := specJSON([]byte(body)); err != nil {
		t.Errorf("mvp schedule create -f job.json: %v", err)
	}
}
