//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mvp2/mvp/internal/mvp"
)

// hugeLogDriver prints about 26 MB (240,000 numbered lines), then a last line.
const hugeLogDriver = `line = "x" * 99
for i in range(240000):
    print(f"{i:08d} {line}")
print("the last line of a huge log", flush=True)
`

// TestWebPageShowsTheEndOfAHugeLog: a training run's driver log can be tens or hundreds of MB. The page held all of
// it (26 MB here), appending each piece of the stream by reading the whole text back. It keeps the log's last MiB,
// from a line's start, says that earlier lines are not shown and how to get them, and shows the end.
func TestWebPageShowsTheEndOfAHugeLog(t *testing.T) {
	bin := browser(t)
	waitIdle(t)
	s := startService(t, serviceOpts{})
	dir := t.TempDir()
	script := filepath.Join(dir, "huge.py")
	writeFile(t, script, hugeLogDriver)
	id := submitThroughDoor(t, s, "python3 "+script)
	s.waitState(id, mvp.StateSucceeded, 2*time.Minute)

	bctx := startBrowser(t, bin)
	ctx, cancel := context.WithTimeout(bctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.c.Addr+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), s.token), chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("nodes")), chromedp.Navigate(s.c.Addr+"/ui/tasks/"+id),
		chromedp.WaitVisible(chromedp.ID("task-id"))); err != nil {
		t.Fatalf("browser: log in and open the task: %v", err)
	}
	var shown string
	waitFor(t, 2*time.Minute, "the page to show the huge log's end", func() (bool, string) {
		ctx, cancel := context.WithTimeout(bctx, 10*time.Second)
		defer cancel()
		var err error
		// The text's length and its ends, not the whole text (the old page held all 26 MB).
		shown, err = chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const t = document.getElementById("log").textContent;
			return t.length + "|" + t.slice(0, 200) + "|" + t.slice(-200); })()`))
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(shown, "the last line of a huge log"), tail(shown, 1)
	})
	var n int
	fmt.Sscanf(shown, "%d|", &n)
	if n > 1<<20+200 || !strings.Contains(shown, "earlier lines not shown") || !strings.Contains(shown, "mvp logs "+id) {
		t.Errorf("the page shows %d characters of the log, beginning %q; want at most its last MiB, saying earlier "+
			"lines are not shown and how to get them", n, shown[:min(len(shown), 300)])
	}
}
