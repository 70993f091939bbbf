package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the database at dbPath to the new file to (VACUUM INTO, on a read-only
// connection of its own, so it may run while mvp serve writes), then checks the copy's integrity. A copy of the
// file alone is not a backup: with WAL, what was committed since the last checkpoint is in the -wal file beside it.
// to must not exist; a failed backup leaves no file there.
func Backup(ctx context.Context, dbPath, to string) (tasks int, err error) {
	src, err := filepath.Abs(dbPath)
	if err != nil {
		return 0, fmt.Errorf("back up %s: %w", dbPath, err)
	}
	if _, err := os.Stat(src); err != nil {
		return 0, fmt.Errorf("back up %s: %w (set v2.sqlite.db_path, or --db-path)", src, err)
	}
	dst, err := filepath.Abs(to)
	if err != nil {
		return 0, fmt.Errorf("back up to %s: %w", to, err)
	}
	// The file is made here, empty and exclusively (VACUUM INTO writes into an empty file): one that exists is
	// never touched, and what a failure leaves is this call's own to remove.
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return 0, fmt.Errorf("back up to %s: the file exists already; name a new file", dst)
	}
	if err != nil {
		return 0, fmt.Errorf("back up to %s: %w", dst, err)
	}
	f.Close()
	keep := false
	defer func() {
		if !keep {
			_ = os.Remove(dst)
		}
	}()
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "5000")
	db, err := sql.Open("sqlite3", dsn(src, q))
	if err != nil {
		return 0, fmt.Errorf("back up %s: %w", src, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return 0, fmt.Errorf("back up %s to %s: %w", src, dst, err)
	}
	cq := url.Values{}
	cq.Set("mode", "ro")
	c, err := sql.Open("sqlite3", dsn(dst, cq))
	if err != nil {
		return 0, fmt.Errorf("check the backup %s: %w", dst, err)
	}
	defer c.Close()
	var ok string
	if err := c.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		return 0, fmt.Errorf("check the backup %s: integrity %q, %v", dst, ok, err)
	}
	if err := c.QueryRowContext(ctx, `SELECT count(*) FROM tasks`).Scan(&tasks); err != nil {
		return 0, fmt.Errorf("check the backup %s: %w", dst, err)
	}
	keep = true
	return tasks, nil
}
