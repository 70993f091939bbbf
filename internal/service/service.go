// Package service is `mvp serve` as a value: Main wires the store, Ray, the scheduler loop and the HTTP API from
// a dev.yaml, serves until its context ends and shuts down in order. cmd/mvp parses flags and runs one; the tests
// start one the same way.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/jobspec"
	"github.com/mvp2/mvp/internal/metrics"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/ray"
	"github.com/mvp2/mvp/internal/raycompat"
	"github.com/mvp2/mvp/internal/recurring"
	"github.com/mvp2/mvp/internal/scheduler"
	"github.com/mvp2/mvp/internal/secrets"
	"github.com/mvp2/mvp/internal/sqlite"
	"github.com/mvp2/mvp/internal/taskfs"
	"github.com/mvp2/mvp/internal/web"
	"github.com/mvp2/mvp/internal/workload"
)

// DefaultShutdownGrace is serve's default for ShutdownGrace.
const DefaultShutdownGrace = 10 * time.Second

// Main is one mvp service. Set its fields, then Open, Run until the context ends, and Close:
//
//	m := &service.Main{Config: cfg, Logger: logger, Stdout: os.Stdout}
//	if err := m.Open(ctx); err != nil { … }
//	defer m.Close()
//	return m.Run(ctx)
type Main struct {
	// Config is dev.yaml, loaded and validated.
	Config *config.Config
	// DBPath, when set, replaces v2.sqlite.db_path.
	DBPath string
	// DevGenerateToken: when the token variable is empty, generate a token and print it once (development only).
	DevGenerateToken bool
	// ForgetSecrets: when the stored secrets cannot be opened with the key in v2.secrets.key_env (it is lost),
	// delete them at start instead of refusing to start (serve's --forget-secrets); nothing when the key opens them.
	ForgetSecrets bool
	// ShutdownGrace is how long in-flight requests may take once Run's context ends; at 0 they are cut at once.
	ShutdownGrace time.Duration
	// Logger receives the service's log; nil discards it.
	Logger *slog.Logger
	// Stdout receives the lines meant for the operator (where the API listens, a generated token); nil drops them.
	Stdout io.Writer
	// Crash, when set (tests only), is called at named points and may end the process there.
	Crash func(point string)

	// Token, when set, is the API token instead of the one in $v2.auth.token_env (tests).
	Token string
	// Ray, Cluster and Clock, when set, replace Ray's Job server client, the live cluster probe and the wall
	// clock (tests whose subject is not Ray).
	Ray     mvp.RayClient
	Cluster mvp.ClusterReader
	Clock   mvp.Clock

	store           *sqlite.DB
	dbLock          io.Closer // the database's service lock (sqlite.Lock)
	stopCheckpoints func()
	probe           *ray.Probe
	loop            *scheduler.Loop
	recur           *recurring.Loop
	door            *raycompat.Door
	// packageRetention is how long an unused Ray-door package is kept (v2.ray.package_retention_s).
	packageRetention time.Duration
	hs               *http.Server
	ln               net.Listener
	url              string
	token            string
	logger           *slog.Logger
	closed           bool
}

