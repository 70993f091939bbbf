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
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SealedSecret is a secret as a store keeps it: its value encrypted (AES-GCM, the name bound as additional data).
type SealedSecret struct {
	SecretInfo
	Nonce      []byte `json:"-"`
	Ciphertext []byte `json:"-"`
}

// SecretStore keeps sealed secrets; it never sees a value in the clear.
type SecretStore interface {
	// PutSecret inserts or replaces a sealed secret; created says it did not exist. A replaced secret keeps its
	// CreatedAt.
	PutSecret(ctx context.Context, s *SealedSecret) (created bool, err error)
	// SealedSecrets returns the named secrets that exist.
	SealedSecrets(ctx context.Context, names []string) (map[string]*SealedSecret, error)
	// ListSecrets returns every secret's name and times, by name.
	ListSecrets(ctx context.Context) ([]SecretInfo, error)
	// DeleteSecret removes a secret, or returns ErrNotFound.
	DeleteSecret(ctx context.Context, name string) error
}
