package service_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mvp2/mvp/internal/service"
	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestDBPathReplacesTheConfiguredDatabase: serve's --db-path (Main.DBPath) replaces v2.sqlite.db_path: the
// database is made there, and nothing at the configured path.
func TestDBPathReplacesTheConfiguredDatabase(t *testing.T) {
	cfg := servicetest.Config(t)
	override := filepath.Join(t.TempDir(), "other.sqlite3")
	servicetest.Start(t, &service.Main{Config: cfg, DBPath: override})
	if _, err := os.Stat(override); err != nil {
		t.Errorf("--db-path: %v", err)
	}
	if _, err := os.Stat(cfg.V2.SQLite.DBPath); !os.IsNotExist(err) {
		t.Errorf("v2.sqlite.db_path %s was made too (%v)", cfg.V2.SQLite.DBPath, err)
	}
}
