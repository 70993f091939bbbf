package raycompat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
	"github.com/mvp2/mvp/internal/taskfs"
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

// With shared_root no longer mounted (its jobs folder, there when mvp started, gone), the door keeps no package
// on the empty mount point, where no node would see it and the remounted share would hide it: Has and Put answer
// 503 naming shared_root, and a submission that would read one is mvp's side failing (mvp.ErrSubmitInfra).
func TestAnUnmountedSharedRootKeepsNoPackage(t *testing.T) {
	root := t.TempDir()
	jobs := filepath.Join(root, "jobs")
	if err := os.Mkdir(jobs, 0o755); err != nil {
		t.Fatal(err)
	}
	p := Packages{Dir: filepath.Join(root, "ray_packages"), Mounted: taskfs.FS{Root: root, Mounted: true}.CheckMounted}
	name := "_ray_pkg_0123456789abcdef.zip"
	if err := p.Put(PackageProtocol, name, []byte("zip")); err != nil {
		t.Fatalf("put while mounted: %v", err)
	}
	if err := os.RemoveAll(root); err != nil { // unmounted: an empty mount point
		t.Fatal(err)
	}
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	other := "_ray_pkg_fedcba9876543210.zip"
	err := p.Put(PackageProtocol, other, []byte("zip"))
	if mvp.ErrorCode(err) != mvp.CodeUnavailable || !strings.Contains(err.Error(), "shared_root") || !strings.Contains(err.Error(), "mount") {
		t.Errorf("put while unmounted: %v (code %q); want 503 saying shared_root is not mounted", err, mvp.ErrorCode(err))
	}
	if _, err := os.Stat(p.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the packages folder was made on the empty mount point (stat: %v)", err)
	}
	if ok, err := p.Has(PackageProtocol, other); ok || mvp.ErrorCode(err) != mvp.CodeUnavailable {
		t.Errorf("has while unmounted: %v, %v; want 503", ok, err)
	}
	ray := &recordingRay{}
	err = Uploader{RayClient: ray, Packages: p}.SubmitJob(context.Background(), &mvp.JobSubmission{SubmissionID: "x--a01",
		RuntimeEnv: map[string]any{"working_dir": "gcs://" + name}})
	if !errors.Is(err, mvp.ErrSubmitInfra) || ray.uploads+ray.submits != 0 {
		t.Errorf("submit while unmounted: %v (%d uploads, %d submits); want mvp.ErrSubmitInfra and nothing sent", err, ray.uploads, ray.submits)
	}
}

// A job can write on shared_root (it writes in its task folder there), so it can put a symlink in ray_packages
// under the name of a package the operator kept, pointing at a file on mvp's host (/proc/self/environ holds every
// token and the secrets key). mvp never follows it: Has says the package is not kept (Ray's client uploads it
// again, and the upload replaces the link), and a submission naming it is mvp's side failing (mvp.ErrSubmitInfra,
// naming the file) with nothing read through the link uploaded to Ray.
func TestAKeptPackageThatIsASymlinkIsNotFollowed(t *testing.T) {
	p := Packages{Dir: t.TempDir()}
	secret := filepath.Join(t.TempDir(), "environ")
	if err := os.WriteFile(secret, []byte("MVP_SECRETS_KEY=not-for-ray"), 0o600); err != nil {
		t.Fatal(err)
	}
	name := "_ray_pkg_0123456789abcdef.zip"
	if err := os.Symlink(secret, filepath.Join(p.Dir, name)); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Has(PackageProtocol, name); ok || err != nil {
		t.Errorf("Has = %v, %v; want false, nil: a symlink is not a kept package", ok, err)
	}
	data, ok, err := p.Get(PackageProtocol + "://" + name)
	if ok || len(data) > 0 {
		t.Errorf("Get read %q through the symlink (ok %v)", data, ok)
	}
	if !errors.Is(err, mvp.ErrSubmitInfra) || !strings.Contains(err.Error(), filepath.Join(p.Dir, name)) {
		t.Errorf("Get err = %v; want mvp.ErrSubmitInfra naming the file", err)
	}
	ray := &recordingRay{}
	u := Uploader{RayClient: ray, Packages: p}
	if err := u.SubmitJob(context.Background(), &mvp.JobSubmission{SubmissionID: "x--a01",
		RuntimeEnv: map[string]any{"working_dir": "gcs://" + name}}); err == nil || ray.uploads+ray.submits != 0 {
		t.Errorf("submit through the symlink: err %v, %d uploads, %d submits; want an error and no Ray call", err,
			ray.uploads, ray.submits)
	}
	// Ray's client, told the package is not kept, uploads it: the upload replaces the link, not its target.
	if err := p.Put(PackageProtocol, name, []byte("zip")); err != nil {
		t.Fatal(err)
	}
	if data, ok, err := p.Get(PackageProtocol + "://" + name); string(data) != "zip" || !ok || err != nil {
		t.Errorf("after the upload: Get = %q, %v, %v; want the upload", data, ok, err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "MVP_SECRETS_KEY=not-for-ray" {
		t.Errorf("the link's target was changed: %q", b)
	}
}

// TestAPackageReadIsNeverLongerThanTheCap: the size a file shows when opened may be passed by what is then read
// (a job on shared_root writing it meanwhile); what readRegular returns is never longer than its cap. A file of
// /proc shows size 0 and reads longer, as a file growing between the two would.
func TestAPackageReadIsNeverLongerThanTheCap(t *testing.T) {
	data, err := readRegular("/proc/self/status", 10)
	if err == nil {
		t.Fatalf("read %d bytes of a file capped at 10 without an error", len(data))
	}
	if !strings.Contains(err.Error(), "grew past the 10 bytes") {
		t.Errorf("error %q does not say the file grew past the cap", err)
	}
	if data, err := readRegular("/proc/self/status", 1<<20); err != nil || len(data) == 0 {
		t.Errorf("a file within its cap: %d bytes, %v", len(data), err)
	}
}
