package raycompat_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/service/servicetest"
)

// TestDoorRefusesASubmissionNotUTF8: a job submission whose body is not UTF-8 was taken, Go's decoder silently
// turning each such byte into U+FFFD: the job would run an entrypoint (or an env value) other than the one sent.
// Ray's own job server cannot read such a body either. Refused with 400, and no task is made.
func TestDoorRefusesASubmissionNotUTF8(t *testing.T) {
	d, m := startDoor(t, servicetest.NewRay(), 4)
	for _, body := range []string{
		"{\"entrypoint\": \"python train.py --tag caf\xe9\"}",
		"{\"entrypoint\": \"x\", \"runtime_env\": {\"env_vars\": {\"A\": \"\xff\"}}}",
	} {
		code, b := d.do("POST", "/api/jobs/", []byte(body))
		if code != 400 || !strings.Contains(string(b), "UTF-8") {
			t.Errorf("%q: %d %s", body, code, b)
		}
	}
	if n, _ := m.Store().CountTasks(context.Background()); n != 0 {
		t.Errorf("%d tasks made from bodies that are not UTF-8", n)
	}
}

// TestDoorRefusesASecondValueAfterTheSubmission: a body with more after its JSON object (a second object, a stray
// word) was taken and the rest silently dropped; Ray's job server refuses it (Python's json: "Extra data").
func TestDoorRefusesASecondValueAfterTheSubmission(t *testing.T) {
	d, m := startDoor(t, servicetest.NewRay(), 4)
	for _, body := range []string{
		`{"entrypoint": "echo a"} {"entrypoint": "echo b"}`,
		`{"entrypoint": "echo a"} x`,
	} {
		code, b := d.do("POST", "/api/jobs/", []byte(body))
		if code != 400 {
			t.Errorf("%q: %d %s", body, code, b)
		}
	}
	if n, _ := m.Store().CountTasks(context.Background()); n != 0 {
		t.Errorf("%d tasks made from bodies with more than one value", n)
	}
}

// TestDoorEchoesNoControlCharacterOfAPath: the plain-text 404 of a job or package the door does not know echoed the
// path's id as sent, so a URL with %1b[…m or %0a put a terminal escape or a forged line into the answer (and into
// any log or terminal that shows it). Such an id is echoed quoted, its control characters escaped.
func TestDoorEchoesNoControlCharacterOfAPath(t *testing.T) {
	d, _ := startDoor(t, servicetest.NewRay(), 4)
	for _, path := range []string{
		"/api/jobs/x%1b%5b31mred",
		"/api/jobs/x%0aforged%20line/logs",
		"/api/packages/gcs/_ray_pkg_x%1b.zip",
	} {
		code, b := d.do("GET", path, nil)
		if code != 404 && code != 400 {
			t.Errorf("%s: %d %s", path, code, b)
		}
		if strings.ContainsAny(strings.TrimSuffix(string(b), "\n"), "\x1b\n\r") {
			t.Errorf("%s: the answer carries a control character: %q", path, b)
		}
	}
	// An ordinary id is echoed as Ray echoes it.
	if code, b := d.do("GET", "/api/jobs/no-such-job", nil); code != 404 || !strings.Contains(string(b), "Job no-such-job does not exist") {
		t.Errorf("ordinary id: %d %q", code, b)
	}
}
