package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/sqlite"
)

// runBackup is `mvp backup [--config dev.yaml] [--db-path P] FILE`: a consistent copy of mvp's database, taken on
// the machine that holds it, while mvp serve runs or not.
func runBackup(ctx context.Context, args []string, env Env) error {
	flags := flag.NewFlagSet("backup", flag.ContinueOnError)
	setUsage(flags, env.Stderr, "usage: mvp backup [--config dev.yaml] [--db-path P] FILE\n"+
		"  a consistent copy of mvp's database (v2.sqlite.db_path) in the new file FILE, safe while mvp serve runs;\n"+
		"  restoring it: specs/deploy.md, \"Backups\"")
	cfgPath := flags.String("config", "configs/dev.yaml", "the cluster's dev.yaml (for v2.sqlite.db_path)")
	dbPath := flags.String("db-path", "", "the database file (overrides v2.sqlite.db_path)")
	if err := flags.Parse(interleave(flags, args)); err != nil { // flags after FILE too, as the client verbs take them
		return flagError{err}
	}
	if flags.NArg() != 1 || strings.TrimSpace(flags.Arg(0)) == "" {
		return usageError{fmt.Errorf("name one new file to write the backup to")}
	}
	path := *dbPath
	if path == "" {
		cfg, err := LoadConfig(*cfgPath)
		if err != nil {
			return err
		}
		path = cfg.V2.SQLite.DBPath
	}
	n, err := sqlite.Backup(ctx, path, flags.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "backed up %s to %s: %d tasks, integrity ok\n", path, flags.Arg(0), n)
	return nil
}

// LoadConfig is config.Load of a file the command names (--config): one it cannot read is a usage error (exit 2).
func LoadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return nil, usageError{err}
	}
	return cfg, err
}
