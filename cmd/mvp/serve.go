package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/cli"
	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/ray"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/sqlite"
	"github.com/mvp2/mvp/internal/taskfs"
	"github.com/mvp2/mvp/internal/workload"
)

// serve wires the store, Ray, the scheduler loop and the API, and runs them until ctx is done.
func serve(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := fs.String("config", "configs/dev.yaml", "the cluster's dev.yaml")
	devToken := fs.Bool("dev-generate-token", false, "development only: when the token variable is empty, generate a token and print it once")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	dbPath := fs.String("db-path", "", "override v2.sqlite.db_path")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "how long in-flight requests may take after SIGTERM")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if *dbPath != "" {
		cfg.V2.SQLite.DBPath = *dbPath
	}
	token, generated, err := api.TokenFromEnv(cfg.V2.Auth.TokenEnv, *devToken)
	if err != nil {
		return err
	}
	rayToken := os.Getenv(cfg.V2.Ray.TokenEnv)

	store, err := sqlite.Open(ctx, cfg.V2.SQLite.DBPath, sqlite.Options{})
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer store.Close()
	if cs := cfg.V2.SQLite.CheckpointSchedule; cs != "off" {
		stopCheckpoints, err := store.ScheduleCheckpoints(cs, logger.With("component", "sqlite"))
		if err != nil {
			return err
		}
		defer stopCheckpoints() // runs before store.Close
	}

	rc := ray.New(ray.Options{DashboardURL: cfg.Address, Token: rayToken, Timeout: cfg.V2.Ray.RequestTimeout(), Logger: logger})
	probeEnv := []string{}
	if rayToken != "" {
		probeEnv = append(probeEnv, "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN="+rayToken)
	}
	probe := ray.NewProbe(ray.ProbeOptions{Python: cfg.V2.Ray.Python, Script: cfg.V2.Ray.ProbeScript,
		Address: cfg.V2.Ray.GCSAddress, Env: probeEnv, Logger: logger, Fallback: rc.ClusterStatus})
	defer probe.Close()

	files := taskfs.FS{Root: cfg.SharedRoot}
	settings := workload.Settings{SharedRoot: cfg.SharedRoot, EntrypointNumCPUs: cfg.EntrypointNumCPUs,
		EntrypointResources: cfg.EntrypointResources, RuntimeEnv: cfg.RuntimeEnv, UserCodePath: cfg.UserCodePath}
	build := func(t *mvp.Task, n int) (*mvp.JobSubmission, error) { return workload.BuildTask(t, n, settings) }
	prepare := func(body []byte) (*mvp.Task, error) {
		return workload.Prepare(body, settings)
	}
	policy := cli.SchedulerPolicy(cfg)

	loop := &scheduler.Loop{Store: store, Ray: rc, Cluster: probe, Build: build, Files: files, Clock: mvp.SystemClock{},
		Logger: logger.With("component", "scheduler"), Policy: policy, Tick: cfg.V2.Scheduler.Tick(),
		RetryInterval: cfg.V2.Scheduler.RetryInterval(), MaxInfraRetries: cfg.V2.Scheduler.MaxInfraRetries,
		KeepFinishedJobs: cfg.V2.Ray.KeepFinishedJobs, LogCopyEvery: cfg.V2.Ray.LogCopyInterval(),
		Crash: crashPoint(logger)}
	srv := &api.Server{Store: store, Files: files, Ray: rc, Cluster: probe, Prepare: prepare, Build: build,
		Policy: policy, Clock: mvp.SystemClock{}, Logger: logger.With("component", "api"), Token: token,
		MaxBodyBytes: cfg.V2.API.MaxBodyBytes, Wake: loop.Wake, Health: loop.Health, Crash: loop.Crash}

	addr := net.JoinHostPort(cfg.V2.API.Host, strconv.Itoa(cfg.V2.API.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(os.Stdout, "mvp: API listening on %s\n", url)
	if generated {
		fmt.Fprintf(os.Stdout, "mvp: generated API token (shown once): %s\n", token)
	}
	logger.Info("mvp serving", "url", url, "ray", cfg.Address, "db", cfg.V2.SQLite.DBPath, "shared_root", cfg.SharedRoot)

	loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		_ = loop.Run(loopCtx)
	}()
	srvErr := make(chan error, 1)
	go func() { srvErr <- hs.Serve(ln) }()

	select {
	case <-ctx.Done():
		logger.Info("shutting down: no new requests; finishing the current tick")
	case err := <-srvErr:
		stopLoop()
		<-loopDone
		return fmt.Errorf("http server: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		logger.Warn("http shutdown", "err", err)
	}
	stopLoop()
	<-loopDone
	logger.Info("stopped")
	return nil
}
