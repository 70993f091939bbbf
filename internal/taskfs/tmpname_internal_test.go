package taskfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A write that fails on its temporary file names the file it writes, not the temporary one: the temporary name
// is random, and a task held for its folder rewrote its reason (an event and an ERROR line) at every pass while
// shared_root was full, because the reason quoted a new name each time.
func TestAFailedWriteNamesItsFileNotTheTemporaryOne(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3a"
	// A name the folder takes but its temporary sibling (".<name>.<12 hex>") is too long for: the temporary file
	// cannot be opened, as on a full disk, even for root.
	rel := strings.Repeat("x", 250)
	var msgs []string
	for i := 0; i < 3; i++ {
		err := f.write(id, rel, []byte("x"))
		if err == nil {
			t.Fatal("write of a file whose temporary name is too long: no error")
		}
		var de *DiskError
		if !errors.As(err, &de) {
			t.Errorf("error %v is not a *DiskError", err)
		}
		if !errors.Is(err, syscall.ENAMETOOLONG) {
			t.Errorf("error %v does not keep its cause (ENAMETOOLONG)", err)
		}
		if strings.Contains(err.Error(), "."+rel+".") {
			t.Errorf("error names the temporary file: %v", err)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
		t.Errorf("the same failure is said differently each time:\n%s", strings.Join(msgs, "\n"))
	}
	left, _ := os.ReadDir(filepath.Join(f.Root, "jobs", id))
	for _, e := range left {
		t.Errorf("left in the task folder: %s", e.Name())
	}
}
