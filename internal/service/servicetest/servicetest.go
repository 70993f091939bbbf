// Package servicetest starts a service.Main for tests, as `mvp serve` runs: a real SQLite file, real task folders,
// the real API on a free loopback port and the real scheduler loop, with Ray's Job server and the cluster probe
// replaced by in-memory fakes unless the test brings its own.
package servicetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/config"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service"
)

// Token is the API token of a service Start makes when the test sets none.
const Token = "test-token-0123456789abcdef"

// Config is dev.yaml's defaults for a test: task folders and the database in fresh temporary folders, the API on
// a free loopback port, no scheduled checkpoints.
func Config(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte("v2: {sqlite: {checkpoint_schedule: \"off\"}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.SharedRoot = t.TempDir()
	cfg.V2.SQLite.DBPath = filepath.Join(t.TempDir(), "mvp.sqlite3")
	cfg.V2.API.Host, cfg.V2.API.Port = "127.0.0.1", 0
	return cfg
}

// Start opens and runs m, and stops it (as SIGTERM does, then Close) when the test ends. What m leaves unset is
// filled in: Config from Config, Token, Ray with a new Ray, Cluster with OneNode(4), ShutdownGrace 5 s.
func Start(t testing.TB, m *service.Main) *service.Main {
	t.Helper()
	if m == nil {
		m = &service.Main{}
	}
	if m.Config == nil {
		m.Config = Config(t)
	}
	if m.Token == "" {
		m.Token = Token
	}
	if m.Ray == nil {
		m.Ray = NewRay()
	}
	if m.Cluster == nil {
		m.Cluster = OneNode(4)
	}
	if m.ShutdownGrace == 0 {
		m.ShutdownGrace = 5 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := m.Open(ctx); err != nil {
		cancel()
		t.Fatalf("open the service: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run the service: %v", err)
		}
		if err := m.Close(); err != nil {
			t.Errorf("close the service: %v", err)
		}
	})
	return m
}

// Cluster is a fixed view of the cluster.
type Cluster struct{ View *mvp.ClusterView }

// OneNode is a cluster of one alive worker with gpus GPUs, 12 CPUs per GPU and room for 100 drivers, all free.
func OneNode(gpus int) Cluster {
	res := func() map[string]float64 {
		return map[string]float64{"GPU": float64(gpus), "CPU": float64(12 * gpus), "worker_node": 100}
	}
	return Cluster{View: &mvp.ClusterView{Source: "probe", Nodes: []mvp.Node{
		{ID: "w1", Alive: true, Total: res(), Available: res()}}}}
}

// ReadCluster returns the view.
func (c Cluster) ReadCluster(context.Context) (*mvp.ClusterView, error) { return c.View, nil }

// Ray is an in-memory Ray Job server: a submitted job stays PENDING until the test sets its status with Set;
// StopJob stops it. It keeps every submission it was sent.
type Ray struct {
	mu          sync.Mutex
	jobs        map[string]*mvp.JobInfo
	logs        map[string]string
	packages    map[string][]byte
	submissions []*mvp.JobSubmission
	copies      int // CopyJobLog calls
	follows     int // FollowJobLog calls
}

var (
	_ mvp.RayClient   = (*Ray)(nil)
	_ mvp.LogFollower = (*Ray)(nil)
)

// NewRay returns an empty Ray.
func NewRay() *Ray {
	return &Ray{jobs: map[string]*mvp.JobInfo{}, logs: map[string]string{}, packages: map[string][]byte{}}
}

// SubmitJob records the submission and creates a PENDING job.
func (r *Ray) SubmitJob(_ context.Context, s *mvp.JobSubmission) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.jobs[s.SubmissionID]; ok {
		return fmt.Errorf("submit %s: %w", s.SubmissionID, mvp.ErrJobExists)
	}
	r.jobs[s.SubmissionID] = &mvp.JobInfo{SubmissionID: s.SubmissionID, Status: mvp.RayPending}
	r.submissions = append(r.submissions, s)
	return nil
}

