package secrets_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/secrets"
	"github.com/mvp2/mvp/internal/sqlite"
)

const hexKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func open(t *testing.T) *sqlite.DB {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "mvp.sqlite3"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestKeyFromEnv(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, 32)
	for _, v := range []string{hexKey, base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw)} {
		t.Setenv("MVP_TEST_KEY", v)
		if k, err := secrets.KeyFromEnv("MVP_TEST_KEY"); err != nil || len(k) != 32 {
			t.Errorf("%q: %d bytes, %v", v, len(k), err)
		}
	}
	t.Setenv("MVP_TEST_KEY", "")
	if k, err := secrets.KeyFromEnv("MVP_TEST_KEY"); k != nil || err != nil {
		t.Errorf("empty: %v %v", k, err)
	}
	for _, bad := range []string{"short", hexKey[:62], base64.StdEncoding.EncodeToString(raw[:16])} {
		t.Setenv("MVP_TEST_KEY", bad)
		if _, err := secrets.KeyFromEnv("MVP_TEST_KEY"); err == nil || !strings.Contains(err.Error(), "v2.secrets.key_env") ||
			strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v (must name the setting and not echo the key)", bad, err)
		}
	}
}

// TestVault: a value is stored encrypted (the store never holds it in the clear), opens only under its own name,
// is replaced by a put (rotation), and a missing or deleted secret is an error naming it.
func TestVault(t *testing.T) {
	db := open(t)
	t.Setenv("MVP_TEST_KEY", hexKey)
	key, _ := secrets.KeyFromEnv("MVP_TEST_KEY")
	v, err := secrets.New(db, key, "MVP_TEST_KEY", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const value = "wandb-key-0123456789"
	info, created, err := v.Put(ctx, "", "wandb", value)
	if err != nil || !created || info.Name != "wandb" || info.UpdatedAt.IsZero() {
		t.Fatalf("put: %+v %v %v", info, created, err)
	}
	sealed, err := db.SealedSecrets(ctx, "", []string{"wandb"})
	if err != nil || sealed["wandb"] == nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed["wandb"].Ciphertext, []byte(value)) || bytes.Contains(sealed["wandb"].Nonce, []byte(value)) {
		t.Errorf("the value is stored in the clear")
	}
	got, err := v.Values(ctx, []string{"wandb"})
	if err != nil || got["wandb"] != value {
		t.Fatalf("values: %v %v", got, err)
	}
	// A ciphertext moved under another name does not open.
	moved := *sealed["wandb"]
	moved.Name = "other"
	if _, err := db.PutSecret(ctx, &moved); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Values(ctx, []string{"other"}); err == nil || !strings.Contains(err.Error(), "cannot be decrypted") {
		t.Errorf("a moved ciphertext opened: %v", err)
	}
	// Rotation.
	if _, created, err := v.Put(ctx, "", "wandb", "rotated"); err != nil || created {
		t.Fatalf("rotate: %v %v", created, err)
	}
	if got, _ := v.Values(ctx, []string{"wandb"}); got["wandb"] != "rotated" {
		t.Errorf("after rotation: %q", got["wandb"])
	}
	list, err := v.List(ctx)
	if err != nil || len(list) != 2 || list[1].Name != "wandb" {
		t.Errorf("list: %+v %v", list, err)
	}
	if err := v.Delete(ctx, "", "wandb"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Values(ctx, []string{"wandb", "other"}); err == nil || !strings.Contains(err.Error(), "wandb") {
		t.Errorf("deleted: %v", err)
	}
	var e *mvp.Error
	if err := v.Delete(ctx, "", "wandb"); !errors.As(err, &e) || e.Code != mvp.CodeNotFound {
		t.Errorf("delete twice: %v", err)
	}
	for _, bad := range []struct{ name, value string }{{"bad name", "x"}, {"-x", "x"}, {"ok", ""}, {"ok", "a\x00b"},
		{"ok", strings.Repeat("x", mvp.MaxSecretBytes+1)}} {
		if _, _, err := v.Put(ctx, "", bad.name, bad.value); err == nil {
			t.Errorf("put %q accepted", bad.name)
		}
	}
	// A different key does not open what the first one sealed.
	v.Put(ctx, "", "wandb", value)
	other, _ := secrets.New(db, bytes.Repeat([]byte{1}, 32), "MVP_TEST_KEY", nil)
	if _, err := other.Values(ctx, []string{"wandb"}); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("another key: %v", err)
	}
}

