package mvp

import (
	"context"
	"regexp"
	"time"
)

// SecretNamePattern is the shape of a secret's name: a letter or digit, then up to 63 of letters, digits, '_', '.'
// and '-'.
var SecretNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// MaxSecretBytes bounds a secret's value.
const MaxSecretBytes = 64 << 10

// SecretInfo is all that is ever shown of a stored secret: never its value.
type SecretInfo struct {
	Name string `json:"name"`
	// Owner is the user who stored it (Operator for the internal token). A secret's name is its owner's: each user
	// has names of their own, and a task uses its owner's secrets only.
	Owner     string    `json:"owner"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SealedSecret is a secret as a store keeps it: its value encrypted (AES-GCM, the name bound as additional data).
type SealedSecret struct {
	SecretInfo
	Nonce      []byte `json:"-"`
	Ciphertext []byte `json:"-"`
}

// SecretStore keeps sealed secrets, each under its owner and name; it never sees a value in the clear. An empty
// owner is Operator.
type SecretStore interface {
	// PutSecret inserts or replaces s.Owner's secret s.Name; created says it did not exist. A replaced secret
	// keeps its CreatedAt.
	PutSecret(ctx context.Context, s *SealedSecret) (created bool, err error)
	// SealedSecrets returns those of owner's secrets named that exist, by name.
	SealedSecrets(ctx context.Context, owner string, names []string) (map[string]*SealedSecret, error)
	// ListSecrets returns every owner's secrets' names and times, by name, then owner.
	ListSecrets(ctx context.Context) ([]SecretInfo, error)
	// DeleteSecret removes owner's secret name, or returns ErrNotFound.
	DeleteSecret(ctx context.Context, owner, name string) error
}
