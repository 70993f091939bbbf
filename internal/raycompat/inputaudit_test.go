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
