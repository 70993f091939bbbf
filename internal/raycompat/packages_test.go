package raycompat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

type recordingRay struct {
	mvp.RayClient
	uploads, submits int
}

func (r *recordingRay) UploadPackage(context.Context, string, []byte) error { r.uploads++; return nil }
func (r *recordingRay) SubmitJob(context.Context, *mvp.JobSubmission) error { r.submits++; return nil }

// A kept package that mvp cannot read is mvp's side failing, not Ray refusing the job: the error says which file
// and matches mvp.ErrSubmitInfra (so the loop retries the attempt as INFRA), and nothing reaches Ray.
func TestUploaderReportsAnUnreadablePackageAsInfra(t *testing.T) {
	p := Packages{Dir: t.TempDir()}
	name := "_ray_pkg_0123456789abcdef.zip"
	if err := os.Mkdir(filepath.Join(p.Dir, name), 0o755); err != nil { // reading it fails (a folder, not a file)
		t.Fatal(err)
	}
	ray := &recordingRay{}
	u := Uploader{RayClient: ray, Packages: p}
	err := u.SubmitJob(context.Background(), &mvp.JobSubmission{SubmissionID: "x--a01",
		RuntimeEnv: map[string]any{"working_dir": "gcs://" + name}})
	if !errors.Is(err, mvp.ErrSubmitInfra) {
		t.Fatalf("err = %v; want one that matches mvp.ErrSubmitInfra", err)
	}
	if want := filepath.Join(p.Dir, name); !strings.Contains(err.Error(), want) {
		t.Errorf("err %q does not name the file %s", err, want)
	}
	if ray.uploads+ray.submits != 0 {
		t.Errorf("Ray was called (%d uploads, %d submits)", ray.uploads, ray.submits)
	}
	// A package that is simply not kept goes on to Ray as it is.
	if err := u.SubmitJob(context.Background(), &mvp.JobSubmission{SubmissionID: "y--a01",
		RuntimeEnv: map[string]any{"working_dir": "gcs://_ray_pkg_fedcba9876543210.zip"}}); err != nil || ray.submits != 1 {
		t.Fatalf("a package not kept: err %v, submits %d", err, ray.submits)
	}
}
