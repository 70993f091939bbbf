package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/sqlite"
)

// runBackup is `mvp backup [--config dev.yaml] [--db-path P] FILE`: a consistent copy of mvp's database, taken on
// the machine that holds it, while mvp serve runs or not.
func runBackup(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(env.Stderr, "usage: mvp backup [--config dev.yaml] [--db-path P] FILE\n"+
			"  a consistent copy of mvp's database (v2.sqlite.db_path) in the new file FILE, safe while mvp serve runs;\n"+
			"  restoring it: specs/deploy.md, \"Backups\"\n\nflags:")
		fs.PrintDefaults()
	}
	cfgPath := fs.String("config", "configs/dev.yaml", "the cluster's dev.yaml (for v2.sqlite.db_path)")
	dbPath := fs.String("db-path", "", "the database file (overrides v2.sqlite.db_path)")
	if err := fs.Parse(interleave(fs, args)); err != nil { // flags after FILE too, as the client verbs take them
		return flagError{err}
	}
	if fs.NArg() != 1 || strings.TrimSpace(fs.Arg(0)) == "" {
		return usageError{fmt.Errorf("name one new file to write the backup to")}
	}
	path := *dbPath
	if path == "" {
		cfg, err := config.Load(*cfgPath)
		if err != nil {
			return err
		}
		path = cfg.V2.SQLite.DBPath
	}
	n, err := sqlite.Backup(ctx, path, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "backed up %s to %s: %d tasks, integrity ok\n", path, fs.Arg(0), n)
	return nil
}
