package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/mvp2/mvp/internal/cli"
	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/service"
)

// serve parses serve's flags, loads dev.yaml and runs the service until ctx is done.
func serve(ctx context.Context, args []string) error { return serveTo(ctx, args, os.Stderr) }

// serveTo is serve with its usage (-h) and flag errors written to stderr.
func serveTo(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "configs/dev.yaml", "the cluster's dev.yaml")
	devToken := fs.Bool("dev-generate-token", false, "development only: when the token variable is empty, generate a token and print it once")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	dbPath := fs.String("db-path", "", "override v2.sqlite.db_path")
	grace := fs.Duration("shutdown-grace", service.DefaultShutdownGrace, "how long in-flight requests may take after SIGTERM")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile (pprof) of the whole run to this file (make bench)")
	forgetSecrets := fs.Bool("forget-secrets", false, "when the stored secrets cannot be opened with the key in v2.secrets.key_env (it is lost), delete them and start (each logged); nothing when the key opens them")
	printURL := fs.Bool("print-url", false, "print the URL at which the API answers with this config (v2.api; for scripts) and exit; refused for port 0")
	printSecretEnvs := fs.Bool("print-secret-envs", false, "print the names of the environment variables this config has mvp read its secrets from (the API token, users' tokens, the secrets key), one a line, and exit (for scripts: v2/scripts/worker.sh keeps them from Ray)")
	cli.SetUsage(fs, stderr, "serve")
	if err := fs.Parse(args); err != nil {
		return cli.FlagError(err) // said, with the usage, by the flag package
	}
	if fs.NArg() > 0 {
		return cli.Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	dbPathGiven := false
	fs.Visit(func(f *flag.Flag) { dbPathGiven = dbPathGiven || f.Name == "db-path" })
	if dbPathGiven && strings.TrimSpace(*dbPath) == "" {
		// Taken as given, " " named a database file " " in the folder mvp runs in (and "" meant no flag).
		return cli.Usage(fmt.Errorf("--db-path %q: name the database file, e.g. --db-path %s, or leave the flag out "+
			"for the config's v2.sqlite.db_path", *dbPath, config.DefaultDBPath))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return cli.Usage(fmt.Errorf("--log-level %q: want debug, info, warn or error (%w)", *logLevel, err))
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// SIGHUP (a log rotation's postrotate, a closed terminal) would end the process without the orderly stop that
	// SIGTERM gets. mvp writes its log to stderr and has nothing to reopen: it is ignored, and said so.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer func() { signal.Stop(hup); close(hup) }()
	go func() {
		for range hup {
			logger.Info("SIGHUP ignored: mvp serve stops on SIGTERM or SIGINT; it logs to stderr, so rotate that file with copytruncate")
		}
	}()

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *printSecretEnvs {
		for _, name := range cfg.SecretEnvs() {
			if _, err := fmt.Println(name); err != nil {
				return err
			}
		}
		return nil
	}
	if *printURL {
		if cfg.V2.API.Port == 0 {
			// --print-url does not listen: the port a serving mvp gets is known to it alone (it prints "mvp: API
			// listening on URL" at start).
			return fmt.Errorf("--print-url: v2.api.port is 0 in %s: mvp listens on a free port the system picks at "+
				"each start, so the config names no URL (a running mvp prints it in its log: \"mvp: API listening on "+
				"…\"); give v2.api.port a port, or set MVP_HEALTH_URL for v2/scripts", *cfgPath)
		}
		_, err := fmt.Println(localURL(cfg.V2.API.Host, cfg.V2.API.Port))
		return err
	}
	for _, w := range cfg.Warnings {
		logger.Warn("config warning", "config", *cfgPath, "warning", w)
	}
	m := &service.Main{Config: cfg, DBPath: *dbPath, DevGenerateToken: *devToken, ForgetSecrets: *forgetSecrets,
		ShutdownGrace: *grace, Logger: logger, Stdout: os.Stdout, Crash: crashPoint(logger)}
	if err := m.Open(ctx); err != nil {
		return err
	}
	defer m.Close()
	return m.Run(ctx)
}

// localURL is the URL at which a client on this machine reaches an API listening on host:port: a wildcard host
// (every address) is asked on the loopback.
func localURL(host string, port int) string {
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::", "[::]":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port))
}
