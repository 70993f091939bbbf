package ray

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// ProbeOptions configure a Probe.
type ProbeOptions struct {
	// Python is Ray's Python; Script is py-entrypoints/mvp_probe.py; Address is the GCS host:port.
	Python, Script, Address string
	// Env is added to the child's environment (e.g. RAY_AUTH_MODE=token, RAY_AUTH_TOKEN=…).
	Env []string
	// ReadTimeout bounds one reading. Default 5 s.
	ReadTimeout time.Duration
	// Fallback, when set, is used when the probe cannot answer (e.g. Client.ClusterStatus).
	Fallback func(context.Context) (*mvp.ClusterView, error)
	Logger   *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Probe reads the cluster's live per-node availability the way verl does, through a long-lived Python child
// (one JSON line per request). It implements mvp.ClusterReader.
type Probe struct {
	o ProbeOptions

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte
	exited  chan struct{}
	ready   bool
	backoff time.Duration
	nextTry time.Time
	closed  bool
}

var _ mvp.ClusterReader = (*Probe)(nil)

// NewProbe makes a Probe; the child starts on the first reading.
func NewProbe(o ProbeOptions) *Probe {
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Probe{o: o}
}

type probeAnswer struct {
	Ready  *bool                `json:"ready"`
	OK     bool                 `json:"ok"`
	Error  string               `json:"error"`
	Nodes  []mvp.Node           `json:"nodes"`
	Groups []mvp.PlacementGroup `json:"placement_groups"`
}

// ReadCluster returns one live reading, or the fallback's (lagging) one when the probe cannot answer.
func (p *Probe) ReadCluster(ctx context.Context) (*mvp.ClusterView, error) {
	v, err := p.read(ctx)
	if err == nil {
		return v, nil
	}
	if p.o.Fallback != nil {
		if fv, ferr := p.o.Fallback(ctx); ferr == nil {
			p.o.Logger.Warn("live probe failed; using the dashboard's lagging view", "err", err)
			return fv, nil
		}
	}
	return nil, err
}

func (p *Probe) read(ctx context.Context) (*mvp.ClusterView, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("probe: %w (closed)", mvp.ErrRayUnavailable)
	}
	if err := p.ensure(ctx); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(p.stdin, "read\n"); err != nil {
		p.kill("write failed")
		return nil, fmt.Errorf("probe: %w (%v)", mvp.ErrRayUnavailable, err)
	}
	a, err := p.next(ctx)
	if err != nil {
		p.kill(err.Error())
		return nil, err
	}
	if !a.OK {
		return nil, fmt.Errorf("probe: %w (%s)", mvp.ErrRayUnavailable, a.Error)
	}
	return &mvp.ClusterView{At: p.o.Now(), Nodes: a.Nodes, Groups: a.Groups, Source: "probe"}, nil
}

// next waits for the child's next JSON line.
func (p *Probe) next(ctx context.Context) (*probeAnswer, error) {
	t := time.NewTimer(p.o.ReadTimeout)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return nil, fmt.Errorf("probe: %w (the probe exited)", mvp.ErrRayUnavailable)
		}
		var a probeAnswer
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, fmt.Errorf("probe: %w (bad answer %.200q)", mvp.ErrRayUnavailable, line)
		}
		return &a, nil
	case <-t.C:
		return nil, fmt.Errorf("probe: %w (no answer within %s)", mvp.ErrRayUnavailable, p.o.ReadTimeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ensure starts the child if it is not running, and waits for its {"ready": true}.
func (p *Probe) ensure(ctx context.Context) error {
	if p.cmd != nil && p.ready {
		select {
		case <-p.exited:
			p.kill("exited")
		default:
			return nil
		}
	}
	if p.cmd == nil {
		if now := time.Now(); now.Before(p.nextTry) {
			return fmt.Errorf("probe: %w (restarting after a failure)", mvp.ErrRayUnavailable)
		}
		if err := p.start(); err != nil {
			p.fail()
			return fmt.Errorf("probe: %w (%v)", mvp.ErrRayUnavailable, err)
		}
	}
	for !p.ready {
		a, err := p.next(ctx)
		if err != nil {
			p.kill("not ready: " + err.Error())
			p.fail()
			return err
		}
		if a.Ready != nil && *a.Ready {
			p.ready = true
			p.backoff = 0
			break
		}
		if a.Error != "" {
			return fmt.Errorf("probe: %w (%s)", mvp.ErrRayUnavailable, a.Error)
		}
	}
	return nil
}

func (p *Probe) fail() {
	if p.backoff == 0 {
		p.backoff = 500 * time.Millisecond
	} else if p.backoff < 10*time.Second {
		p.backoff *= 2
	}
	p.nextTry = time.Now().Add(p.backoff)
}

func (p *Probe) start() error {
	cmd := exec.Command(p.o.Python, p.o.Script, "--address", p.o.Address)
	cmd.Env = append(os.Environ(), p.o.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	lines := make(chan []byte, 16)
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.o.Logger.Debug("probe stderr", "line", sc.Text())
		}
	}()
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.stdin, p.lines, p.exited, p.ready = cmd, stdin, lines, exited, false
	p.o.Logger.Info("probe started", "pid", cmd.Process.Pid, "gcs", p.o.Address)
	return nil
}

// kill ends the child and its process group.
func (p *Probe) kill(why string) {
	if p.cmd == nil {
		return
	}
	p.o.Logger.Warn("probe restarted", "reason", why)
	_ = p.stdin.Close()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	p.cmd, p.ready = nil, false
}

// Close ends the child: stdin closed, then killed after a short grace.
func (p *Probe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.cmd == nil {
		return nil
	}
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	p.cmd = nil
	return nil
}
