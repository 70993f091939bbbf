package api_test

import (
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestSecretsAPI: a secret is write-only: PUT stores it (201, then 200 on rotation), the listing shows names and
// times, no answer ever holds the value (not the listing, not the task, not the dry run's Ray payload); a jobspec
// naming an unknown secret is refused; DELETE removes it.
func TestSecretsAPI(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Secrets.KeyEnv = "MVP_TEST_SECRETS_KEY"
	t.Setenv("MVP_TEST_SECRETS_KEY", "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	m := servicetest.Start(t, &service.Main{Config: cfg})
	base := m.URL()
	const value = "hunter2-value-0123456789"
	resp, body := do(t, base, "PUT", "/api/v2/secrets/wandb", "application/json", `{"value": "`+value+`"}`, nil)
	if resp.StatusCode != 201 || strings.Contains(string(body), value) || !strings.Contains(string(body), `"name":"wandb"`) {
		t.Fatalf("put: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, base, "PUT", "/api/v2/secrets/wandb", "application/json", `{"value": "rotated-`+value+`"}`, nil)
	if resp.StatusCode != 200 || strings.Contains(string(body), value) {
		t.Errorf("rotate: %d %s", resp.StatusCode, body)
	}
	// Its 415 said "send application/yaml or application/json"; YAML is not taken here. Found in a user walk-through.
	if resp, body := do(t, base, "PUT", "/api/v2/secrets/wandb", "application/yaml", "value: x\n", nil); resp.StatusCode != 415 ||
		strings.Contains(string(body), "yaml or") {
		t.Errorf("a YAML body: %d %s, want 415 naming application/json only", resp.StatusCode, body)
	}
	for _, bad := range []struct{ path, body string }{
		{"/api/v2/secrets/bad%20name", `{"value": "x"}`},
		{"/api/v2/secrets/wandb", `{"value": ""}`},
		{"/api/v2/secrets/wandb", `{"val": "x"}`},
		{"/api/v2/secrets/wandb", `{"value": "x", "extra": 1}`},
		{"/api/v2/secrets/wandb", `"x"`},
		{"/api/v2/secrets/wandb", `{"value": "x"} {"value": "y"}`}, // which one? neither
		{"/api/v2/secrets/wandb", `{"value": "x", "value": "y"}`},  // nor here (the last one was taken)
	} {
		if resp, body := do(t, base, "PUT", bad.path, "application/json", bad.body, nil); resp.StatusCode != 400 {
			t.Errorf("PUT %s %s: %d %s", bad.path, bad.body, resp.StatusCode, body)
		}
	}
	resp, body = do(t, base, "GET", "/api/v2/secrets", "", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"name":"wandb"`) || strings.Contains(string(body), value) ||
		!strings.Contains(string(body), "updated_at") {
		t.Errorf("list: %d %s", resp.StatusCode, body)
	}
	spec := goodSpec + "secrets: {WANDB_API_KEY: wandb}\n"
	resp, body = do(t, base, "POST", "/api/v2/tasks?dry_run=true", "application/yaml", spec, nil)
	_, payload, _ := strings.Cut(string(body), `"ray_submission"`)
	if resp.StatusCode != 200 || strings.Contains(string(body), value) || strings.Contains(payload, "WANDB_API_KEY") {
		t.Errorf("dry run: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, base, "POST", "/api/v2/tasks", "application/yaml", goodSpec+"secrets: {HF_TOKEN: hf}\n", nil)
	// It says how to store one with the CLI too (it named the HTTP route only: found in walk-through 7).
	if resp.StatusCode != 400 || !strings.Contains(string(body), "no secret named hf") ||
		!strings.Contains(string(body), "mvp secrets put hf") {
		t.Errorf("unknown secret: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, base, "POST", "/api/v2/tasks", "application/yaml", spec, nil)
	if resp.StatusCode != 201 || strings.Contains(string(body), value) {
		t.Errorf("submit: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, base, "DELETE", "/api/v2/secrets/wandb", "", "", nil); resp.StatusCode != 204 {
		t.Errorf("delete: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, base, "DELETE", "/api/v2/secrets/wandb", "", "", nil); resp.StatusCode != 404 {
		t.Errorf("delete twice: %d %s", resp.StatusCode, body)
	}
}

// TestSecretsOff: without a key, storing a secret and submitting a jobspec that names one are refused with a
// message naming the setting.
func TestSecretsOff(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Secrets.KeyEnv = "MVP_TEST_SECRETS_KEY_UNSET"
	m := servicetest.Start(t, &service.Main{Config: cfg})
	for _, c := range []struct{ method, path, ctype, body string }{
		{"PUT", "/api/v2/secrets/wandb", "application/json", `{"value": "x"}`},
		{"GET", "/api/v2/secrets", "", ""},
		{"POST", "/api/v2/tasks", "application/yaml", goodSpec + "secrets: {WANDB_API_KEY: wandb}\n"},
	} {
		resp, body := do(t, m.URL(), c.method, c.path, c.ctype, c.body, nil)
		if resp.StatusCode != 503 || !strings.Contains(string(body), "v2.secrets.key_env") ||
			!strings.Contains(string(body), "MVP_TEST_SECRETS_KEY_UNSET") {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
}

// TestSecretsKeyMalformed: a key that is not 32 bytes stops the service from starting, naming the setting.
func TestSecretsKeyMalformed(t *testing.T) {
	cfg := servicetest.Config(t)
	cfg.V2.Secrets.KeyEnv = "MVP_TEST_SECRETS_KEY_BAD"
	t.Setenv("MVP_TEST_SECRETS_KEY_BAD", "not-a-key")
	m := &service.Main{Config: cfg, Token: servicetest.Token, Ray: servicetest.NewRay(), Cluster: servicetest.OneNode(4)}
	err := m.Open(t.Context())
	m.Close()
	if err == nil || !strings.Contains(err.Error(), "v2.secrets.key_env") {
		t.Errorf("open with a bad key: %v", err)
	}
}
