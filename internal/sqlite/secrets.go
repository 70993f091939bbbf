package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/mvp2/mvp/internal/mvp"
)

// PutSecret inserts or replaces a sealed secret in one statement; a replaced secret keeps its created_at.
func (db *DB) PutSecret(ctx context.Context, s *mvp.SealedSecret) (bool, error) {
	if s == nil || !mvp.SecretNamePattern.MatchString(s.Name) || len(s.Nonce) == 0 || len(s.Ciphertext) == 0 {
		return false, mvp.Errorf(mvp.CodeInvalid, "name", "put secret: a sealed secret needs a valid name, a nonce and a ciphertext")
	}
	var created bool
	err := db.exec(ctx, func(w *wtx) error {
		res, err := w.exec(`UPDATE secrets SET nonce = ?, ciphertext = ?, updated_at = ? WHERE name = ?`,
			s.Nonce, s.Ciphertext, nanos(orNow(s.UpdatedAt)), s.Name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			return nil
		}
		created = true
		_, err = w.exec(`INSERT INTO secrets (name, nonce, ciphertext, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
			s.Name, s.Nonce, s.Ciphertext, nanos(orNow(s.CreatedAt)), nanos(orNow(s.UpdatedAt)))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put secret %s: %w", s.Name, err)
	}
	return created, nil
}

// SealedSecrets returns the named secrets that exist.
func (db *DB) SealedSecrets(ctx context.Context, names []string) (map[string]*mvp.SealedSecret, error) {
	out := map[string]*mvp.SealedSecret{}
	if len(names) == 0 {
		return out, nil
	}
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	rows, err := db.read.QueryContext(ctx, `SELECT name, nonce, ciphertext, created_at, updated_at FROM secrets
		WHERE name IN (?`+strings.Repeat(", ?", len(names)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", db.mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var s mvp.SealedSecret
		var c, u int64
		if err := rows.Scan(&s.Name, &s.Nonce, &s.Ciphertext, &c, &u); err != nil {
			return nil, fmt.Errorf("read secrets: %w", err)
		}
		s.CreatedAt, s.UpdatedAt = fromNanos(c), fromNanos(u)
		out[s.Name] = &s
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read secrets: %w", db.mapErr(err))
	}
	return out, nil
}

// ListSecrets returns every secret's name and times, by name; never a value.
func (db *DB) ListSecrets(ctx context.Context) ([]mvp.SecretInfo, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT name, created_at, updated_at FROM secrets ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", db.mapErr(err))
	}
	defer rows.Close()
	out := []mvp.SecretInfo{}
	for rows.Next() {
		var s mvp.SecretInfo
		var c, u int64
		if err := rows.Scan(&s.Name, &c, &u); err != nil {
			return nil, fmt.Errorf("list secrets: %w", err)
		}
		s.CreatedAt, s.UpdatedAt = fromNanos(c), fromNanos(u)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list secrets: %w", db.mapErr(err))
	}
	return out, nil
}

// DeleteSecret removes a secret; an unknown name is mvp.ErrNotFound.
func (db *DB) DeleteSecret(ctx context.Context, name string) error {
	err := db.exec(ctx, func(w *wtx) error {
		res, err := w.exec(`DELETE FROM secrets WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound("no secret %q", name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	return nil
}
