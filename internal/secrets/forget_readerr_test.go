package secrets_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/secrets"
)

// flaky is a store whose first read of sealed values fails (an I/O error, say).
type flaky struct {
	mvp.SecretStore
	failed bool
}

func (f *flaky) SealedSecrets(ctx context.Context, owner string, names []string) (map[string]*mvp.SealedSecret, error) {
	if !f.failed {
		f.failed = true
		return nil, errors.New("disk I/O error")
	}
	return f.SecretStore.SealedSecrets(ctx, owner, names)
}

// TestForgetUnreadableKeepsSecretsTheKeyOpens: --forget-secrets is documented as harmless with the right key ("With a key that opens them the flag
// deletes nothing"); a read that fails once while it checks deletes every secret.
func TestForgetUnreadableKeepsSecretsTheKeyOpens(t *testing.T) {
	db := open(t)
	t.Setenv("MVP_TEST_KEY", hexKey)
	key, _ := secrets.KeyFromEnv("MVP_TEST_KEY")
	ctx := context.Background()
	v, err := secrets.New(db, key, "MVP_TEST_KEY", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := v.Put(ctx, "alice", "wandb", "v1"); err != nil {
		t.Fatal(err)
	}
	v2, _ := secrets.New(&flaky{SecretStore: db}, key, "MVP_TEST_KEY", nil)
	gone, err := v2.ForgetUnreadable(ctx)
	if len(gone) > 0 {
		t.Errorf("the right key, one failed read: %d secret(s) deleted (%v), err %v", len(gone), gone[0].Name, err)
	}
	if err == nil {
		t.Errorf("the right key, one failed read: no error; want the start stopped, saying the secrets could not be read")
	}
}