// Open opens the database, wires Ray, the scheduler loop and the API, and listens on v2.api's address (port 0
// picks a free port; URL tells which). It prints "mvp: API listening on <url>" to Stdout, and the token when one
// was generated. On an error, what was opened is closed again.
func (m *Main) Open(ctx context.Context) (err error) {
	if m.Config == nil {
		return errors.New("service: no config")
	}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	cfg := *m.Config
	if m.DBPath != "" {
		cfg.V2.SQLite.DBPath = m.DBPath
	}
	logger := m.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m.logger = logger
	stdout := m.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	clock := m.Clock
	if clock == nil {
		clock = mvp.SystemClock{}
	}

	token, generated := m.Token, false
	if token == "" {
		if token, generated, err = api.TokenFromEnv(cfg.V2.Auth.TokenEnv, m.DevGenerateToken); err != nil {
			return err
		}
	}
	m.token = token
	users, err := UsersOf(&cfg, token)
	if err != nil {
		return err
	}
	rayToken := os.Getenv(cfg.V2.Ray.TokenEnv)

	// The metrics live on a registry of this service's own (never the global one); with them off, nothing observes.
	var obs mvp.Observer = mvp.NopObserver{}
	var met *metrics.Metrics
	var metricsHandler http.Handler
	if cfg.V2.Metrics.On() {
		reg := prometheus.NewRegistry()
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
		if met, err = metrics.New(reg, metrics.Options{Now: clock.Now}); err != nil {
			return err
		}
		obs, metricsHandler = met, met.Handler(logger.With("component", "metrics"))
	}

	dbErr := func(err error) error {
		if sqlite.DiskFull(err) {
			// The folder is mvp's and writable: another db_path would start an empty queue.
			return fmt.Errorf("%w: the database's disk is full: free space on %s and start mvp again (the "+
				"database is there; another v2.sqlite.db_path would start with an empty queue)", err,
				filepath.Dir(cfg.V2.SQLite.DBPath))
		}
		// sqlite.Open's and sqlite.Lock's errors name the file already.
		return fmt.Errorf("%w (set v2.sqlite.db_path in dev.yaml, or serve's --db-path, to a file in "+
			"a folder mvp can write)", err)
	}
	// Whether the database's folder is there is read before Lock, which makes it (its lock file lives there).
	_, ferr := os.Stat(filepath.Dir(cfg.V2.SQLite.DBPath))
	newFolder := errors.Is(ferr, fs.ErrNotExist)
	if m.dbLock, err = sqlite.Lock(cfg.V2.SQLite.DBPath); err != nil {
		if errors.Is(err, sqlite.ErrInUse) {
			return err // it says which process holds it
		}
		return dbErr(err)
	}
	if m.store, err = sqlite.Open(ctx, cfg.V2.SQLite.DBPath, sqlite.Options{Observer: obs}); err != nil {
		if errors.Is(err, sqlite.ErrNewerSchema) {
			// Not a path to change: the message says which mvp to run, or which backup to restore.
			return fmt.Errorf("open database %s: %w", cfg.V2.SQLite.DBPath, err)
		}
		if sqlite.NotADatabase(err) {
			// sqlite.Open's error names the file already.
			return fmt.Errorf("%w: the file is not an SQLite database (another file, or a damaged one; mvp left it as it "+
				"is): set v2.sqlite.db_path in dev.yaml, or serve's --db-path, to mvp's database, or restore a backup there "+
				"(specs/deploy.md, Backups)", err)
		}
		return dbErr(err)
	}
	if file, folder := m.store.Created(); file {
		folder = folder || newFolder
		msg := "a new, empty database was made: if mvp ran before, its database is elsewhere (v2.sqlite.db_path) " +
			"or on a filesystem not mounted yet; stop mvp, mount it and restart, or what is submitted now stays here"
		if folder {
			msg = "a new, empty database was made, and its folder too: if mvp ran before, its database is elsewhere " +
				"(v2.sqlite.db_path) or on a filesystem not mounted yet (NFS); stop mvp, mount it and restart, or what is " +
				"submitted now stays here"
		}
		logger.Warn(msg, "db", m.store.Path())
	} else if from, to, applied := m.store.Migrated(); len(applied) > 0 {
		// An upgrade: the file is no longer one an mvp before these migrations opens (it refuses a newer schema).
		logger.Info("database migrated", "db", m.store.Path(), "from_version", from,
			"to_version", to, "applied", strings.Join(applied, ","))
	}
	if cs := cfg.V2.SQLite.CheckpointSchedule; cs != "off" {
		if m.stopCheckpoints, err = m.store.ScheduleCheckpoints(cs, logger.With("component", "sqlite")); err != nil {
			return err
		}
	}

	if met != nil {
		if err := met.CollectStore(m.store, 5*time.Second); err != nil {
			return err
		}
	}

	rc := ray.New(ray.Options{DashboardURL: cfg.Address, Token: rayToken, Timeout: cfg.V2.Ray.RequestTimeout(), Logger: logger,
		MaxLogStreams: cfg.V2.Ray.MaxLogStreams, Observer: obs})
	var rayClient mvp.RayClient = rc
	if m.Ray != nil {
		rayClient = m.Ray
	}
	lister, _ := rayClient.(mvp.JobLister) // a test's fake may not list
	cluster := m.Cluster
	if cluster == nil {
		probeEnv := []string{}
		if rayToken != "" {
			probeEnv = append(probeEnv, "RAY_AUTH_MODE=token", "RAY_AUTH_TOKEN="+rayToken)
		}
		m.probe = ray.NewProbe(ray.ProbeOptions{Python: cfg.V2.Ray.Python, Script: cfg.V2.Ray.ProbeScript,
			Address: cfg.V2.Ray.GCSAddress, Env: probeEnv, Logger: logger, Fallback: rc.ClusterStatus})
		cluster = m.probe
	}

	// Secret storage: on only with a key in $v2.secrets.key_env; a malformed key stops the start.
	key, err := secrets.KeyFromEnv(cfg.V2.Secrets.KeyEnv)
	if err != nil {
		return err
	}
	vault, err := secrets.New(m.store, key, cfg.V2.Secrets.KeyEnv, clock)
	if err != nil {
		return err
	}
	if m.ForgetSecrets {
		gone, err := vault.ForgetUnreadable(ctx)
		for _, s := range gone {
			logger.Warn("secret forgotten (--forget-secrets): the key in v2.secrets.key_env does not open it; its "+
				"owner stores it again with mvp secrets put", "owner", mvp.OwnerName(s.Owner), "name", s.Name)
		}
		if err != nil {
			return err
		}
	}
	if err := vault.CheckKey(ctx); err != nil {
		return err
	}
	if !vault.Enabled() {
		logger.Info("secret storage is off: no key in the variable named by v2.secrets.key_env", "key_env", cfg.V2.Secrets.KeyEnv)
	}

	files := taskfs.FS{Root: cfg.SharedRoot, Mounted: true} // jobs/ is made here, never again while mvp runs
	if err := checkJobsFolder(ctx, m.store, cfg.SharedRoot); err != nil {
		return err
	}
	made, err := files.CheckWritable()
	if made && err == nil {
		logger.Warn("shared_root did not exist and was made: if it should be a shared filesystem (NFS), mount it there "+
			"and restart, or Ray's nodes will not see the task folders (check with `mvp doctor` on a worker)",
			"shared_root", cfg.SharedRoot)
	}
	if err != nil {
		return fmt.Errorf("shared_root %s: mvp cannot write its task folders there: %w (set shared_root in dev.yaml to the "+
			"shared filesystem that mvp and the Ray nodes mount, writable by mvp)", cfg.SharedRoot, err)
	}
	settings := SettingsOf(&cfg)
	if settings.Instance, files.Key, err = m.store.Instance(ctx); err != nil { // files.Key seals attempts' ends
		return err
	}
	build := func(t *mvp.Task, n int) (*mvp.JobSubmission, error) { return workload.BuildTask(t, n, settings) }
	prepare := func(body []byte) (*mvp.Task, error) { return workload.Prepare(body, settings) }
	policy := PolicyOf(&cfg)
	policy.OnlyKnownOwners = true // a user removed from v2.auth.users: her waiting tasks are held (mvp sim's trace users are not named)
	packages := raycompat.Packages{Dir: filepath.Join(cfg.SharedRoot, "ray_packages"), Mounted: files.CheckMounted,
		Key: files.Key, Guard: &sync.RWMutex{}} // one Guard for the door's, the Uploader's and the pruner's copies
	if err := sealPackages(ctx, m.store, packages, logger); err != nil {
		return err
	}

	// The loop submits through the Uploader: a ray_job's packages kept by the door go to Ray right before each
	// of its submissions.
	m.loop = &scheduler.Loop{Nodes: m.store, Store: m.store, Ray: raycompat.Uploader{RayClient: rayClient, Packages: packages},
		Cluster: cluster, Build: build, Files: files, Clock: clock, Instance: settings.Instance, Jobs: lister,
		Logger: logger.With("component", "scheduler"), Policy: policy, Tick: cfg.V2.Scheduler.Tick(),
		Retry: scheduler.RetryPolicy{RetryInterval: cfg.V2.Scheduler.RetryInterval(),
			MaxInfraRetries: cfg.V2.Scheduler.MaxInfraRetries, MaxResourceRetries: cfg.V2.Scheduler.MaxResourceRetries,
			SubmitGrace: max(time.Minute, 3*cfg.V2.Ray.RequestTimeout()), SharedRoot: cfg.SharedRoot},
		KeepFinishedJobs: cfg.V2.Ray.KeepFinishedJobs, LogCopyEvery: cfg.V2.Ray.LogCopyInterval(),
		Crash: m.Crash, Observer: obs, StoreHealth: m.store.WriteFault, JobServer: ray.RedactedURL(cfg.Address)}
	if vault.Enabled() {
		m.loop.Secrets = vault.ValuesOf
	}
	door := &raycompat.Door{Store: m.store, Packages: packages, Build: build, Clock: clock,
		Logger: logger.With("component", "raydoor"), Wake: m.loop.Wake, Health: m.loop.Health, Observer: obs, MaxBodyBytes: cfg.V2.API.MaxBodyBytes,
		Prepare: func(req *mvp.RayJobRequest) (*mvp.Task, error) { return workload.PrepareRayJob(req, settings) }}
	m.door, m.packageRetention = door, cfg.V2.Ray.PackageRetention()
	srv := &api.Server{Store: m.store, Files: files, Ray: rayClient, Snapshot: m.loop.Snapshot, NeverFits: m.loop.NeverFits,
		ForgetNode: m.loop.ForgetNode,
		Prepare:    prepare, Build: build,
		Policy: policy, Clock: clock, Started: clock.Now(), Logger: logger.With("component", "api"), Token: token, Users: users,
		MaxBodyBytes: cfg.V2.API.MaxBodyBytes, Wake: m.loop.Wake, Health: m.loop.Health, Crash: m.loop.Crash,
		StaleTick: max(15*time.Second, 3*m.loop.Tick), Database: m.store.CheckHealth,
		SharedRoot: func() error {
			if err := files.CheckMounted(); err != nil {
				return fmt.Errorf("shared_root (%s): %w; waiting tasks are held until then", files.Root, err)
			}
			return m.loop.SharedRootError()
		},
		NoLogStreams: cfg.V2.Ray.MaxLogStreams == 0,
		Secrets:      vault, Observer: obs, Metrics: metricsHandler, MetricsPublic: cfg.V2.Metrics.Public, RayDoor: door}
	if met != nil {
		if err := met.CollectHealth(api.HealthComponents, srv.Degraded); err != nil {
			return err
		}
	}
	m.recur = &recurring.Loop{Tasks: m.store, Schedules: m.store, Prepare: prepare, Admit: srv.AdmitScheduled, NewID: api.NewTaskID,
		Ready: m.loop.Synced(), // overlap must see the tasks as Ray left them, not as the last process did
		Submitted: func(t *mvp.Task) {
			mvp.ObserverOr(obs).TaskSubmitted(t.Workload)
			m.loop.Wake()
		}, Clock: clock, Logger: logger.With("component", "schedules")}
	srv.Schedules, srv.WakeSchedules = m.store, m.recur.Wake

	addr := net.JoinHostPort(cfg.V2.API.Host, strconv.Itoa(cfg.V2.API.Port))
	if m.ln, err = net.Listen("tcp", addr); err != nil {
		return fmt.Errorf("listen on %s: %w (set v2.api.port, or v2.api.host, in dev.yaml to an address free on this machine)", addr, err)
	}
	apiHandler := srv.Handler()
	page := &web.Server{Store: m.store, Logouts: m.store, Snapshot: m.loop.Snapshot, API: apiHandler, Cancel: srv.Cancel,
		SayWhyWaiting: srv.SayWhyWaiting,
		Schedules:     m.store, Token: token, Clock: clock, Logger: logger.With("component", "web")}
	root := http.NewServeMux()
	root.Handle("/", apiHandler)
	pageHandler := page.Handler()
	root.Handle("/ui", pageHandler)
	root.Handle("/ui/", pageHandler)
	m.hs = &http.Server{Handler: root, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	m.hs.RegisterOnShutdown(door.Shutdown)
	m.hs.RegisterOnShutdown(srv.Shutdown) // ends log follows, which would hold the stop for the whole grace
	m.url = "http://" + m.ln.Addr().String()
	fmt.Fprintf(stdout, "mvp: API listening on %s\n", m.url)
	fmt.Fprintf(stdout, "mvp: web page at %s/ui (log in with the API token)\n", m.url)
	if generated {
		fmt.Fprintf(stdout, "mvp: generated API token (shown once): %s\n", token)
		fmt.Fprintf(stdout, "mvp: a restart without %[1]s set generates another, and clients holding this one (mvp logs "+
			"-f among them) get 403: to keep it, start mvp serve again with %[1]s set to it\n", cfg.V2.Auth.TokenEnv)
	}
	if metricsHandler != nil {
		access := "with the API token"
		if cfg.V2.Metrics.Public {
			access = "public"
		}
		fmt.Fprintf(stdout, "mvp: Prometheus metrics at %s/metrics (%s; see specs/metrics.md)\n", m.url, access)
	}
	logger.Info("mvp serving", "build", mvp.Build().Short(), "url", m.url, "ray", cfg.Address, "db", cfg.V2.SQLite.DBPath, "shared_root", cfg.SharedRoot)
	return nil
}

// UsersOf reads the named users of v2.auth.users, each token from its environment variable (rotated by changing
// the variable and restarting). A user without a token, or two holders of one token (the operator among them), stop
// serve: a token must name exactly one caller. Tokens are never printed.
func UsersOf(cfg *config.Config, operatorToken string) ([]mvp.User, error) {
	var out []mvp.User
	seen := map[string]string{operatorToken: "the operator (v2.auth.token_env)"}
	for i, u := range cfg.V2.Auth.Users {
		key := fmt.Sprintf("v2.auth.users[%d].token_env", i)
		if strings.TrimSpace(os.Getenv(u.TokenEnv)) == "" {
			return nil, fmt.Errorf("%s: %s is not set or empty: set it to user %s's token (16 or more "+
				"printable characters) in mvp's environment, or remove %s from v2.auth.users", key,
				config.ShownEnvName(u.TokenEnv), u.Name, u.Name)
		}
		tok, _, err := api.TokenFromEnv(u.TokenEnv, false)
		if err != nil {
			return nil, fmt.Errorf("%s (user %s): %w", key, u.Name, err)
		}
		if prev, dup := seen[tok]; dup {
			return nil, fmt.Errorf("%s (user %s): $%s holds the same token as %s; every caller needs its own",
				key, u.Name, u.TokenEnv, prev)
		}
		seen[tok] = "user " + u.Name
		mp := mvp.MaxPriority
		if u.MaxPriority != nil {
			mp = *u.MaxPriority
		}
		out = append(out, mvp.User{Name: u.Name, Token: tok, MaxGPUs: u.MaxGPUs, MaxQueued: u.MaxQueued,
			MaxPriority: mp, Share: u.Share})
	}
	return out, nil
}

// SettingsOf is what a submission takes from dev.yaml: shared_root, the driver's resources, runtime_env,
// user_code_path, the time limits and the stop grace (v2.scheduler.runtime_grace_s, rounded up to whole seconds;
// 0 is sent as 0, since the scheduler plans with it as given).
func SettingsOf(cfg *config.Config) workload.Settings {
	grace := int(math.Ceil(cfg.V2.Scheduler.RuntimeGraceS))
	return workload.Settings{SharedRoot: cfg.SharedRoot, EntrypointNumCPUs: cfg.EntrypointNumCPUs,
		EntrypointResources: cfg.EntrypointResources, RuntimeEnv: cfg.RuntimeEnv, UserCodePath: cfg.UserCodePath,
		TimeLimits: jobspec.Defaults{DefaultMaxRuntimeS: cfg.V2.Scheduler.DefaultMaxRuntimeS,
			MaxRuntimeCapS: cfg.V2.Scheduler.MaxRuntimeCapS, DefaultMaxQueuedS: cfg.V2.Scheduler.DefaultMaxQueuedS,
			MaxQueuedCapS: cfg.V2.Scheduler.MaxQueuedCapS},
		StopGraceS: &grace}
}

// PolicyOf is the scheduler's admission policy from dev.yaml: the policy's name, the declared run time of a task
// that gives none, the running cap, the gang wait, each workload's CPU per GPU, and the driver's own resources
// (entrypoint_resources plus entrypoint_num_cpus as CPU, plus the workload's runner_cpus where it has some). `mvp serve` and `mvp sim` both use it.
func PolicyOf(cfg *config.Config) scheduler.Policy {
	policy := scheduler.Policy{Name: cfg.V2.Scheduler.Policy, MaxRunning: cfg.V2.Scheduler.MaxRunningTasks,
		GangWait: cfg.V2.Scheduler.GangWait(), CPUsPerGPU: map[mvp.Workload]float64{}, Driver: map[string]float64{},
		StopGrace:         time.Duration(cfg.V2.Scheduler.RuntimeGraceS * float64(time.Second)),
		DefaultMaxRuntime: time.Duration(cfg.V2.Scheduler.DefaultMaxRuntimeS) * time.Second,
		FairShare:         cfg.V2.Scheduler.FairShareOn(), HalfLife: cfg.V2.Scheduler.HalfLife(),
		StarvationBound: cfg.V2.Scheduler.StarvationBound(), Users: map[string]scheduler.UserLimits{}}
	for _, u := range cfg.V2.Auth.Users {
		policy.Users[u.Name] = scheduler.UserLimits{MaxGPUs: u.MaxGPUs, Share: u.Share}
	}
	for name, w := range cfg.V2.Workloads {
		policy.CPUsPerGPU[mvp.Workload(name)] = w.CPUsPerGPU
	}
	for k, v := range cfg.EntrypointResources {
		policy.Driver[k] = v
	}
	if cfg.EntrypointNumCPUs > 0 {
		policy.Driver[scheduler.ResCPU] += cfg.EntrypointNumCPUs
	}
	for name, w := range cfg.V2.Workloads {
		if w.RunnerCPUs > 0 {
			if policy.Drivers == nil {
				policy.Drivers = map[mvp.Workload]map[string]float64{}
			}
			d := maps.Clone(policy.Driver)
			d[scheduler.ResCPU] += w.RunnerCPUs
			policy.Drivers[mvp.Workload(name)] = d
		}
	}
	return policy
}

// Run serves the API and runs the scheduler loop until ctx ends, then shuts down: no new requests, in-flight ones
// get ShutdownGrace (then their connections are closed), and meanwhile the loop finishes its current tick (within
// its StopGrace: past it the tick's calls are cut). Call Close after Run returns.
func (m *Main) Run(ctx context.Context) error {
	if m.hs == nil {
		return errors.New("service: Run before Open")
	}
	logger := m.logger
	loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	loopDone := make(chan struct{})
	recurDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		if m.probe != nil { // wake the loop the moment GPUs free up (scheduler.ClusterWatch)
			w := &scheduler.ClusterWatch{Read: m.probe.Live, Armed: m.loop.Armed, Wake: m.loop.Wake}
			watchDone := make(chan struct{})
			go func() { defer close(watchDone); w.Run(loopCtx) }()
			defer func() { <-watchDone }()
		}
		_ = m.loop.Run(loopCtx)
	}()
	go func() {
		defer close(recurDone)
		_ = m.recur.Run(loopCtx)
	}()
	pruneDone := make(chan struct{})
	go func() {
		defer close(pruneDone)
		m.door.RunPrune(loopCtx, m.packageRetention)
	}()
	srvErr := make(chan error, 1)
	go func() { srvErr <- m.hs.Serve(m.ln) }()

	select {
	case <-ctx.Done():
		logger.Info("shutting down: no new requests; finishing the current tick")
	case err := <-srvErr:
		stopLoop()
		<-loopDone
		<-recurDone
		<-pruneDone
		return fmt.Errorf("http server: %w", err)
	}
	// The loop stops starting ticks now and its tick in progress gets the loop's StopGrace, while the requests in
	// flight get ShutdownGrace: a stop takes the longer of the two, not their sum.
	stopLoop()
	sctx, cancel := context.WithTimeout(context.Background(), m.ShutdownGrace)
	defer cancel()
	if err := m.hs.Shutdown(sctx); errors.Is(err, context.DeadlineExceeded) {
		m.hs.Close() // the grace is over: cut the requests still running
	} else if err != nil {
		logger.Warn("http shutdown", "err", err)
	}
	<-loopDone
	<-recurDone
	<-pruneDone
	logger.Info("stopped")
	return nil
}

