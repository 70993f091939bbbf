package sqlite

import (
	"context"
	"fmt"
	"time"
)

// AddLogout records that the web session with this key was logged out, until until, and forgets the logouts
// whose sessions have expired by then.
func (db *DB) AddLogout(ctx context.Context, key string, until time.Time) error {
	err := db.exec(ctx, func(w *wtx) error {
		if _, err := w.exec(`DELETE FROM web_logouts WHERE until < ?`, nanos(time.Now())); err != nil {
			return err
		}
		_, err := w.exec(`INSERT INTO web_logouts (session_key, until) VALUES (?, ?)
			ON CONFLICT (session_key) DO UPDATE SET until = max(until, excluded.until)`, key, nanos(until))
		return err
	})
	if err != nil {
		return fmt.Errorf("record a logout: %w", err)
	}
	return nil
}

// Logouts returns the recorded logouts whose sessions could still live at now: session key → until when.
func (db *DB) Logouts(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	rows, err := db.queryRead(ctx, `SELECT session_key, until FROM web_logouts WHERE until >= ?`, nanos(now))
	if err != nil {
		return nil, fmt.Errorf("read logouts: %w", db.mapErr(err))
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var key string
		var until int64
		if err := rows.Scan(&key, &until); err != nil {
			return nil, fmt.Errorf("read logouts: %w", err)
		}
		out[key] = fromNanos(until)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read logouts: %w", db.mapErr(err))
	}
	return out, nil
}

// Instance returns the database's own id, which mvp puts in its Ray jobs' metadata, and its key, with which it
// seals what it writes of an attempt's end in the task folder (migration 0013).
func (db *DB) Instance(ctx context.Context) (id string, key []byte, err error) {
	if err := db.queryRowRead(ctx, `SELECT id, key FROM instance`).Scan(&id, &key); err != nil {
		return "", nil, fmt.Errorf("read the database's instance: %w", db.mapErr(err))
	}
	return id, key, nil
}

// PackagesSealed reports whether the Ray door's kept packages were sealed once (migration 0021): a database's
// first start with sealing seals those an earlier mvp kept, then calls MarkPackagesSealed.
func (db *DB) PackagesSealed(ctx context.Context) (bool, error) {
	var sealed bool
	if err := db.queryRowRead(ctx, `SELECT packages_sealed FROM instance`).Scan(&sealed); err != nil {
		return false, fmt.Errorf("read whether the packages were sealed: %w", db.mapErr(err))
	}
	return sealed, nil
}

// MarkPackagesSealed records that the kept packages were sealed once.
func (db *DB) MarkPackagesSealed(ctx context.Context) error {
	if err := db.exec(ctx, func(w *wtx) error {
		_, err := w.exec(`UPDATE instance SET packages_sealed = 1`)
		return err
	}); err != nil {
		return fmt.Errorf("record that the packages were sealed: %w", err)
	}
	return nil
}
