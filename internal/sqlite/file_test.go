package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// A database whose folder did not exist was made without a word, and mvp served a new, empty queue: the picture
// of an NFS not mounted yet at start. Open says what it had to make, so that the service can warn. Found in a
// walk-through.
func TestOpenSaysWhatItMade(t *testing.T) {
	path := filepath.Join(t.TempDir(), "not-mounted", "db", "mvp.sqlite3")
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if file, folder := db.Created(); !file || !folder {
		t.Errorf("first open: created file %v, folder %v; want both", file, folder)
	}
	must(t, db.Close())
	db, err = Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if file, folder := db.Created(); file || folder {
		t.Errorf("second open: created file %v, folder %v; want neither", file, folder)
	}
}

// A zero-length file at db_path (a `touch`, a copy that failed before its first byte, a file truncated on a full
// disk) holds no queue: SQLite takes it for a new database and mvp served an empty queue without the warning that a
// file it made gets. Open reports it as made. Found by running mvp serve against such a file.
func TestOpenSaysAnEmptyFileWasMadeIntoANewDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mvp.sqlite3")
	must(t, os.WriteFile(path, nil, 0o644))
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if file, folder := db.Created(); !file || folder {
		t.Errorf("open of a zero-length file: created file %v, folder %v; want the file only", file, folder)
	}
}

// The database's folder removed under a running mvp: submits were acknowledged into a file no one could open
// again, and /healthz said ok; after the restart they were gone. A write to a database file that is no longer at
// its path is refused as unavailable, and CheckFile says why; once the file is back, writes go on. Found in a
// walk-through.
func TestAWriteToARemovedDatabaseIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(context.Background(), filepath.Join(dir, "mvp.sqlite3"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	at := time.Date(2025, 12, 23, 14, 32, 1, 0, time.UTC)
	create(t, db, at)
	must(t, db.CheckFile())
	aside := dir + ".aside"
	must(t, os.Rename(dir, aside))
	err = db.CreateTask(context.Background(), newTask(at.Add(time.Second)))
	if mvp.ErrorCode(err) != mvp.CodeUnavailable {
		t.Errorf("a submit into a removed database: %v; want it refused as unavailable", err)
	}
	if err := db.CheckFile(); err == nil {
		t.Errorf("CheckFile with the file gone: nil")
	}
	must(t, os.Rename(aside, dir))
	must(t, db.CheckFile())
	create(t, db, at.Add(2*time.Second))
}
