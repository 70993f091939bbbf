package raycompat

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TestPackageUploadsAreReadAFewAtATime: each upload is held whole while it is read, sealed and kept (up to 100
// MiB), so the door reads at most MaxUploads at once and the next waits its turn: a burst of `ray job submit
// --working-dir` could otherwise take the service's memory. Here a third upload's body is not read while two are
// being read, and is once one of them ends.
func TestPackageUploadsAreReadAFewAtATime(t *testing.T) {
	d := &Door{Packages: Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}},
		Logger: slog.New(slog.DiscardHandler)}
	names := []string{"_ray_pkg_0000000000000001.zip", "_ray_pkg_0000000000000002.zip", "_ray_pkg_0000000000000003.zip"}
	pws := make([]*io.PipeWriter, len(names))
	done := make([]chan int, len(names))
	for i, name := range names {
		pr, pw := io.Pipe()
		pws[i], done[i] = pw, make(chan int, 1)
		r := httptest.NewRequest("PUT", "/api/packages/gcs/"+name, pr)
		r.SetPathValue("protocol", "gcs")
		r.SetPathValue("name", name)
		go func(i int) {
			rec := httptest.NewRecorder()
			if err := d.putPackage(rec, r); err != nil {
				t.Errorf("upload %d: %v", i, err)
			}
			done[i] <- rec.Code
		}(i)
		if i < MaxUploads {
			if _, err := pw.Write([]byte("PK")); err != nil { // read at once: it holds a place
				t.Fatal(err)
			}
		}
	}
	third := make(chan error, 1)
	go func() { _, err := pws[2].Write([]byte("PK")); third <- err }()
	select {
	case <-third:
		t.Fatalf("a third upload was read while %d were", MaxUploads)
	case <-time.After(200 * time.Millisecond):
	}
	pws[0].Close()
	if code := <-done[0]; code != http.StatusOK {
		t.Fatalf("first upload: %d", code)
	}
	select {
	case err := <-third:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the third upload was not read once the first ended")
	}
	pws[1].Close()
	pws[2].Close()
	for i := 1; i < 3; i++ {
		if code := <-done[i]; code != http.StatusOK {
			t.Errorf("upload %d: %d", i, code)
		}
	}
}

// TestASlowUploadDoesNotHoldItsPlaceForever: an upload whose bytes trickle in (one now and then, each within
// uploadStall) held one of the MaxUploads places as long as it went on: two such clients, slow links or not, kept
// every other `ray job submit --working-dir` waiting without end. An upload is now given the time its size takes at
// minUploadRate (plus uploadStall), and ends refused past it, freeing its place.
func TestASlowUploadDoesNotHoldItsPlaceForever(t *testing.T) {
	defer func(s time.Duration, r int64) { uploadStall, minUploadRate = s, r }(uploadStall, minUploadRate)
	uploadStall, minUploadRate = 300*time.Millisecond, 1<<20 // 1 KiB declared: given about 0.3 s
	d := &Door{Packages: Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}},
		Logger: slog.New(slog.DiscardHandler)}
	name := "_ray_pkg_0000000000000004.zip"
	pr, pw := io.Pipe()
	defer pw.Close()
	r := httptest.NewRequest("PUT", "/api/packages/gcs/"+name, pr)
	r.ContentLength = 1024
	r.SetPathValue("protocol", "gcs")
	r.SetPathValue("name", name)
	done := make(chan error, 1)
	go func() { done <- d.putPackage(httptest.NewRecorder(), r) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "KiB/s") {
				t.Fatalf("a trickling upload ended with %v; want it refused, saying the least rate", err)
			}
			return
		default:
		}
		go pw.Write([]byte("P")) // a byte every 20 ms: each within uploadStall
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("an upload trickling one byte every 20 ms still held its place after 10 s")
}

// TestAnUploadWaitsForAPlaceBoundedly: while MaxUploads uploads are being read, the next waited for a place without
// end; it now waits uploadSlotWait and is refused with 503, saying why and what to do.
func TestAnUploadWaitsForAPlaceBoundedly(t *testing.T) {
	defer func(w time.Duration) { uploadSlotWait = w }(uploadSlotWait)
	uploadSlotWait = 100 * time.Millisecond
	holdEveryUploadPlace(t)
	d := &Door{Packages: Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}},
		Logger: slog.New(slog.DiscardHandler)}
	name := "_ray_pkg_0000000000000005.zip"
	r := httptest.NewRequest("PUT", "/api/packages/gcs/"+name, strings.NewReader("PK"))
	r.SetPathValue("protocol", "gcs")
	r.SetPathValue("name", name)
	done := make(chan error, 1)
	go func() { done <- d.putPackage(httptest.NewRecorder(), r) }()
	select {
	case err := <-done:
		if mvp.ErrorCode(err) != mvp.CodeUnavailable || !strings.Contains(err.Error(), "again") {
			t.Errorf("an upload that found no place: %v; want 503 saying to try again", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an upload waited 10 s for a place; want it refused after uploadSlotWait")
	}
}

// TestAnUploadDeclaredTooLargeIsRefusedAtOnce: a Content-Length past MaxPackageBytes was read into a place (and
// held it) until the bytes passed the cap; it is refused (413) before it takes one.
func TestAnUploadDeclaredTooLargeIsRefusedAtOnce(t *testing.T) {
	holdEveryUploadPlace(t)
	d := &Door{Packages: Packages{Dir: t.TempDir(), Key: []byte("k"), Guard: &sync.RWMutex{}},
		Logger: slog.New(slog.DiscardHandler)}
	name := "_ray_pkg_0000000000000006.zip"
	r := httptest.NewRequest("PUT", "/api/packages/gcs/"+name, strings.NewReader("PK"))
	r.ContentLength = MaxPackageBytes + 1
	r.SetPathValue("protocol", "gcs")
	r.SetPathValue("name", name)
	done := make(chan error, 1)
	go func() { done <- d.putPackage(httptest.NewRecorder(), r) }()
	select {
	case err := <-done:
		if mvp.ErrorCode(err) != mvp.CodeTooLarge {
			t.Errorf("an upload declaring %d bytes: %v; want 413", MaxPackageBytes+1, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an upload declaring more than MaxPackageBytes waited for a place")
	}
}

// holdEveryUploadPlace takes the MaxUploads places of uploads being read, as uploads in progress would, until the
// test ends.
func holdEveryUploadPlace(t *testing.T) {
	for range MaxUploads {
		uploads <- struct{}{}
	}
	t.Cleanup(func() {
		for range MaxUploads {
			<-uploads
		}
	})
}
