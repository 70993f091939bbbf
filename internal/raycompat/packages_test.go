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

// TestAKeptPackageReplacedByAJobIsRefused: every job can write on shared_root, so one could replace a package the
// operator kept (a regular file, not a link) with code of its own, which the next submission of the operator's
// queued task would upload to Ray and run. A package is kept with a seal under the database's key, which no job
// has: one whose bytes no longer match it is not mvp's. Has says it is not kept (so Ray's client uploads it again),
// Get refuses it as mvp's side failing (mvp.ErrSubmitInfra, saying why and what to do) and nothing reaches Ray; a
// new upload is kept and sealed again.
func TestAKeptPackageReplacedByAJobIsRefused(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("0123456789abcdef0123456789abcdef")}
	name := "_ray_pkg_0123456789abcdef.zip"
	uri := PackageProtocol + "://" + name
	if err := p.Put(PackageProtocol, name, []byte("the operator's zip")); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Has(PackageProtocol, name); !ok || err != nil {
		t.Fatalf("Has of a package just kept = %v, %v", ok, err)
	}
	if data, ok, err := p.Get(uri); string(data) != "the operator's zip" || !ok || err != nil {
		t.Fatalf("Get of a package just kept = %q, %v, %v", data, ok, err)
	}
	// A job writes its own bytes in the package's place (a new file renamed over it, as Put does).
	tmp := filepath.Join(p.Dir, "job-wrote")
	if err := os.WriteFile(tmp, []byte("a job's zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(p.Dir, name)); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Has(PackageProtocol, name); ok || err != nil {
		t.Errorf("Has of a replaced package = %v, %v; want false, nil (Ray's client uploads it again)", ok, err)
	}
	data, ok, err := p.Get(uri)
	if ok || len(data) > 0 || !errors.Is(err, mvp.ErrSubmitInfra) {
		t.Fatalf("Get of a replaced package = %q, %v, %v; want it refused as mvp.ErrSubmitInfra", data, ok, err)
	}
	for _, want := range []string{filepath.Join(p.Dir, name), "changed on shared_root", "submit the job again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Get's error %q does not say %q", err, want)
		}
	}
	ray := &recordingRay{}
	if err := (Uploader{RayClient: ray, Packages: p}).SubmitJob(context.Background(), &mvp.JobSubmission{
		SubmissionID: "x--a01", RuntimeEnv: map[string]any{"working_dir": uri}}); err == nil || ray.uploads+ray.submits != 0 {
		t.Errorf("submit with a replaced package: err %v, %d uploads, %d submits; want an error and no Ray call", err,
			ray.uploads, ray.submits)
	}
	// Its seal removed as well: still not mvp's.
	if err := os.Remove(filepath.Join(p.Dir, name+sealSuffix)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := p.Get(uri); ok || !errors.Is(err, mvp.ErrSubmitInfra) || !strings.Contains(err.Error(), "no seal") {
		t.Errorf("Get of a package without its seal = %v, %v; want it refused, saying it has no seal", ok, err)
	}
	if ok, _ := p.Has(PackageProtocol, name); ok {
		t.Errorf("Has of a package without its seal = true")
	}
	// Uploaded again, it is kept.
	if err := p.Put(PackageProtocol, name, []byte("the operator's zip")); err != nil {
		t.Fatal(err)
	}
	if data, ok, err := p.Get(uri); string(data) != "the operator's zip" || !ok || err != nil {
		t.Errorf("Get after a new upload = %q, %v, %v", data, ok, err)
	}
}

// TestSealUnsealedSealsWhatAnEarlierMvpKept: packages kept before sealing have no seal; SealUnsealed (the first
// start with sealing) seals them as they are, leaves sealed ones and files that are not packages alone, and Get
// then serves them.
func TestSealUnsealedSealsWhatAnEarlierMvpKept(t *testing.T) {
	old := Packages{Dir: t.TempDir()} // an mvp before sealing
	a, b := "_ray_pkg_0123456789abcdef.zip", "_ray_pkg_fedcba9876543210.zip"
	for _, n := range []string{a, b} {
		if err := old.Put(PackageProtocol, n, []byte("zip "+n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(old.Dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Packages{Dir: old.Dir, Key: []byte("0123456789abcdef0123456789abcdef")}
	if _, ok, err := p.Get(PackageProtocol + "://" + a); ok || err == nil {
		t.Fatalf("an unsealed package was served before sealing")
	}
	if err := p.Put(PackageProtocol, b, []byte("zip "+b)); err != nil { // sealed already: left as it is
		t.Fatal(err)
	}
	n, err := p.SealUnsealed()
	if err != nil || n != 1 {
		t.Fatalf("SealUnsealed = %d, %v; want 1 (a), nil", n, err)
	}
	for _, name := range []string{a, b} {
		if data, ok, err := p.Get(PackageProtocol + "://" + name); string(data) != "zip "+name || !ok || err != nil {
			t.Errorf("Get %s after sealing = %q, %v, %v", name, data, ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "notes.txt"+sealSuffix)); err == nil {
		t.Errorf("a file that is not a package was sealed")
	}
}
