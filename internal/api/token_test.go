package api

import (
	"strings"
	"testing"
)

func TestTokenFromEnv(t *testing.T) {
	t.Setenv("MVP_TEST_TOKEN", "")
	if _, _, err := TokenFromEnv("MVP_TEST_TOKEN", false); err == nil || !strings.Contains(err.Error(), "--dev-generate-token") {
		t.Errorf("no token, no flag: %v", err)
	}
	tok, gen, err := TokenFromEnv("MVP_TEST_TOKEN", true)
	if err != nil || !gen || len(tok) < 32 {
		t.Errorf("generated %q %v %v", tok, gen, err)
	}
	t.Setenv("MVP_TEST_TOKEN", "short")
	if _, _, err := TokenFromEnv("MVP_TEST_TOKEN", true); err == nil {
		t.Error("a short token was accepted")
	}
	t.Setenv("MVP_TEST_TOKEN", "a-long-enough-token-123")
	if tok, gen, err := TokenFromEnv("MVP_TEST_TOKEN", true); err != nil || gen || tok != "a-long-enough-token-123" {
		t.Errorf("%q %v %v", tok, gen, err)
	} else if strings.Contains(err2s(err), tok) {
		t.Error("token in an error")
	}
}

func err2s(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
