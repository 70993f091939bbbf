-- A secret's name is its owner's (issue 15): two users may each keep a secret called wandb, and a user no longer
-- learns that a name is taken by someone else. The key becomes (owner, name); SQLite cannot change a primary key
-- in place, so the table is made again with the same rows.
CREATE TABLE secrets_per_owner (
    owner      TEXT NOT NULL,
    name       TEXT NOT NULL,
    nonce      BLOB NOT NULL,
    ciphertext BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (owner, name)
) STRICT;
INSERT INTO secrets_per_owner (owner, name, nonce, ciphertext, created_at, updated_at)
    SELECT owner, name, nonce, ciphertext, created_at, updated_at FROM secrets;
DROP TABLE secrets;
ALTER TABLE secrets_per_owner RENAME TO secrets;
