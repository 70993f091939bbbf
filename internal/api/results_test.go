package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/api"
	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/service/servicetest"
	"github.com/mvp2/mvp/internal/taskfs"
)

// resultsFixture submits a task and lays out its results folder: files of attempt 1, a file outside the attempt
// folders, symlinks to a file and a folder outside, and a secret beside the results folder.
func resultsFixture(t *testing.T) (base, id, secret string, c *api.Client) {
	t.Helper()
	m := servicetest.Start(t, nil)
	c = m.Client()
	raw, err := c.Submit(context.Background(), []byte(goodSpec), false)
	if err != nil {
		t.Fatal(err)
	}
	var task mvp.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		t.Fatal(err)
	}
	fs := taskfs.FS{Root: m.Config.SharedRoot}
	dir, _ := fs.ResultsDir(task.ID)
	taskDir, _ := fs.TaskDir(task.ID)
	secret = "SECRET-OUTSIDE-RESULTS"
	outside := t.TempDir()
	for p, body := range map[string]string{
		filepath.Join(dir, "a01", "summary.json"):       `{"reward": 0.5}`,
		filepath.Join(dir, "a01", "model", "w.bin"):     "0123456789",
		filepath.Join(dir, "notes.txt"):                 "by hand",
		filepath.Join(taskDir, "beside.txt"):            secret,
		filepath.Join(outside, "passwd"):                secret,
		filepath.Join(dir, "a01", "odd name (1).jsonl"): "{}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		filepath.Join(dir, "a01", "link"):     filepath.Join(outside, "passwd"),
		filepath.Join(dir, "a01", "dirlink"):  outside,
		filepath.Join(dir, "a01", "relative"): "../../beside.txt",
		filepath.Join(dir, "a01", "inside"):   "summary.json", // even a link that stays inside is refused
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return m.URL(), task.ID, secret, c
}

func TestResultsListing(t *testing.T) {
	base, id, _, _ := resultsFixture(t)
	resp, body := do(t, base, "GET", "/api/v2/tasks/"+id+"/results", "", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var got struct {
		Files     []mvp.ResultFile `json:"files"`
		Truncated bool             `json:"truncated"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got.Files {
		names = append(names, f.Path)
		if f.ModTime.IsZero() {
			t.Errorf("%s has no mtime", f.Path)
		}
	}
	want := "a01/model/w.bin a01/odd name (1).jsonl a01/summary.json notes.txt"
	if strings.Join(names, " ") != want || got.Truncated {
		t.Errorf("listed %q (truncated %v), want %q: symlinks are never listed", strings.Join(names, " "), got.Truncated, want)
	}
	if got.Files[0].AttemptNo != 1 || got.Files[0].Size != 10 || got.Files[3].AttemptNo != 0 {
		t.Errorf("attempt numbers or sizes: %+v", got.Files)
	}
	// A task without a results folder lists nothing.
	m2 := servicetest.Start(t, nil)
	raw, err := m2.Client().Submit(context.Background(), []byte(goodSpec), false)
	if err != nil {
		t.Fatal(err)
	}
	var other mvp.Task
	_ = json.Unmarshal(raw, &other)
	resp, body = do(t, m2.URL(), "GET", "/api/v2/tasks/"+other.ID+"/results", "", "", nil)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"files":[]`) {
		t.Errorf("no results folder: %d %s", resp.StatusCode, body)
	}
}

func TestResultFileServing(t *testing.T) {
	base, id, _, c := resultsFixture(t)
	p := "/api/v2/tasks/" + id + "/results/"
	resp, body := do(t, base, "GET", p+"a01/summary.json", "", "", nil)
	if resp.StatusCode != 200 || string(body) != `{"reward": 0.5}` || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("file: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = do(t, base, "GET", p+"a01/model/w.bin", "", "", map[string]string{"Range": "bytes=2-5"})
	if resp.StatusCode != 206 || string(body) != "2345" || resp.Header.Get("Content-Range") != "bytes 2-5/10" ||
		resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("range: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, _ = do(t, base, "GET", p+"a01/model/w.bin", "", "", map[string]string{"Range": "bytes=50-60"})
	if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("range past the end: %d", resp.StatusCode)
	}
	resp, body = do(t, base, "HEAD", p+"notes.txt", "", "", nil)
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("Content-Length") != "7" {
		t.Errorf("HEAD: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = do(t, base, "GET", p+"a01/odd%20name%20%281%29.jsonl", "", "", nil)
	if resp.StatusCode != 200 || string(body) != "{}\n" {
		t.Errorf("escaped name: %d %q", resp.StatusCode, body)
	}
	// The typed client fetches a file and escapes its segments.
	var b bytes.Buffer
	if err := c.ResultFile(context.Background(), id, "a01/odd name (1).jsonl", &b); err != nil || b.String() != "{}\n" {
		t.Errorf("client: %q %v", b.String(), err)
	}
	if err := c.ResultFile(context.Background(), id, "a01/link", &b); err == nil {
		t.Errorf("client fetched a symlink")
	}
}

// TestResultPathsRefused: nothing outside the results folder is ever served, however the path is spelled; each
// refusal is a 4xx (a redirect to a cleaned path that is then no endpoint counts as refused too, as long as the
// secret never comes back).
func TestResultPathsRefused(t *testing.T) {
	base, id, secret, _ := resultsFixture(t)
	p := "/api/v2/tasks/" + id + "/results/"
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		path string
		want int // 0: any 3xx/4xx
	}{
		{"a01/link", 404},                          // symlink to a file outside
		{"a01/dirlink/passwd", 404},                // through a symlinked folder
		{"a01/relative", 404},                      // relative symlink climbing out
		{"a01/inside", 404},                        // symlink that stays inside: still refused
		{"a01", 400},                               // a folder
		{"a01/", 0},                                // empty last segment
		{"../beside.txt", 0},                       // cleaned by the router: redirected
		{"a01/../../beside.txt", 0},                // the same
		{"%2e%2e/beside.txt", 0},                   // encoded dots
		{"a01%2F..%2F..%2Fbeside.txt", 400},        // encoded slashes: one segment for the router, refused by mvp
		{"..%2Fbeside.txt", 400},                   // the same
		{"%2Fetc%2Fpasswd", 400},                   // absolute
		{"a01%5C..%5C..%5Cbeside.txt", 400},        // backslashes
		{"a01/summary.json%00.png", 400},           // NUL
		{"a01//summary.json", 0},                   // double slash: redirected
		{"./a01/summary.json", 0},                  // dot segment: redirected
		{"a01/%2e/summary.json", 0},                // encoded dot segment
		{"nothing-here.txt", 404},                  // absent
		{"a01/summary.json/x", 404},                // a file used as a folder
		{strings.Repeat("a/", 600) + "x.txt", 400}, // too long
	} {
		req, _ := http.NewRequest("GET", base+p+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if strings.Contains(b.String(), secret) || resp.StatusCode == 200 {
			t.Errorf("%s: served (%d): %.80s", c.path, resp.StatusCode, b.String())
			continue
		}
		if c.want != 0 && resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d: %s", c.path, resp.StatusCode, c.want, b.String())
		}
		if resp.StatusCode >= 400 && !strings.Contains(b.String(), `"message"`) {
			t.Errorf("%s: %d without a message: %s", c.path, resp.StatusCode, b.String())
		}
	}
}