// Close releases what Open took, in order: the listener when Run never served it, the probe's child, the
// scheduled checkpoints, then the database. It is safe to call more than once and after a failed Open.
func (m *Main) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	if m.ln != nil {
		m.ln.Close() // already closed when Run served it
	}
	if m.probe != nil {
		m.probe.Close()
	}
	if m.stopCheckpoints != nil {
		m.stopCheckpoints()
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			return fmt.Errorf("close database: %w", err)
		}
	}
	if m.dbLock != nil {
		m.dbLock.Close() // after the database: the next holder finds it closed
	}
	return nil
}

// URL is the API's base URL, e.g. http://127.0.0.1:8080, once Open succeeded.
func (m *Main) URL() string { return m.url }

// APIToken is the bearer token the API accepts, once Open succeeded.
func (m *Main) APIToken() string { return m.token }

// Store is the service's database, once Open succeeded.
func (m *Main) Store() *sqlite.DB { return m.store }

// Client is an API client of this service, with its token.
func (m *Main) Client() *api.Client { return &api.Client{Addr: m.url, Token: m.token} }

// checkJobsFolder refuses a start whose <sharedRoot>/jobs is missing while the database holds attempts, whose
// folders are there: the shared filesystem is not mounted (its mount point is empty). Made again at start, jobs/
// went onto mvp's own disk and the next submission was sent to Ray with its folder where no node sees it, undoing
// what holding submissions on an unmounted shared_root is for.
func checkJobsFolder(ctx context.Context, store mvp.Counter, sharedRoot string) error {
	jobs := filepath.Join(sharedRoot, "jobs")
	if _, err := os.Stat(jobs); !errors.Is(err, fs.ErrNotExist) {
		return nil // there (or unreadable: CheckWritable says why)
	}
	c, err := store.Counts(ctx)
	if err != nil {
		return fmt.Errorf("count the attempts the database holds: %w", err)
	}
	attempts := 0
	for _, a := range c.EndedAttempts {
		attempts += a.N
	}
	for _, tc := range c.Tasks {
		if tc.State == mvp.StateSubmitting || tc.State == mvp.StateSubmitted || tc.State == mvp.StateRunning {
			attempts += tc.N
		}
	}
	if attempts == 0 {
		return nil // a first start: jobs/ is made now
	}
	return fmt.Errorf("shared_root: %s does not exist, but the database holds %d attempt(s) whose task folders were "+
		"made there: is the shared filesystem mounted at %s? mount it and start again (if shared_root was emptied on "+
		"purpose, or moved, make the folder with mkdir %s, or set shared_root in dev.yaml to where the folders are)",
		jobs, attempts, sharedRoot, jobs)
}

// sealPackages seals, once per database, the Ray packages an mvp before sealing kept (raycompat.Packages), when
// the database has door tasks still to run that may name them (migration 0021 marks any other database sealed).
func sealPackages(ctx context.Context, store *sqlite.DB, packages raycompat.Packages, logger *slog.Logger) error {
	sealed, err := store.PackagesSealed(ctx)
	if err != nil || sealed {
		return err
	}
	n, err := packages.SealUnsealed()
	if err != nil {
		return fmt.Errorf("%w (mvp must be able to write <shared_root>/ray_packages; shared_root in dev.yaml sets where it is)", err)
	}
	if n > 0 {
		logger.Info("the Ray packages kept by an earlier mvp were sealed", "dir", packages.Dir, "packages", n)
	}
	return store.MarkPackagesSealed(ctx)
}
