//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestADriverLogThatIsNotUTF8IsKeptByteForByte: a driver that prints bytes that are not UTF-8 (a binary dump, a
// library's progress bar in another encoding). Ray's job server answers 500 for such a log (it decodes the whole
// file as UTF-8), so mvp never kept it and lost it once the job left Ray (walk-through 16). mvp now copies the
// file from the driver's node through Ray's state API: the kept log and `mvp logs` hold the very bytes printed.
func TestADriverLogThatIsNotUTF8IsKeptByteForByte(t *testing.T) {
	waitIdle(t)
	s := startService(t, serviceOpts{})
	entry := `python3 -c "import sys; sys.stdout.buffer.write(b'before\n\xff\xfe not utf-8 \x1b[31mred\x1b[0m\r50%\r100%\nafter\n')"`
	want := []byte("before\n\xff\xfe not utf-8 \x1b[31mred\x1b[0m\r50%\r100%\nafter\n")
	body, _ := json.Marshal(map[string]any{"entrypoint": entry})
	req, _ := http.NewRequest(http.MethodPost, s.c.Addr+"/ray/api/jobs/", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("submit through the door: %d %s", resp.StatusCode, b)
	}
	page, _, err := s.c.List(ctxT(t), "", "", 10, "")
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("list: %v (err %v), want the one task", page, err)
	}
	id := page.Tasks[0].ID
	s.waitState(id, mvp.StateSucceeded, 120*time.Second)
	waitFor(t, 60*time.Second, "the driver log to be kept", func() (bool, string) {
		a := s.get(id).Attempts[0]
		return a.LogKept, "log_tries " + itoa(a.LogTries)
	})
	got := s.logs(id, 1)
	if !strings.Contains(got, string(want)) {
		t.Errorf("the kept log does not hold the bytes printed:\n got %q\nwant %q within it", got, want)
	}
}
