//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mvp2/mvp/internal/mvp"
)

// browser finds the Chromium that scripts/ensure-tools.sh installs. Without one the browser test skips, loudly.
func browser(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "BROWSER TEST SKIPPED: no Chromium on PATH. scripts/ensure-tools.sh installs Debian's `chromium` when run as root with apt-get; install it and run again"
	fmt.Println("!!!!!!!! " + msg)
	t.Skip(msg)
	return ""
}

// startBrowser starts headless Chromium (bin, from browser) for the test, closed when it ends, and returns the
// browser's context: derive each step's timeout from it.
func startBrowser(t *testing.T, bin string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser) // runs before cancelAlloc
	// The first action starts the browser on bctx itself: a browser started on a derived context with a timeout
	// would close when that context ends.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", bin, err)
	}
	return bctx
}

// artifacts is where the test's screenshots go: $MVP_E2E_ARTIFACTS/<test>, or a folder of its own in the system's
// temp folder that is kept after the test (its path is printed).
func artifacts(t *testing.T) string {
	dir := os.Getenv("MVP_E2E_ARTIFACTS")
	var err error
	if dir != "" {
		dir = filepath.Join(dir, t.Name())
		err = os.MkdirAll(dir, 0o755)
	} else {
		dir, err = os.MkdirTemp("", "mvp-e2e-"+t.Name()+"-")
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWebPageInBrowser drives the web page in headless Chromium against a real mvp serve and Ray cluster: log in,
// watch a task wait in the queue behind a gang that holds every GPU, run (its log following live) and succeed,
// then cancel a running task with the page's button.
func TestWebPageInBrowser(t *testing.T) {
	bin := browser(t)
	waitIdle(t)
	s := startService(t, serviceOpts{})
	shots := artifacts(t)

	bctx := startBrowser(t, bin)
	dump := func() string {
		ctx, cancel := context.WithTimeout(bctx, 5*time.Second)
		defer cancel()
		html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
		return tail(html, 60)
	}
	run := func(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, timeout)
		defer cancel()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("browser: %s: %v\npage body:\n%s", what, err, dump())
		}
	}
	text := func(what string, sel chromedp.CSS) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("browser: %s: %v\npage body:\n%s", what, err, dump())
		}
		return v
	}
	shot := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 makes a PNG, below it a JPEG
		if err != nil {
			t.Fatalf("browser: screenshot %s: %v", name, err)
		}
		path := filepath.Join(shots, name+".png")
		writeFile(t, path, string(png))
		t.Logf("screenshot: %s", path)
	}

	// The login form: a wrong token is refused on the page, the right one leads to the queue.
	run("wrong token", 30*time.Second,
		chromedp.Navigate(s.c.Addr+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "not-the-token-0123456789"),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("login-error")))
	run("log in", 30*time.Second,
		chromedp.SendKeys(chromedp.ID("token"), s.token),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("nodes")))

	// A 2×4 gang holds every GPU for a while (long enough for Chromium on a busy 2-core machine to show the
	// queue); a 1×2 task submitted behind it waits in mvp's queue, then runs long enough for its log to be followed.
	blocker := s.submit(spec("ppo", 2, 4, 40))
	s.waitState(blocker.ID, mvp.StateRunning, 90*time.Second)
	task := s.submit(spec("ppo", 1, 2, 30))
	row := fmt.Sprintf(`#queue tr[data-task=%q]`, task.ID)
	run("the task waits in the queue", 60*time.Second, chromedp.WaitVisible(chromedp.CSS(row)))
	if reason := text("its reason", chromedp.CSS(row+" td.reason")); strings.TrimSpace(reason) == "" {
		t.Errorf("the waiting task shows no reason")
	}
	run("busy GPUs on the map", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#nodes .gpu.busy`)))
	shot("1-queue-waiting")

	// Its page: RUNNING once the blocker ends, the driver log followed live, then SUCCEEDED.
	run("open the task", 30*time.Second,
		chromedp.Navigate(s.c.Addr+"/ui/tasks/"+task.ID),
		chromedp.WaitVisible(chromedp.ID("task-id")))
	run("the task runs", 120*time.Second, chromedp.WaitVisible(chromedp.CSS(`#task-id[data-state="RUNNING"]`)))
	var log string
	waitFor(t, 60*time.Second, "the driver log to follow live while the task runs", func() (bool, string) {
		ctx, cancel := context.WithTimeout(bctx, 5*time.Second)
		defer cancel()
		var err error
		if log, err = chromedp.Run(ctx, chromedp.Text(chromedp.ID("log"))); err != nil {
			return false, err.Error()
		}
		attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.ID("task-id"), "data-state"))
		if err != nil {
			return false, err.Error()
		}
		state := attr.Value
		if mvp.State(state).Terminal() {
			t.Fatalf("the task ended (%s) before its log was seen following: %q", state, tail(log, 5))
		}
		return strings.Contains(log, "verl-standin") && strings.Count(log, "\n") >= 3, tail(log, 3)
	})
	shot("2-task-running-log")
	run("the task succeeds", 120*time.Second, chromedp.WaitVisible(chromedp.CSS(`#task-id[data-state="SUCCEEDED"]`)))
	log = text("the log once the task ended", chromedp.CSS("#log"))
	if !strings.Contains(log, "verl-standin") {
		t.Errorf("the log on the page lacks the stand-in's lines: %q", tail(log, 5))
	}
	if attempts := text("attempts", chromedp.CSS("#attempts")); !strings.Contains(attempts, task.ID+"--a01") || !strings.Contains(attempts, "SUCCEEDED") {
		t.Errorf("attempts table: %q", attempts)
	}
	shot("3-task-succeeded")
	if got := s.get(task.ID); got.State != mvp.StateSucceeded {
		t.Errorf("the API says %s", got.State)
	}

	// Cancel: a long task, canceled with the page's button, ends CANCELED and its Ray job stops.
	long := s.submit(spec("ppo", 1, 2, 300))
	s.waitState(long.ID, mvp.StateRunning, 90*time.Second)
	run("cancel with the button", 60*time.Second,
		chromedp.Navigate(s.c.Addr+"/ui/tasks/"+long.ID),
		chromedp.WaitVisible(chromedp.ID("cancel")),
		chromedp.Click(chromedp.ID("cancel")),
		chromedp.WaitVisible(chromedp.CSS(`#task-id[data-state="CANCELED"]`)))
	shot("4-task-canceled")
	if got := s.get(long.ID); got.State != mvp.StateCanceled {
		t.Errorf("after the button the API says %s", got.State)
	}
	byWeb := false
	for _, e := range s.events(long.ID) {
		var p struct{ By string }
		_ = json.Unmarshal(e.Payload, &p)
		byWeb = byWeb || e.Type == mvp.EventCancelRequested && p.By == "web"
	}
	if !byWeb {
		t.Errorf("no CANCEL_REQUESTED by the web page in %s's history", long.ID)
	}
	waitJob(t, long.ID+"--a01", 60*time.Second, func(j *mvp.JobInfo) bool { return j.Status == mvp.RayStopped })
	t.Logf("screenshots in %s", shots)
}
