package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A backup taken while the store writes holds every task acknowledged before it, with nothing read from the WAL
// missed (a copy of the file alone missed the last minutes: found in a walk-through), and refuses to overwrite.
func TestBackupWhileTheStoreWrites(t *testing.T) {
	db, path := open(t)
	at := time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)
	for i := 0; i < 50; i++ {
		create(t, db, at.Add(time.Duration(i)*time.Second))
	}
	to := filepath.Join(t.TempDir(), "backup.sqlite3")
	n, err := Backup(context.Background(), path, to)
	if err != nil {
		t.Fatal(err)
	}
	if n != 50 {
		t.Errorf("the backup holds %d tasks, want 50", n)
	}
	create(t, db, at.Add(time.Hour)) // the store goes on
	if _, err := Backup(context.Background(), path, to); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("a backup over an existing file: %v", err)
	}
	copyDB, err := Open(context.Background(), to, Options{})
	if err != nil {
		t.Fatalf("open the backup as mvp would: %v", err)
	}
	defer copyDB.Close()
	if _, err := os.Stat(to); err != nil {
		t.Fatal(err)
	}
}
