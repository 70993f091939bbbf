// Package secrets encrypts secrets at rest and hands their values to the scheduler for the Ray submission only:
// AES-256-GCM with a key from the environment variable named by v2.secrets.key_env, a random nonce per write and
// the secret's name as additional data (a ciphertext moved to another name does not open). Nothing here logs,
// stores or returns a value except Values, which the scheduler calls when it builds what it sends to Ray.
package secrets

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/mvp"
)

// KeyFromEnv reads the key from the named variable: 32 bytes as 64 hex digits or as base64. An empty variable is
// no key (nil, nil): secret storage is off. Anything else is an error naming the variable and the setting.
func KeyFromEnv(name string) ([]byte, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return nil, nil
	}
	if b, err := hex.DecodeString(v); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("$%s (v2.secrets.key_env) must hold a 32-byte key as 64 hex digits or base64 "+
		"(e.g. the output of `openssl rand -hex 32`); it holds something else", name)
}

// Vault is secret storage: sealed values in a store, opened with the key.
type Vault struct {
	store  mvp.SecretStore
	aead   cipher.AEAD
	keyEnv string
	now    func() time.Time
}

// New returns a vault over store. With a nil key secret storage is off and every call says how to turn it on.
func New(store mvp.SecretStore, key []byte, keyEnv string, clock mvp.Clock) (*Vault, error) {
	v := &Vault{store: store, keyEnv: keyEnv, now: time.Now}
	if clock != nil {
		v.now = clock.Now
	}
	if key == nil {
		return v, nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	if v.aead, err = cipher.NewGCM(block); err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	return v, nil
}

// CheckKey reports whether the vault can open what is stored: an error when secrets are stored and the key is
// missing or is not the one they were sealed with (every task naming one would fail at its submit). Nothing stored:
// nil, with or without a key.
func (v *Vault) CheckKey(ctx context.Context) error {
	list, err := v.store.ListSecrets(ctx)
	if err != nil {
		return fmt.Errorf("check the secrets key: %w", err)
	}
	if len(list) == 0 {
		return nil
	}
	if !v.Enabled() {
		return fmt.Errorf("%d secret(s) are stored but $%s (v2.secrets.key_env) is empty, so every task naming one "+
			"would fail at its submit: set $%s to the key they were stored with; if that key is lost, set a new "+
			"one and %s", len(list), v.keyEnv, v.keyEnv, forgetThem)
	}
	name := list[0].Name
	sealed, err := v.store.SealedSecrets(ctx, list[0].Owner, []string{name})
	if err != nil {
		return fmt.Errorf("check the secrets key: %w", err)
	}
	if s, ok := sealed[name]; ok {
		if _, err := v.aead.Open(nil, s.Nonce, s.Ciphertext, []byte(name)); err != nil {
			return fmt.Errorf("the key in $%s (v2.secrets.key_env) does not open the stored secrets (secret %q was "+
				"stored with another key), so every task naming one would fail at its submit: set $%s to the key "+
				"they were stored with%s%w", v.keyEnv, name, v.keyEnv, lostKey, errWrongKey)
		}
	}
	return nil
}

// errWrongKey marks CheckKey's refusal of a key that opens nothing stored (its text adds nothing): the one error
// on which ForgetUnreadable deletes. A failure to read what is stored is not it.
var errWrongKey = wrongKey{}

type wrongKey struct{}

func (wrongKey) Error() string { return "" }

// lostKey ends CheckKey's refusal of a key that does not open the secrets: the way out when theirs is lost.
const lostKey = "; if that key is lost, nobody can read them: " + forgetThem

// forgetThem is how a lost key is got over.
const forgetThem = "start mvp serve once with --forget-secrets, which deletes them (and logs whose they were) so " +
	"that their owners store them again with mvp secrets put"

// ForgetUnreadable deletes every stored secret when the vault's key does not open them (CheckKey's refusal: the
// key they were sealed with is lost; with no key at all it refuses) and returns what it deleted, so that mvp
// serve can start (`--forget-secrets`). When the key opens them it deletes nothing: the flag left on a later start is harmless.
func (v *Vault) ForgetUnreadable(ctx context.Context) ([]mvp.SecretInfo, error) {
	err := v.CheckKey(ctx)
	if err == nil {
		return nil, nil
	}
	if v.Enabled() && !errors.Is(err, errWrongKey) {
		// The secrets could not be read to be checked (an I/O error): not a lost key; the right key's secrets
		// were all deleted so.
		return nil, fmt.Errorf("--forget-secrets deletes nothing until the stored secrets can be read: %w", err)
	}
	if !v.Enabled() {
		// No key at all is more often a variable not set on this start than a lost key: the right one would open
		// them. Forgetting wants the new key, which the owners' secrets are then stored again with.
		return nil, fmt.Errorf("--forget-secrets deletes the stored secrets only when $%s (v2.secrets.key_env) holds "+
			"a key that does not open them, and it is empty: set it to the key they were stored with, or to a new "+
			"key if that one is lost", v.keyEnv)
	}
	list, err := v.store.ListSecrets(ctx)
	if err != nil {
		return nil, fmt.Errorf("forget the secrets: %w", err)
	}
	for i, s := range list {
		if err := v.store.DeleteSecret(ctx, s.Owner, s.Name); err != nil && !errors.Is(err, mvp.ErrNotFound) {
			return list[:i], fmt.Errorf("forget secret %q of %s: %w", s.Name, mvp.OwnerName(s.Owner), err)
		}
	}
	return list, nil
}

// Enabled reports whether secrets can be stored and used.
func (v *Vault) Enabled() bool { return v != nil && v.aead != nil }

// Off is the error of every call while secret storage is off.
func (v *Vault) Off() error {
	name := "MVP_SECRETS_KEY"
	if v != nil && v.keyEnv != "" {
		name = v.keyEnv
	}
	return mvp.Errorf(mvp.CodeUnavailable, "secrets", "secret storage is off on this server: set $%s (the variable "+
		"named by v2.secrets.key_env) to a 32-byte key (e.g. `openssl rand -hex 32`) and restart mvp", name)
}

// CheckName refuses a name that is not a secret name.
func CheckName(name string) error {
	if !mvp.SecretNamePattern.MatchString(name) {
		return mvp.Errorf(mvp.CodeInvalid, "name", "%q is not a secret name: a letter or digit, then up to 63 of "+
			"letters, digits, '_', '.' and '-'", clip(name))
	}
	return nil
}

// Put encrypts value and stores it as owner's secret name (an empty owner is mvp.Operator), replacing a value
// already there (the next attempt of a task that uses it gets the new one). Names are each owner's own: another
// user's secret of the same name is neither seen nor touched. It returns what may be shown of the secret and
// whether it is new.
func (v *Vault) Put(ctx context.Context, owner, name, value string) (mvp.SecretInfo, bool, error) {
	if !v.Enabled() {
		return mvp.SecretInfo{}, false, v.Off()
	}
	if err := CheckName(name); err != nil {
		return mvp.SecretInfo{}, false, err
	}
	switch {
	case value == "":
		return mvp.SecretInfo{}, false, mvp.Errorf(mvp.CodeInvalid, "value", "the secret's value is empty")
	case len(value) > mvp.MaxSecretBytes:
		return mvp.SecretInfo{}, false, mvp.Errorf(mvp.CodeTooLarge, "value", "the secret's value is larger than %d bytes", mvp.MaxSecretBytes)
	case !utf8.ValidString(value) || strings.ContainsRune(value, 0):
		return mvp.SecretInfo{}, false, mvp.Errorf(mvp.CodeInvalid, "value", "the secret's value must be UTF-8 text without NUL (it becomes an environment variable)")
	}
	nonce := make([]byte, v.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return mvp.SecretInfo{}, false, fmt.Errorf("seal secret %s: %w", name, err)
	}
	now := v.now().UTC()
	owner = mvp.OwnerName(owner)
	s := &mvp.SealedSecret{SecretInfo: mvp.SecretInfo{Name: name, Owner: owner, CreatedAt: now,
		UpdatedAt: now}, Nonce: nonce,
		Ciphertext: v.aead.Seal(nil, nonce, []byte(value), []byte(name))}
	created, err := v.store.PutSecret(ctx, s)
	if err != nil {
		return mvp.SecretInfo{}, false, err
	}
	info := s.SecretInfo
	if !created {
		if got, err := v.store.SealedSecrets(ctx, owner, []string{name}); err == nil && got[name] != nil {
			info = got[name].SecretInfo
		}
	}
	return info, created, nil
}

// List returns every secret's name and times.
func (v *Vault) List(ctx context.Context) ([]mvp.SecretInfo, error) {
	if !v.Enabled() {
		return nil, v.Off()
	}
	return v.store.ListSecrets(ctx)
}

// Delete removes owner's secret name (an empty owner is mvp.Operator).
func (v *Vault) Delete(ctx context.Context, owner, name string) error {
	if !v.Enabled() {
		return v.Off()
	}
	if err := CheckName(name); err != nil {
		return err
	}
	err := v.store.DeleteSecret(ctx, owner, name)
	if errors.Is(err, mvp.ErrNotFound) {
		return mvp.Errorf(mvp.CodeNotFound, "name", "no secret %q", name)
	}
	return err
}

// Values opens the operator's named secrets for one Ray submission (ValuesOf the operator).
func (v *Vault) Values(ctx context.Context, names []string) (map[string]string, error) {
	return v.ValuesOf(ctx, mvp.Operator, names)
}

// ValuesOf opens owner's named secrets for one Ray submission of a task of owner: a task uses its owner's
// secrets only. A secret that does not exist (deleted since the task was submitted) or does not open (the key
// changed) is an error naming it, never its value.
func (v *Vault) ValuesOf(ctx context.Context, owner string, names []string) (map[string]string, error) {
	if len(names) == 0 {
		return map[string]string{}, nil
	}
	if !v.Enabled() {
		return nil, v.Off()
	}
	owner = mvp.OwnerName(owner)
	sealed, err := v.store.SealedSecrets(ctx, owner, names)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range names {
		if _, ok := sealed[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, mvp.Errorf(mvp.CodeInvalid, "secrets", "%s has no secret(s) %s (deleted since the task was "+
			"submitted, or another user's before names were each user's own): store them for %s (mvp secrets put %s "+
			"--owner %s; or PUT /api/v2/secrets/%s?owner=%s), then resubmit", owner, strings.Join(missing, ", "), owner,
			missing[0], owner, missing[0], owner)
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		s := sealed[n]
		plain, err := v.aead.Open(nil, s.Nonce, s.Ciphertext, []byte(n))
		if err != nil {
			return nil, mvp.Errorf(mvp.CodeInvalid, "secrets", "secret %q cannot be decrypted with the key in $%s: "+
				"was the key changed? Store the secret again", n, v.keyEnv)
		}
		out[n] = string(plain)
	}
	return out, nil
}

func clip(s string) string { return mvp.Clip(s, 80) }
