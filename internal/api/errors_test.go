package api

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
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