// TestVaultOff: without a key every call says how to turn secret storage on.
func TestVaultOff(t *testing.T) {
	v, err := secrets.New(open(t), nil, "MY_KEY_VAR", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, _, perr := v.Put(ctx, "", "wandb", "x")
	_, lerr := v.List(ctx)
	_, verr := v.Values(ctx, []string{"wandb"})
	for _, err := range []error{perr, lerr, verr, v.Delete(ctx, "", "wandb")} {
		if err == nil || !strings.Contains(err.Error(), "$MY_KEY_VAR") || !strings.Contains(err.Error(), "v2.secrets.key_env") ||
			mvp.ErrorCode(err) != mvp.CodeUnavailable {
			t.Errorf("off: %v", err)
		}
	}
	if got, err := v.Values(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("no secrets asked for: %v %v", got, err)
	}
}

// TestCheckKeyOpensTheStoredSecrets: a service restarted with another key, or none, failed every queued task that
// names a secret, for good, at its submit (USER_ERROR; each to be resubmitted by hand). The start now checks that
// the key opens what is stored, and says which variable to set.
func TestCheckKeyOpensTheStoredSecrets(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	key := bytes.Repeat([]byte{1}, 32)
	v, err := secrets.New(db, key, "MVP_SECRETS_KEY", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CheckKey(ctx); err != nil {
		t.Fatalf("nothing stored: %v", err)
	}
	if _, _, err := v.Put(ctx, "", "wandb", "value-1234567890"); err != nil {
		t.Fatal(err)
	}
	if err := v.CheckKey(ctx); err != nil {
		t.Fatalf("the right key: %v", err)
	}
	other, _ := secrets.New(db, bytes.Repeat([]byte{2}, 32), "MVP_SECRETS_KEY", nil)
	if err := other.CheckKey(ctx); err == nil || !strings.Contains(err.Error(), "MVP_SECRETS_KEY") || !strings.Contains(err.Error(), "wandb") {
		t.Errorf("another key: %v", err)
	}
	off, _ := secrets.New(db, nil, "MVP_SECRETS_KEY", nil)
	if err := off.CheckKey(ctx); err == nil || !strings.Contains(err.Error(), "MVP_SECRETS_KEY") {
		t.Errorf("no key with secrets stored: %v", err)
	}
}

// TestALostKeyCanBeForgotten: with secrets stored and their key lost (a key generated in a shell and not kept, as
// a make run user does), mvp serve refused to start ("set $MVP_SECRETS_KEY to the key they were stored with") and
// nothing but editing the database by hand let it start again. The refusal names the way out, mvp serve
// --forget-secrets, which deletes the secrets the key does not open (nobody can read them) and nothing else.
func TestALostKeyCanBeForgotten(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	v, err := secrets.New(db, bytes.Repeat([]byte{1}, 32), "MVP_SECRETS_KEY", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, owner := range []string{"", "alice"} {
		if _, _, err := v.Put(ctx, owner, "wandb", "value-1234567890"); err != nil {
			t.Fatal(err)
		}
	}
	if gone, err := v.ForgetUnreadable(ctx); err != nil || len(gone) != 0 {
		t.Fatalf("the right key opens them: forgot %v, %v", gone, err)
	}
	other, _ := secrets.New(db, bytes.Repeat([]byte{2}, 32), "MVP_SECRETS_KEY", nil)
	off, _ := secrets.New(db, nil, "MVP_SECRETS_KEY", nil)
	for _, w := range []*secrets.Vault{other, off} {
		if err := w.CheckKey(ctx); err == nil || !strings.Contains(err.Error(), "--forget-secrets") {
			t.Errorf("the refusal does not name the way out: %v", err)
		}
	}
	gone, err := other.ForgetUnreadable(ctx)
	if err != nil || len(gone) != 2 {
		t.Fatalf("forgot %v, %v; want both secrets", gone, err)
	}
	if err := other.CheckKey(ctx); err != nil {
		t.Errorf("after forgetting: %v", err)
	}
	if list, err := db.ListSecrets(ctx); err != nil || len(list) != 0 {
		t.Errorf("left: %v %v", list, err)
	}
}

// TestForgettingNeedsAKey: mvp serve --forget-secrets started without any key (the variable unset on one restart,
// the flag left in a script) deleted every stored secret, which the right key would still have opened. Without a
// key it refuses and deletes nothing: the secrets are forgotten only when a key is given that does not open them.
func TestForgettingNeedsAKey(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	v, err := secrets.New(db, bytes.Repeat([]byte{1}, 32), "MVP_SECRETS_KEY", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.Put(ctx, "", "wandb", "value-1234567890"); err != nil {
		t.Fatal(err)
	}
	off, _ := secrets.New(db, nil, "MVP_SECRETS_KEY", nil)
	gone, err := off.ForgetUnreadable(ctx)
	if err == nil || !strings.Contains(err.Error(), "MVP_SECRETS_KEY") || len(gone) != 0 {
		t.Errorf("forget without a key: forgot %v, %v; want a refusal naming the variable", gone, err)
	}
	if list, err := db.ListSecrets(ctx); err != nil || len(list) != 1 {
		t.Errorf("left after a forget without a key: %v %v; want the secret kept", list, err)
	}
}
