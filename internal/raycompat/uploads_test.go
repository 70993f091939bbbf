package raycompat

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
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
