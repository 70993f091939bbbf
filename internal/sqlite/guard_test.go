package sqlite

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefusesADatabaseFromANewerMVP: a database where a migration this binary does not know is recorded
// (written by a newer mvp, then rolled back) is refused at Open with both versions named; it was opened, and the
// old binary wrote a schema it does not know.
func TestOpenRefusesADatabaseFromANewerMVP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mvp.sqlite3")
	db, err := Open(context.Background(), path, Options{})
	must(t, err)
	must(t, db.Close())
	ms, err := loadMigrations()
	must(t, err)
	last := ms[len(ms)-1].version
	raw, err := sql.Open("sqlite3", path)
	must(t, err)
	_, err = raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_a_newer_mvp.sql', 0)`, last+1)
	must(t, err)
	must(t, raw.Close())
	db, err = Open(context.Background(), path, Options{})
	if err == nil {
		db.Close()
		t.Fatalf("Open accepted a database with migration %d applied, newer than this binary's last (%d)", last+1, last)
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("error %q does not say the database is from a newer mvp", err)
	}
}

// TestOpenTakesAPathWithAPercentSign: the path is a file path, not a URI: a folder named "runs%2041" is where the
// database goes (SQLite decoded %20 and opened "runs 41").
func TestOpenTakesAPathWithAPercentSign(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs%2041", "mvp.sqlite3")
	db, err := Open(context.Background(), path, Options{})
	must(t, err)
	defer db.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at %s: %v", path, err)
	}
}

// queryPlan is SQLite's plan for q, one detail per line.
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.read.Query(`EXPLAIN QUERY PLAN `+q, args...)
	must(t, err)
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		must(t, rows.Scan(&id, &parent, &unused, &detail))
		plan = append(plan, detail)
	}
	must(t, rows.Err())
	return strings.Join(plan, "; ")
}

// TestActiveWalksTheLiveAttemptsIndex: the scheduler reads the active tasks twice a pass; the attempts whose Ray job
// may be alive are found through the partial index attempts_live, not attempts_by_end's NULL range (which holds
// every attempt Ray refused: they end FAILED with no end time).
func TestActiveWalksTheLiveAttemptsIndex(t *testing.T) {
	db, _ := open(t)
	if plan := queryPlan(t, db, activeSQL); !strings.Contains(plan, "attempts_live") {
		t.Fatalf("Active's plan %q does not use attempts_live", plan)
	}
}

// TestUsageSpansSkipsRefusedAttempts: fair share reads the attempts that ran lately at least once a minute; the
// live ones must come from the partial index attempts_live, not from attempts_by_end's NULL range, which holds
// every attempt Ray refused (they end FAILED with no start and no end time) and grows for ever.
func TestUsageSpansSkipsRefusedAttempts(t *testing.T) {
	db, _ := open(t)
	plan := queryPlan(t, db, usageSpansSQL, int64(0))
	if strings.Contains(plan, "attempts_by_end (end_time=?)") || !strings.Contains(plan, "attempts_live") {
		t.Fatalf("UsageSpans' plan %q walks the attempts without an end time instead of attempts_live", plan)
	}
}

// TestSubmissionIDCheckUsesIndexes: a Ray-door submit's check that its submission id is not taken (as a submission
// id or a task id) runs in the writer's transaction: it must look up, not scan the tasks table.
func TestSubmissionIDCheckUsesIndexes(t *testing.T) {
	db, _ := open(t)
	if plan := queryPlan(t, db, submissionTakenSQL, "x", "x"); strings.Contains(plan, "SCAN tasks") {
		t.Fatalf("the submission id check scans tasks: %q", plan)
	}
}

// TestOpenRefusesADatabaseItCannotWrite: a database file this user may not write (owned by root after mvp was
// once run as root, say) in a folder it may write was opened without a complaint (SQLite made its -wal and -shm,
// and with every migration applied nothing was written), and every submission then failed. Open now tries a write
// and says whose file it is to fix. As root (CI), the open runs in a copy of this test binary as user nobody.
func TestOpenRefusesADatabaseItCannotWrite(t *testing.T) {
	if path := os.Getenv("MVP_TEST_READONLY_DB"); path != "" { // the child, as nobody
		db, err := Open(context.Background(), path, Options{})
		if err == nil {
			db.Close()
			t.Fatal("Open accepted a database file this user cannot write")
		}
		if !strings.Contains(err.Error(), "cannot be written") || !strings.Contains(err.Error(), "db_path") {
			t.Fatalf("error %q does not say the file cannot be written and what to change", err)
		}
		return
	}
	dir := filepath.Join(os.TempDir(), "mvp-readonly-"+strings.ReplaceAll(t.Name(), "/", "_"))
	must(t, os.RemoveAll(dir))
	must(t, os.MkdirAll(dir, 0o777))
	must(t, os.Chmod(dir, 0o777))
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "mvp.sqlite3")
	db, err := Open(context.Background(), path, Options{})
	must(t, err)
	must(t, db.Close())
	must(t, os.Chmod(path, 0o444))
	if os.Getuid() != 0 {
		db, err := Open(context.Background(), path, Options{})
		if err == nil {
			db.Close()
			t.Fatal("Open accepted a database file this user cannot write")
		}
		if !strings.Contains(err.Error(), "cannot be written") {
			t.Fatalf("error %q does not say the file cannot be written", err)
		}
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("running as root without setpriv (util-linux): cannot drop to another user to test this")
	}
	self, err := os.Executable()
	must(t, err)
	bin := filepath.Join(dir, "sqlite.test")
	b, err := os.ReadFile(self)
	must(t, err)
	must(t, os.WriteFile(bin, b, 0o755))
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"-test.run=^TestOpenRefusesADatabaseItCannotWrite$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MVP_TEST_READONLY_DB="+path, "HOME="+dir)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as user nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("as user nobody, the test did not run:\n%s", out)
	}
}
