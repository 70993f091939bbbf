package sqlite

import (
	"context"
	"fmt"
	"strings"

	"github.com/mvp2/mvp/internal/mvp"
)

// PutSecret inserts or replaces s.Owner's sealed secret s.Name; a replaced secret keeps its created_at.
func (db *DB) PutSecret(ctx context.Context, s *mvp.SealedSecret) (bool, error) {
	if s == nil || !mvp.SecretNamePattern.MatchString(s.Name) || len(s.Nonce) == 0 || len(s.Ciphertext) == 0 {
		return false, mvp.Errorf(mvp.CodeInvalid, "name", "put secret: a sealed secret needs a valid name, a nonce and a ciphertext")
	}
	var created bool
	owner := s.Owner
	owner = mvp.OwnerName(owner)
	err := db.exec(ctx, func(w *wtx) error {
		res, err := w.exec(`UPDATE secrets SET nonce = ?, ciphertext = ?, updated_at = ? WHERE name = ? AND owner = ?`,
			s.Nonce, s.Ciphertext, nanos(orNow(s.UpdatedAt)), s.Name, owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 1 {
			return nil
		}
		created = true
		_, err = w.exec(`INSERT INTO secrets (name, nonce, ciphertext, created_at, updated_at, owner)
			VALUES (?, ?, ?, ?, ?, ?)`,
			s.Name, s.Nonce, s.Ciphertext, nanos(orNow(s.CreatedAt)), nanos(orNow(s.UpdatedAt)), owner)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put secret %s: %w", s.Name, err)
	}
	return created, nil
}

// SealedSecrets returns those of owner's secrets named that exist, by name.
func (db *DB) SealedSecrets(ctx context.Context, owner string, names []string) (map[string]*mvp.SealedSecret, error) {
	out := map[string]*mvp.SealedSecret{}
	if len(names) == 0 {
		return out, nil
	}
	owner = mvp.OwnerName(owner)
	args := make([]any, 0, len(names)+1)
	args = append(args, owner)
	for _, n := range names {
		args = append(args, n)
	}
	rows, err := db.queryRead(ctx, `SELECT name, nonce, ciphertext, created_at, updated_at, owner FROM secrets
		WHERE owner = ? AND name IN (?`+strings.Repeat(", ?", len(names)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", db.mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var s mvp.SealedSecret
		var c, u int64
		if err := rows.Scan(&s.Name, &s.Nonce, &s.Ciphertext, &c, &u, &s.Owner); err != nil {
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

// ListSecrets returns every owner's secrets' names and times, by name, then owner; never a value.
func (db *DB) ListSecrets(ctx context.Context) ([]mvp.SecretInfo, error) {
	rows, err := db.queryRead(ctx, `SELECT name, created_at, updated_at, owner FROM secrets ORDER BY name, owner`)
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", db.mapErr(err))
	}
	defer rows.Close()
	out := []mvp.SecretInfo{}
	for rows.Next() {
		var s mvp.SecretInfo
		var c, u int64
		if err := rows.Scan(&s.Name, &c, &u, &s.Owner); err != nil {
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

// DeleteSecret removes owner's secret name; one owner has not is mvp.ErrNotFound.
func (db *DB) DeleteSecret(ctx context.Context, owner, name string) error {
	owner = mvp.OwnerName(owner)
	err := db.exec(ctx, func(w *wtx) error {
		res, err := w.exec(`DELETE FROM secrets WHERE owner = ? AND name = ?`, owner, name)
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
