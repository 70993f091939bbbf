package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/secrets"
	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
	"github.com/mvp2/mvp/internal/taskfs"
)

// TestResultsVerb: `mvp results ID` lists the files; `--get PATH -o FILE` writes one to FILE, and to standard
// output without -o; a refused path leaves no file behind.
func TestResultsVerb(t *testing.T) {
	m := servicetest.Start(t, nil)
	raw, err := m.Client().Submit(context.Background(), []byte("workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	_ = json.Unmarshal(raw, &task)
	dir, _ := taskfs.FS{Root: m.Config.SharedRoot}.AttemptResultsDir(task.ID, 1)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"ok": true}`), 0o644)
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": m.URL(), "MVP_TOKEN": m.APIToken()}[k]
	}}
	run := func(args ...string) int {
		out.Reset()
		errb.Reset()
		return Run(context.Background(), args, env)
	}
	if code := run("results", task.ID); code != 0 || !strings.Contains(out.String(), "a01/summary.json") {
		t.Errorf("list: %d %s %s", code, out.String(), errb.String())
	}
	if code := run("results", task.ID, "-o", "json"); code != 0 || !strings.Contains(out.String(), `"path": "a01/summary.json"`) {
		t.Errorf("list as json: %d %s", code, out.String())
	}
	file := filepath.Join(t.TempDir(), "s.json")
	if code := run("results", task.ID, "--get", "a01/summary.json", "-o", file); code != 0 {
		t.Fatalf("get: %d %s", code, errb.String())
	}
	if b, _ := os.ReadFile(file); string(b) != `{"ok": true}` {
		t.Errorf("written %q", b)
	}
	if code := run("results", task.ID, "--get", "a01/summary.json"); code != 0 || out.String() != `{"ok": true}` {
		t.Errorf("get to stdout: %d %q", code, out.String())
	}
	bad := filepath.Join(t.TempDir(), "bad")
	// Refused before asking: a mistake in the command, exit 2 (TestMistakesInTheCommandExitTwo).
	if code := run("results", task.ID, "--get", "../spec.json", "-o", bad); code != 2 || !strings.Contains(errb.String(), "result path") {
		t.Errorf("refused path: %d %s", code, errb.String())
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a refused download left a file: %v", err)
	}
}

// TestResubmitVerb: `mvp resubmit ID -e k=v --resume` makes the new task and prints it with its origin; a dry run
// shows the verdict; a bad -e is refused.
func TestResubmitVerb(t *testing.T) {
	m := servicetest.Start(t, nil)
	raw, err := m.Client().Submit(context.Background(), []byte("workload: sft\nnnodes: 1\nn_gpus_per_node: 1\nmodel_path: /m\ntrain_file: /t\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	_ = json.Unmarshal(raw, &task)
	for deadline := time.Now().Add(10 * time.Second); ; { // it runs, so there is something to resume from
		got, _, err := m.Client().Get(context.Background(), task.ID)
		if err == nil && got.LatestAttemptNo > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task was not submitted within 10 s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, _, err := m.Client().Cancel(context.Background(), task.ID); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; { // a resume waits for the canceled job to stop
		got, _, err := m.Client().Get(context.Background(), task.ID)
		if err == nil && got.Latest() != nil && got.Latest().RayStatus.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the canceled task's job was not recorded stopped within 10 s: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": m.URL(), "MVP_TOKEN": m.APIToken()}[k]
	}}
	if code := Run(context.Background(), []string{"resubmit", task.ID, "--resume", "-e", "name=again"}, env); code != 0 ||
		!strings.Contains(out.String(), "(resubmitted from "+task.ID+")") {
		t.Fatalf("resubmit: %d %s %s", code, out.String(), errb.String())
	}
	newID := strings.Fields(out.String())[0]
	got, _, err := m.Client().Get(context.Background(), newID)
	if err != nil || got.Name != "again" || got.ResumeFrom != task.ID {
		t.Errorf("the new task: %+v %v", got, err)
	}
	out.Reset()
	if code := Run(context.Background(), []string{"get", task.ID}, env); code != 0 || !strings.Contains(out.String(), "resubmits:") {
		t.Errorf("get of the origin: %d %s", code, out.String())
	}
	out.Reset()
	if code := Run(context.Background(), []string{"resubmit", task.ID, "--dry-run"}, env); code != 0 || !strings.Contains(out.String(), "verdict:") ||
		!strings.Contains(out.String(), "est. start:") {
		t.Errorf("dry run: %d %s %s", code, out.String(), errb.String())
	}
	if code := Run(context.Background(), []string{"resubmit", task.ID, "-e", "nnode=1"}, env); code != 1 || !strings.Contains(errb.String(), "nnodes") {
		t.Errorf("bad -e: %d %s", code, errb.String())
	}
}

// TestSecretsVerb: `mvp secrets put NAME` reads the value from standard input (never an argument), `list` shows
// the name without the value, `delete` removes it.
func TestSecretsVerb(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Secrets.KeyEnv = "MVP_TEST_CLI_SECRETS_KEY"
	t.Setenv("MVP_TEST_CLI_SECRETS_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	m := servicetest.Start(t, &service.Main{Config: cfg})
	var out, errb bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errb, Stdin: strings.NewReader("s3cr3t-value\n"), Getenv: func(k string) string {
		return map[string]string{"MVP_ADDR": m.URL(), "MVP_TOKEN": m.APIToken()}[k]
	}}
	if code := Run(context.Background(), []string{"secrets", "put", "wandb"}, env); code != 0 || strings.Contains(out.String(), "s3cr3t") {
		t.Fatalf("put: %d %s %s", code, out.String(), errb.String())
	}
	vals, err := secretsOf(t, m)
	if err != nil || vals["wandb"] != "s3cr3t-value" {
		t.Errorf("stored %q (the trailing newline is dropped): %v", vals["wandb"], err)
	}
	out.Reset()
	if code := Run(context.Background(), []string{"secrets", "list"}, env); code != 0 || !strings.Contains(out.String(), "wandb") ||
		strings.Contains(out.String(), "s3cr3t") {
		t.Errorf("list: %d %s", code, out.String())
	}
	// A second put replaces it, and says so (it said "stored" both times). Found in a user walk-through.
	out.Reset()
	env.Stdin = strings.NewReader("another\n")
	if code := Run(context.Background(), []string{"secrets", "put", "wandb"}, env); code != 0 || !strings.Contains(out.String(), "replaced") {
		t.Errorf("second put: %d %q, want it to say replaced", code, out.String())
	}
	if code := Run(context.Background(), []string{"secrets", "put"}, env); code != 2 {
		t.Errorf("put without a name: %d", code)
	}
	out.Reset()
	if code := Run(context.Background(), []string{"secrets", "delete", "wandb"}, env); code != 0 || !strings.Contains(out.String(), "deleted") {
		t.Errorf("delete: %d %s %s", code, out.String(), errb.String())
	}
}

// secretsOf opens the service's stored secrets with its key, as the scheduler does.
func secretsOf(t *testing.T, m *service.Main) (map[string]string, error) {
	key, err := secrets.KeyFromEnv(m.Config.V2.Secrets.KeyEnv)
	if err != nil {
		return nil, err
	}
	v, err := secrets.New(m.Store(), key, m.Config.V2.Secrets.KeyEnv, nil)
	if err != nil {
		return nil, err
	}
	return v.Values(context.Background(), []string{"wandb"})
}
