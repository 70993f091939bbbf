//go:build e2e

package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/scheduler"
)

// TestServeAnswersBeforeItsFirstLookAtRay: mvp serve starts while Ray does not answer (its dashboard and its GCS
// behind proxies that accept connections and hold them without a word: a Ray that is slow at start, or a network
// that black-holes it). The API must come up at once and say so: /healthz answers within a second, degraded, with
// api.NotLookedYet while the scheduler's first look at Ray is still waiting, and a task can be submitted and read
// meanwhile. Once the first look gives up, /healthz says Ray is down (ray_ok false, ray_error, ray_down_since) and
// the task still waits; once Ray answers, /healthz is ok and the task runs to its end.
func TestServeAnswersBeforeItsFirstLookAtRay(t *testing.T) {
	waitIdle(t)
	dash := newGateProxy(t, strings.TrimPrefix(env.dashboard, "http://"))
	gcs := newGateProxy(t, env.gcs)
	began := time.Now()
	s := startService(t, serviceOpts{dashboard: "http://" + dash.addr(), gcs: gcs.addr()})
	up := time.Since(began)
	// The first look cannot end before the probe's read timeout (5 s) and the dashboard's fallback call
	// (v2.ray.request_timeout_s, 10 s) have run out: an API that waited for it would answer after 15 s or more.
	if up > 10*time.Second {
		t.Errorf("mvp serve answered /healthz %s after its start; want it at once, not after a look at Ray", up.Round(time.Millisecond))
	}
	h, took := healthz(t, s)
	if took > time.Second {
		t.Errorf("/healthz took %s while Ray was not answering", took)
	}
	if h.Status != "degraded" || h.Scheduler != api.NotLookedYet {
		t.Errorf("/healthz before the first look at Ray: status %q, scheduler %q; want degraded, %q", h.Status, h.Scheduler, api.NotLookedYet)
	}
	t.Logf("/healthz answered %s after the start: %s, %q", up.Round(time.Millisecond), h.Status, h.Scheduler)

	// The API works meanwhile: a submit is stored and answered, and the task can be read and listed.
	callStart := time.Now()
	task := s.submit(spec("ppo", 1, 2, 1))
	if got := s.get(task.ID); got.State != mvp.StateQueued {
		t.Errorf("a task submitted before the first look at Ray is %s, want %s", got.State, mvp.StateQueued)
	}
	if _, _, err := s.c.List(ctxT(t), "", "", 10, ""); err != nil {
		t.Errorf("list before the first look at Ray: %v", err)
	}
	if d := time.Since(callStart); d > 5*time.Second {
		t.Errorf("a submit, a get and a list took %s while Ray was not answering", d)
	}

	// The first look ends without Ray: /healthz says so, the task waits on. Until then, past its stale bound
	// (15 s), it says how long the first look has taken (it kept saying "moments ago" for the whole 35 s before).
	sawAge := false
	waitFor(t, 90*time.Second, "/healthz to say that Ray is down", func() (bool, string) {
		h, _ := healthz(t, s)
		sawAge = sawAge || strings.Contains(h.Scheduler, "its first look at Ray began")
		return h.Scheduler == "" && h.Status == "degraded" && !h.Ray.RayOK && h.Ray.RayError != "" && h.Ray.RayDownSince != nil,
			h.Status + " " + h.Scheduler + " " + h.Ray.RayError
	})
	h, _ = healthz(t, s)
	t.Logf("%s after the start, /healthz: %s, ray_error %q", time.Since(began).Round(time.Second), h.Status, h.Ray.RayError)
	if !sawAge {
		t.Errorf("/healthz never said how long the first look at Ray had taken while it waited")
	}
	if got := s.get(task.ID); got.State.Terminal() || got.LatestAttemptNo != 0 {
		t.Fatalf("while Ray never answered, the task became %s with %d attempts (%q)", got.State, got.LatestAttemptNo, got.ErrorSummary)
	}

	dash.open()
	gcs.open()
	waitFor(t, 90*time.Second, "/healthz to say ok once Ray answers", func() (bool, string) {
		h, _ := healthz(t, s)
		return h.Status == "ok" && h.Ray.RayOK, h.Status + " " + h.Ray.RayError
	})
	done := s.waitState(task.ID, mvp.StateSucceeded, 120*time.Second)
	if n := len(done.Attempts); n != 1 {
		t.Errorf("%d attempts, want 1: Ray's silence at the start is no failure of the task", n)
	}
}

// healthBody is what /healthz says.
type healthBody struct {
	Status    string           `json:"status"`
	Scheduler string           `json:"scheduler"`
	Database  string           `json:"database"`
	RayLogs   string           `json:"ray_logs"`
	Ray       scheduler.Health `json:"ray"`
}

// healthz reads the service's /healthz and how long the answer took.
func healthz(t testing.TB, s *service) (healthBody, time.Duration) {
	t.Helper()
	began := time.Now()
	resp, err := http.Get(s.c.Addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	defer resp.Body.Close()
	var h healthBody
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("/healthz (HTTP %d): %v", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: HTTP %d", resp.StatusCode)
	}
	return h, time.Since(began)
}

// gateProxy is a TCP proxy in front of one of Ray's ports. Shut, it accepts connections and holds them without a
// byte in answer (a Ray that is slow to answer, or a network that black-holes it); open, it forwards them. It
// starts shut.
type gateProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	isOpen bool
	held   []net.Conn
	closed bool
}

func newGateProxy(t testing.TB, target string) *gateProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gate proxy for %s: %v", target, err)
	}
	p := &gateProxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *gateProxy) addr() string { return p.ln.Addr().String() }

func (p *gateProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		if !p.isOpen {
			p.held = append(p.held, c)
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		go p.forward(c)
	}
}

func (p *gateProxy) forward(c net.Conn) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(u, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, u); done <- struct{}{} }()
	<-done
}

// open forwards from now on; the connections held so far are closed (their callers see a reset, and dial again).
func (p *gateProxy) open() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isOpen = true
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

func (p *gateProxy) close() {
	p.mu.Lock()
	p.closed = true
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
	p.mu.Unlock()
	p.ln.Close()
}
