package raycompat

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

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
	if ok, err := p.Has(PackageProtocol, other, nil); ok || mvp.ErrorCode(err) != mvp.CodeUnavailable {
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
	if ok, err := p.Has(PackageProtocol, name, nil); ok || err != nil {
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
	// Has's streamed check stops at its cap as well, sealed or not.
	for _, p := range []Packages{{}, {Key: []byte("0123456789abcdef0123456789abcdef")}} {
		fh, err := os.Open("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		err = p.check("x", strings.NewReader(sealMagic+strings.Repeat("0", sealLen)+"\n"+strings.Repeat("z", 100)), 150)
		if err == nil || !strings.Contains(err.Error(), "grew past the 150 bytes") {
			t.Errorf("key %q: check of a sealed file past its cap: %v", p.Key, err)
		}
		if err := p.check("x", fh, 10); err == nil {
			t.Errorf("key %q: check of a file capped at 10 passed", p.Key)
		}
		fh.Close()
	}
}

// TestAKeptPackageReplacedByAJobIsRefused: every job can write on shared_root, so one could replace a package the
// operator kept (a regular file, not a link) with code of its own, which the next submission of the operator's
// queued task would upload to Ray and run. A package is kept sealed under the database's key, which no job has:
// a file whose bytes no longer match its seal, or that carries none, is not mvp's. Has says it is not kept (so
// Ray's client uploads it again; a 404, never an error), Get refuses it as mvp's side failing
// (mvp.ErrSubmitInfra, saying why and what to do) and nothing reaches Ray; a new upload is kept again.
func TestAKeptPackageReplacedByAJobIsRefused(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("0123456789abcdef0123456789abcdef")}
	name := "_ray_pkg_0123456789abcdef.zip"
	uri := PackageProtocol + "://" + name
	put := func() {
		t.Helper()
		if err := p.Put(PackageProtocol, name, []byte("the operator's zip")); err != nil {
			t.Fatal(err)
		}
		if ok, err := p.Has(PackageProtocol, name, nil); !ok || err != nil {
			t.Fatalf("Has of a package just kept = %v, %v", ok, err)
		}
		if data, ok, err := p.Get(uri); string(data) != "the operator's zip" || !ok || err != nil {
			t.Fatalf("Get of a package just kept = %q, %v, %v", data, ok, err)
		}
	}
	// What a job writes in the package's place (a new file renamed over it, as Put does).
	replace := func(b []byte) {
		t.Helper()
		tmp := filepath.Join(p.Dir, "job-wrote")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(p.Dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	put()
	kept, err := os.ReadFile(filepath.Join(p.Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what, why string
		file      []byte
	}{
		{"its bytes changed under its seal", "changed on shared_root",
			append(kept[:len(kept)-len("the operator's zip"):len(kept)-len("the operator's zip")], "a job's zip!!!!!!!"...)},
		{"a raw file in its place", "carries no seal", []byte("a job's zip")},
		{"a damaged seal", "damaged", []byte(sealMagic + "xyz\na job's zip")},
	} {
		put()
		replace(c.file)
		if ok, err := p.Has(PackageProtocol, name, nil); ok || err != nil {
			t.Errorf("%s: Has = %v, %v; want false, nil (Ray's client uploads it again)", c.what, ok, err)
		}
		data, ok, err := p.Get(uri)
		if ok || len(data) > 0 || !errors.Is(err, mvp.ErrSubmitInfra) {
			t.Errorf("%s: Get = %q, %v, %v; want it refused as mvp.ErrSubmitInfra", c.what, data, ok, err)
			continue
		}
		for _, want := range []string{filepath.Join(p.Dir, name), c.why, "submit the job again"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: Get's error %q does not say %q", c.what, err, want)
			}
		}
		ray := &recordingRay{}
		if err := (Uploader{RayClient: ray, Packages: p}).SubmitJob(context.Background(), &mvp.JobSubmission{
			SubmissionID: "x--a01", RuntimeEnv: map[string]any{"working_dir": uri}}); err == nil || ray.uploads+ray.submits != 0 {
			t.Errorf("%s: submit: err %v, %d uploads, %d submits; want an error and no Ray call", c.what, err,
				ray.uploads, ray.submits)
		}
	}
	// A file no package may be (too large) in its place: not kept, not an error (GET 404, not 500).
	put()
	big, err := os.Create(filepath.Join(p.Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(p.maxFile() + 1); err != nil {
		t.Fatal(err)
	}
	big.Close()
	if ok, err := p.Has(PackageProtocol, name, nil); ok || err != nil {
		t.Errorf("a file too large in its place: Has = %v, %v; want false, nil", ok, err)
	}
	put() // uploaded again, it is kept
}

// largeSealedPackage keeps a sealed package of size bytes and returns the Packages that keeps it and its name.
func largeSealedPackage(tb testing.TB, size int) (Packages, string) {
	tb.Helper()
	p := Packages{Dir: tb.TempDir(), Key: []byte("0123456789abcdef0123456789abcdef")}
	name := "_ray_pkg_0123456789abcdef.zip"
	if err := p.Put(PackageProtocol, name, []byte(strings.Repeat("z", size))); err != nil {
		tb.Fatal(err)
	}
	return p, name
}

// TestHasOfALargePackageDoesNotReadItIntoMemory: Ray's client asks whether a package is kept (GET of the door's
// package endpoint) before each upload, and a package may be up to MaxPackageBytes; Has checks the seal by
// streaming the file through the HMAC, so what it allocates does not grow with the package. A property of memory,
// not of time: a 20 MiB package checked with less than 1 MiB allocated.
func TestHasOfALargePackageDoesNotReadItIntoMemory(t *testing.T) {
	const size = 20 << 20
	p, name := largeSealedPackage(t, size)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ok, err := p.Has(PackageProtocol, name, nil)
	runtime.ReadMemStats(&after)
	if !ok || err != nil {
		t.Fatalf("Has of a large package just kept = %v, %v", ok, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("Has of a %d-byte package allocated %d bytes; want under 1 MiB (the file streamed, not read whole)",
			size, alloc)
	}
	// Get still returns the package whole, as checked.
	if data, ok, err := p.Get(PackageProtocol + "://" + name); len(data) != size || !ok || err != nil {
		t.Errorf("Get of a large package = %d bytes, %v, %v", len(data), ok, err)
	}
}

// BenchmarkHasOfALargePackage is Has of a 20 MiB sealed package (the door's GET of a package before an upload).
func BenchmarkHasOfALargePackage(b *testing.B) {
	const size = 20 << 20
	p, name := largeSealedPackage(b, size)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.Has(PackageProtocol, name, nil); !ok || err != nil {
			b.Fatalf("Has = %v, %v", ok, err)
		}
	}
}

// TestConcurrentUploadsOfOnePackageKeepOneWhole: two clients zipping one folder upload under one name (the name is
// a hash of the files) zips that differ (the files' times); whatever the interleaving, what is kept is one of them
// with its own seal, never one upload's bytes with the other's seal (a good task refused).
func TestConcurrentUploadsOfOnePackageKeepOneWhole(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("0123456789abcdef0123456789abcdef")}
	name := "_ray_pkg_0123456789abcdef.zip"
	for i := range 200 {
		var wg sync.WaitGroup
		for _, b := range []string{"zip one", "zip two"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.Put(PackageProtocol, name, []byte(b)); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		data, ok, err := p.Get(PackageProtocol + "://" + name)
		if !ok || err != nil || (string(data) != "zip one" && string(data) != "zip two") {
			t.Fatalf("round %d: Get = %q, %v, %v; want one upload whole", i, data, ok, err)
		}
	}
}

// TestSealUnsealedSealsWhatAnEarlierMvpKept: packages kept before sealing are raw files; SealUnsealed (the first
// start with sealing of a database with door tasks to run) seals them as they are, leaves sealed files (and files
// that only look sealed) and files that are not packages alone, and Get then serves them.
func TestSealUnsealedSealsWhatAnEarlierMvpKept(t *testing.T) {
	old := Packages{Dir: t.TempDir()} // an mvp before sealing
	a, b, c := "_ray_pkg_0123456789abcdef.zip", "_ray_pkg_fedcba9876543210.zip", "_ray_pkg_00112233445566778899.zip"
	if err := old.Put(PackageProtocol, a, []byte("zip "+a)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old.Dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := Packages{Dir: old.Dir, Key: []byte("0123456789abcdef0123456789abcdef")}
	if _, ok, err := p.Get(PackageProtocol + "://" + a); ok || err == nil {
		t.Fatalf("an unsealed package was served before sealing")
	}
	if err := p.Put(PackageProtocol, b, []byte("zip "+b)); err != nil { // sealed already
		t.Fatal(err)
	}
	bogus := sealMagic + strings.Repeat("0", sealLen) + "\nzip"
	if err := os.WriteFile(filepath.Join(p.Dir, c), []byte(bogus), 0o644); err != nil { // looks sealed: left as it is
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
	if _, ok, err := p.Get(PackageProtocol + "://" + c); ok || err == nil {
		t.Errorf("a file that only looks sealed was served")
	}
	if got, _ := os.ReadFile(filepath.Join(p.Dir, "notes.txt")); string(got) != "x" {
		t.Errorf("a file that is not a package was changed: %q", got)
	}
}

// TestAPackageNameLongerThanAFileNameIsRefused: a wheel's name is a file name, at most 255 bytes on the client's
// disk; a longer one (sent by hand) cannot be kept as a file either. Its upload was answered 500 "internal error"
// (the rename failed with ENAMETOOLONG), and its check 404, so a client uploaded it again and again: both are 400
// naming the package.
func TestAPackageNameLongerThanAFileNameIsRefused(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("0123456789abcdef0123456789abcdef")}
	long := strings.Repeat("a", 300) + ".whl"
	if err := p.Put(PackageProtocol, long, []byte("PK")); mvp.ErrorCode(err) != mvp.CodeInvalid || !strings.Contains(err.Error(), "255") {
		t.Errorf("Put: %v (code %q); want 400 saying a name is at most 255 bytes", err, mvp.ErrorCode(err))
	}
	if _, err := p.Has(PackageProtocol, long, nil); mvp.ErrorCode(err) != mvp.CodeInvalid {
		t.Errorf("Has: %v (code %q); want 400", err, mvp.ErrorCode(err))
	}
	ok := strings.Repeat("a", 251) + ".whl" // 255 bytes: a name a disk holds
	if err := p.Put(PackageProtocol, ok, []byte("PK")); err != nil {
		t.Errorf("Put of a 255-byte name: %v", err)
	}
	if has, err := p.Has(PackageProtocol, ok, nil); !has || err != nil {
		t.Errorf("Has of a 255-byte name = %v, %v; want true", has, err)
	}
}

// TestASlowPackageUploadIsTakenWhileItsBytesKeepComing: mvp's server gives a request one minute (ReadTimeout) to
// arrive whole, but a package is up to 100 MiB, which takes longer than that below about 14 Mbit/s (a laptop on
// a VPN): Ray's client failed such an upload ("reading the package failed: … i/o timeout", or the connection
// reset), where Ray's own dashboard takes it. An upload is given the time it takes while its bytes keep coming.
// Here the server's ReadTimeout is 300 ms and the upload takes about 800 ms.
func TestASlowPackageUploadIsTakenWhileItsBytesKeepComing(t *testing.T) {
	p := Packages{Dir: t.TempDir(), Key: []byte("0123456789abcdef0123456789abcdef")}
	d := &Door{Packages: p, Logger: slog.New(slog.DiscardHandler)}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /api/packages/{protocol}/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := d.putPackage(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	defer srv.Close()

	name := "_ray_pkg_0123456789abcdef.zip"
	pr, pw := io.Pipe()
	go func() {
		for range 8 {
			time.Sleep(100 * time.Millisecond)
			if _, err := pw.Write(bytes.Repeat([]byte("z"), 1000)); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequest("PUT", srv.URL+"/api/packages/gcs/"+name, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 8000
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("a slow upload failed: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a slow upload: %d %s; want 200", resp.StatusCode, body)
	}
	if data, ok, err := p.Get(PackageProtocol + "://" + name); !ok || err != nil || len(data) != 8000 {
		t.Errorf("kept: %d bytes, %v, %v; want the 8000 uploaded", len(data), ok, err)
	}
}
