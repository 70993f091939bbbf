package secrets_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/secrets"
	"github.com/mvp2/mvp/internal/sqlite"
)

// FuzzKeyFromEnv feeds KeyFromEnv what an operator may put into v2.secrets.key_env's variable. A key taken is 32
// bytes; a refusal names the setting and never echoes the variable's value.
func FuzzKeyFromEnv(f *testing.F) {
	raw := make([]byte, 32)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	for _, s := range []string{hexKey, " " + hexKey + "\n", base64.StdEncoding.EncodeToString(raw),
		base64.RawURLEncoding.EncodeToString(raw), "short", hexKey[:62], base64.StdEncoding.EncodeToString(raw[:16]), ""} {
		f.Add(s)
	}
	const name = "MVP_FUZZ_SECRETS_KEY"
	f.Fuzz(func(t *testing.T, v string) {
		if strings.ContainsRune(v, 0) {
			return // no environment holds it
		}
		if err := os.Setenv(name, v); err != nil {
			return
		}
		defer os.Unsetenv(name)
		k, err := secrets.KeyFromEnv(name)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "v2.secrets.key_env") {
				t.Fatalf("%q: a refusal that does not name the setting: %s", v, msg)
			}
			if w := strings.TrimSpace(v); len(w) >= 4 && strings.Contains(msg, w) {
				t.Fatalf("%q: the refusal echoes the value: %s", v, msg)
			}
			return
		}
		if k != nil && len(k) != 32 {
			t.Fatalf("%q: a key of %d bytes taken", v, len(k))
		}
		if k == nil && strings.TrimSpace(v) != "" {
			t.Fatalf("%q: no key and no error", v)
		}
	})
}

// FuzzPut feeds Put an owner, a name and a value as PUT /api/v2/secrets/{name} gives them. A refusal is an
// *mvp.Error with a message; a secret stored opens to the very value put, under its owner and name.
func FuzzPut(f *testing.F) {
	for _, c := range [][3]string{
		{"", "WANDB_API_KEY", "wandb-key-0123456789"}, {"alice", "hf.token-1", "hf_x"}, {"", "", "v"}, {"", "-x", "v"},
		{"", "a", ""}, {"", "a", "caf\xe9"}, {"", "a", "a\x00b"}, {"bob", strings.Repeat("n", 70), "v"}, {"", "é", "v"},
		{"", "K", "line1\nline2 \"quoted\" $(x)"},
	} {
		f.Add(c[0], c[1], c[2])
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "mvp.sqlite3"), sqlite.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	f.Setenv("MVP_TEST_KEY", hexKey)
	key, _ := secrets.KeyFromEnv("MVP_TEST_KEY")
	v, err := secrets.New(db, key, "MVP_TEST_KEY", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, owner, name, value string) {
		info, _, err := v.Put(ctx, owner, name, value)
		if err != nil {
			var e *mvp.Error
			if !errors.As(err, &e) || strings.TrimSpace(e.Message) == "" {
				t.Fatalf("Put(%q, %q): %#v, not an *mvp.Error with a message", owner, name, err)
			}
			if e.Field == "value" && len(value) >= 4 && strings.Contains(e.Message, value) {
				t.Fatalf("Put(%q, %q): the refusal echoes the value: %s", owner, name, e.Message)
			}
			return
		}
		if info.Name != name || info.Owner != mvp.OwnerName(owner) {
			t.Fatalf("Put(%q, %q): stored as %q of %q", owner, name, info.Name, info.Owner)
		}
		got, err := v.ValuesOf(ctx, owner, []string{name})
		if err != nil || got[name] != value {
			t.Fatalf("Put(%q, %q, %q): opens to %q, %v", owner, name, value, got[name], err)
		}
	})
}
