package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/api"
)

// TestBadInputCorpus replays every request in testdata/corpus (scripts/gen-corpus.py writes them; fuzzing adds
// more) as raw HTTP against a real server: each must get a 4xx in the error shape, nothing may be written, and the
// server must stay healthy.
func TestBadInputCorpus(t *testing.T) {
	base, db := newServer(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "corpus", "*.http"))
	if len(files) < 200 {
		t.Fatalf("the corpus has %d requests; at least 200 are kept (run scripts/gen-corpus.py)", len(files))
	}
	addr := strings.TrimPrefix(base, "http://")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		status, body, err := replay(addr, raw)
		name := filepath.Base(f)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if status < 400 || status > 499 {
			t.Errorf("%s: status %d: %.300s", name, status, body)
			continue
		}
		var eb api.ErrorBody
		if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Code == "" || len(eb.Error.Message) < 10 {
			t.Errorf("%s: %d without the error shape: %.300s", name, status, body)
		}
		if strings.Contains(string(body), token) {
			t.Errorf("%s: the token is in the answer", name)
		}
	}
	if n, _ := db.CountTasks(context.Background()); n != 0 {
		t.Errorf("bad requests wrote %d tasks", n)
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("server unhealthy after the corpus: %v", err)
	}
}

// replay sends one corpus request over a fresh TCP connection and reads the answer.
func replay(addr string, raw []byte) (int, []byte, error) {
	head, body, ok := bytes.Cut(raw, []byte("\n\n"))
	if !ok {
		return 0, nil, fmt.Errorf("no blank line after the headers")
	}
	lines := strings.Split(string(head), "\n")
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n", lines[0], addr)
	for _, h := range lines[1:] {
		fmt.Fprintf(&b, "%s\r\n", strings.ReplaceAll(h, "{{TOKEN}}", token))
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(b.Bytes()); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
