package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/cli"
)

// TestDoctorMistakesInTheCommandExitTwo: `mvp doctor -o xml` ran every check (asking Ray) and then exited 1 with
// "-o "xml": use text or json", and `mvp doctor --gpus abc` exited 1, as if a check had failed: both are mistakes
// in the command, found before anything is asked, and exit 2 as the other verbs' usage errors do.
func TestDoctorMistakesInTheCommandExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"doctor", "-o", "xml", "--config", "/nonexistent/dev.yaml", "--gpus", "4"},
		{"doctor", "--gpus", "abc", "--config", "/nonexistent/dev.yaml"},
		{"doctor", "--gpus", "-1", "--num-gpus"},
	} {
		var out, errb bytes.Buffer
		env := cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Doctor: doctorTo}
		code := cli.Run(context.Background(), args, env)
		if code != 2 || strings.Contains(errb.String(), "read config") {
			t.Errorf("mvp %v: exit %d: %s", args, code, errb.String())
		}
	}
}

// TestDoctorOfAConfigThatCannotBeReadExitsTwo: `mvp doctor --config missing.yaml` exited 1, as if a check had
// failed; a file the command names that cannot be read is a usage error (exit 2), as for backup and submit.
func TestDoctorOfAConfigThatCannotBeReadExitsTwo(t *testing.T) {
	var out, errb bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Doctor: doctorTo}
	if code := cli.Run(context.Background(), []string{"doctor", "--gpus", "4", "--config", "/nonexistent/dev.yaml"},
		env); code != 2 || !strings.Contains(errb.String(), "/nonexistent/dev.yaml") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}

// TestDoctorShowsATopLevelKeyNamedAsAV2Section: mvp doctor reads the config too, and says on stderr that a
// top-level `api:` is not read (mvp reads v2.api).
func TestDoctorShowsATopLevelKeyNamedAsAV2Section(t *testing.T) {
	path := writeConfig(t, "address: http://127.0.0.1:1\nshared_root: "+t.TempDir()+"\napi:\n  port: 9000\n")
	out := stderrOf(t, func() {
		_ = runDoctor(context.Background(), []string{"--config", path, "--gpus", "4", "--node-ip", "127.0.0.1"})
	})
	if !strings.Contains(out, "api (line 3)") || !strings.Contains(out, "v2.api") {
		t.Errorf("stderr %q, want a warning naming api (line 3) and v2.api", out)
	}
}
