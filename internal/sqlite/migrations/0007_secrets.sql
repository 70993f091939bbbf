-- Secrets, encrypted at rest (AES-256-GCM with the key in the variable named by v2.secrets.key_env; the name is
-- bound as additional data). The value in the clear is never stored.
CREATE TABLE secrets (
    name       TEXT PRIMARY KEY,
    nonce      BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
