package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/workload"
)

// TestCLIKeepsScalarTextOfTheJobspec: the server takes an unquoted number in env (and name) as its text
// (jobspec.str), so `mvp submit -f job.yaml` runs with TORCH_VERSION=2.10 and SEED=0x10. `mvp schedule create`
// (always) and `mvp submit -e …` decoded the file into Go values and encoded them again, so the job got 2.1 and
// 16; they now keep every scalar they do not set as it was written.
func TestCLIKeepsScalarTextOfTheJobspec(t *testing.T) {
	doc := "workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\n" +
		"env: {TORCH_VERSION: 2.10, SEED: 0x10, LR: 1e-4, BIG: 12345678901234567890}\n"
	want := func(how string, body []byte) {
		task, err := workload.Prepare(body, workload.Settings{})
		if err != nil {
			t.Errorf("%s: %v", how, err)
			return
		}
		for _, kv := range []string{`"TORCH_VERSION":"2.10"`, `"SEED":"0x10"`, `"LR":"1e-4"`, `"BIG":"12345678901234567890"`} {
			if !strings.Contains(string(task.SpecJSON), kv) {
				t.Errorf("%s: the job's env lost %s: %s", how, kv, task.SpecJSON)
			}
		}
	}
	want("as the file is", []byte(doc))
	js, err := specJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want("mvp schedule create", js)
	path := filepath.Join(t.TempDir(), "job.yaml")
	os.WriteFile(path, []byte(doc), 0o644)
	b, err := readSpec(path, []string{"nnodes=1"})
	if err != nil {
		t.Fatal(err)
	}
	want("mvp submit -e nnodes=1", b)
}