// GetJob returns a copy of the job, or mvp.ErrJobNotFound.
func (r *Ray) GetJob(_ context.Context, id string) (*mvp.JobInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return nil, mvp.ErrJobNotFound
	}
	c := *j
	return &c, nil
}

// StopJob stops a job that has not ended.
func (r *Ray) StopJob(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return mvp.ErrJobNotFound
	}
	if !j.Status.Terminal() {
		j.Status = mvp.RayStopped
	}
	return nil
}

// DeleteJob forgets a job.
func (r *Ray) DeleteJob(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.jobs, id)
	return nil
}

// JobLogs returns one line naming the job, then what AddLog added.
func (r *Ray) JobLogs(_ context.Context, id string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.jobs[id]; !ok {
		return "", mvp.ErrJobNotFound
	}
	return "log of " + id + "\n" + r.logs[id], nil
}

// CopyJobLog writes what JobLogs returns.
func (r *Ray) CopyJobLog(ctx context.Context, id, _ string, w io.Writer) (int64, error) {
	r.mu.Lock()
	r.copies++
	r.mu.Unlock()
	logs, err := r.JobLogs(ctx, id)
	if err != nil {
		return 0, err
	}
	n, err := io.WriteString(w, logs)
	return int64(n), err
}

// FollowJobLog writes what JobLogs returns, then what AddLog appends, looking every interval, until ctx is done.
func (r *Ray) FollowJobLog(ctx context.Context, id, _ string, interval time.Duration, w io.Writer) (int64, error) {
	r.mu.Lock()
	r.follows++
	r.mu.Unlock()
	var sent int64
	for {
		logs, err := r.JobLogs(ctx, id)
		if err != nil {
			return sent, err
		}
		if int64(len(logs)) > sent {
			n, err := io.WriteString(w, logs[sent:])
			sent += int64(n)
			if err != nil {
				return sent, err
			}
		}
		select {
		case <-ctx.Done():
			return sent, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// LogReads returns how many times a job's log was copied whole (CopyJobLog) and followed (FollowJobLog).
func (r *Ray) LogReads() (copies, follows int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.copies, r.follows
}

// AddLog appends text to a job's driver log.
func (r *Ray) AddLog(id, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs[id] += text
}

// UploadPackage keeps the package.
func (r *Ray) UploadPackage(_ context.Context, uri string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.packages[uri] = slices.Clone(data)
	return nil
}

// Package returns a package uploaded to Ray, and whether there is one.
func (r *Ray) Package(uri string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.packages[uri]
	return b, ok
}

// WaitJob waits (up to 20 s, failing t then) until the job was submitted: Set does nothing to a job the fake does
// not have yet, so a test that sets the status of an attempt the loop submits waits for it first (an attempt's
// row is written before its submission).
func (r *Ray) WaitJob(t testing.TB, id string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		_, ok := r.jobs[id]
		r.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s was not submitted to the fake Ray within 20 s", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Set changes a job's status (a job that starts RUNNING gets a start time, one that ends an end time).
func (r *Ray) Set(id string, st mvp.RayStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j, ok := r.jobs[id]; ok {
		j.Status = st
		now := time.Now().UnixMilli()
		if st != mvp.RayPending && j.StartTime == 0 {
			j.StartTime = now
		}
		if st != mvp.RayPending && j.DriverNodeID == "" {
			j.DriverNodeID = "w1" // the driver's node, as Ray tells it once the driver started
		}
		if st.Terminal() && j.EndTime == 0 {
			j.EndTime = now
		}
	}
}

// Submissions returns the submissions Ray was sent, in order.
func (r *Ray) Submissions() []*mvp.JobSubmission {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.submissions)
}

// Buffer is an io.Writer that a test may read while the service, or a follow, writes to it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
