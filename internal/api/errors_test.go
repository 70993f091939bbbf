package api

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestStatusTableIsOneToOne: every code has its own status, and the client reads each status back as its code.
func TestStatusTableIsOneToOne(t *testing.T) {
	seen := map[int]string{}
	for _, e := range statuses {
		if other, ok := seen[e.status]; ok {
			t.Errorf("HTTP %d is both %s and %s", e.status, other, e.code)
		}
		seen[e.status] = e.code
		if statusOf(e.code) != e.status || codeOf(e.status, "") != e.code || codeOf(e.status, "http") != e.code {
			t.Errorf("%s ↔ %d: statusOf %d, codeOf %s", e.code, e.status, statusOf(e.code), codeOf(e.status, ""))
		}
	}
	if statusOf("no-such-code") != http.StatusInternalServerError || codeOf(400, mvp.CodeConflict) != mvp.CodeConflict {
		t.Error("fallbacks")
	}
}

// TestWriteJSONSaysWhatItCannotEncode: a value JSON cannot hold (a NaN share, say) gives a 500 that says so, not
// a 200 with an empty body.
func TestWriteJSONSaysWhatItCannotEncode(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, map[string]float64{"share": math.NaN()})
	var body ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusInternalServerError ||
		body.Error.Code != mvp.CodeInternal || !strings.Contains(body.Error.Message, "could not be encoded") {
		t.Fatalf("status %d, body %q (%v)", rec.Code, rec.Body.String(), err)
	}
}

// TestAFullDiskIsUnavailable: a write that fails for want of space (or on a read-only disk) outside the database,
// such as a package the Ray door keeps on shared_root, is 503 naming the folder to free, in both error shapes; it
// was "500 internal error".
func TestAFullDiskIsUnavailable(t *testing.T) {
	cases := []struct {
		errno syscall.Errno
		want  string
	}{
		{syscall.ENOSPC, "no space left in /shared/ray_packages: free space there"},
		{syscall.EDQUOT, "no space left in /shared/ray_packages: free space there"},
		{syscall.EROFS, "/shared/ray_packages is read-only"},
	}
	for _, c := range cases {
		err := fmt.Errorf("keep package x.zip: %w", &fs.PathError{Op: "write", Path: "/shared/ray_packages/.upload-1", Err: c.errno})
		r := httptest.NewRequest("PUT", "/ray/api/packages/gcs/x.zip", nil)
		rec := httptest.NewRecorder()
		writeTextError(rec, slog.New(slog.DiscardHandler), r, err)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%v, text: %d %q; want 503 saying %q", c.errno, rec.Code, rec.Body.String(), c.want)
		}
		rec = httptest.NewRecorder()
		writeError(rec, slog.New(slog.DiscardHandler), r, err)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%v, JSON: %d %q; want 503 saying %q", c.errno, rec.Code, rec.Body.String(), c.want)
		}
	}
}
