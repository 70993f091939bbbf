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

// TestATokenThatCannotBeSentIsRefused: a token with a newline or a space inside (a variable filled from a file
// with two lines) started mvp, and its holder could never send it in a header: locked out, with no word why.
func TestATokenThatCannotBeSentIsRefused(t *testing.T) {
	for _, bad := range []string{"0123456789abcdef\n0123456789abcdef", "0123456789 abcdef0123", "0123456789abcdef\tx",
		"0123456789abcdefé"} {
		t.Setenv("MVP_TEST_TOKEN", bad)
		if _, _, err := TokenFromEnv("MVP_TEST_TOKEN", false); err == nil || !strings.Contains(err.Error(), "$MVP_TEST_TOKEN") ||
			!strings.Contains(err.Error(), "printable") {
			t.Errorf("%q: %v, want an error naming the variable and saying what a token may hold", bad, err)
		}
	}
	t.Setenv("MVP_TEST_TOKEN", "  0123456789abcdef-_.~+/=  \n") // around it: trimmed, as the header's is
	if tok, _, err := TokenFromEnv("MVP_TEST_TOKEN", false); err != nil || tok != "0123456789abcdef-_.~+/=" {
		t.Errorf("a token with blanks around it: %q %v", tok, err)
	}
}

func TestDuplicateKey(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1,"b":2}`: "",
		`{"a":1,"a":2}`: "a",
		`{"a":{"x":1,"y":{"x":2}},"b":[{"x":1},{"x":2}]}`: "",
		`{"a":{"x":1,"x":2}}`:                             "x",
		`{"a":[{"x":1,"x":2}]}`:                           "x",
		`{"a":{"b":1},"a":2}`:                             "a",
		`{"a":"b","b":"a"}`:                               "",
		`[{"a":1},{"a":1}]`:                               "",
		`not json`:                                        "",
		// Go's decoder takes a struct's field in any case: at the top level, VALUE is value again (found in review).
		`{"value":"x","VALUE":"y"}`: "VALUE",
		// Deeper, keys are data (a jobspec's env names HF_TOKEN and hf_token apart).
		`{"jobspec":{"env":{"HF_TOKEN":"a","hf_token":"b"}}}`: "",
	} {
		if got := duplicateKey([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}
