package raycompat

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestAJobIsFoundByItsRayJobID: the door shows job_id (the latest attempt's Ray job id, e.g. "02000000");
// Ray's server finds a job by it as by its submission id (job_head find_job_by_ids: "First try to find by
// job_id"), and the SDK documents get_job_info/stop_job/get_job_logs as taking "The job ID or submission ID".
func TestAJobIsFoundByItsRayJobID(t *testing.T) {
	db := openDB(t)
	doorTaskAt(t, db, "0902", "byjobid", mvp.StateRunning, &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RayJobID: "02000000"})
	srv := serveDoor(t, &Door{Store: db, Logger: slog.New(slog.DiscardHandler)})
	resp, err := http.Get(srv.URL + "/api/jobs/byjobid")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"job_id":"02000000"`) {
		t.Fatalf("details: %s", b)
	}
	resp, err = http.Get(srv.URL + "/api/jobs/02000000")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"submission_id":"byjobid"`) {
		t.Errorf("GET /api/jobs/<job_id shown in JobDetails>: %d %s; Ray answers the job", resp.StatusCode, b)
	}
	// Ray's ids start again with each head: a newer job with the same id is the one found.
	doorTaskAt(t, db, "0903", "newer", mvp.StateRunning, &mvp.Attempt{No: 1, RayStatus: mvp.RayRunning, RayJobID: "02000000"})
	if b := get(t, srv.URL+"/api/jobs/02000000"); !strings.Contains(b, `"submission_id":"newer"`) {
		t.Errorf("two jobs with Ray job id 02000000: %s; want the newer", b)
	}
	// An id no attempt has is Ray's 404.
	resp, err = http.Get(srv.URL + "/api/jobs/0a000000")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("GET /api/jobs/0a000000, no such job id: %d", resp.StatusCode)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
