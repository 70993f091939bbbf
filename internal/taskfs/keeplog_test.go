package taskfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepLogReplacesTheCopyOnlyWhenWhole: KeepLog streams a log into driver.log and returns its tail; a copy
// that fails part way leaves the copy before it and no temporary file; one left by a killed mvp is removed; a
// folder that cannot be written is a *DiskError, told apart from the copy's own error.
func TestKeepLogReplacesTheCopyOnlyWhenWhole(t *testing.T) {
	root := t.TempDir()
	f := FS{Root: root}
	id := "mvp2-ppo-20251223-143201-7f3a"
	tail, err := f.KeepLog(id, 1, 7, func(w io.Writer) error {
		for _, s := range []string{"first\n", "second\n", "\xff last\n"} {
			if _, err := io.WriteString(w, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || tail != "\xff last\n" {
		t.Fatalf("keep: tail %q, err %v", tail, err)
	}
	if got, _ := f.ReadLog(id, 1); got != "first\nsecond\n\xff last\n" {
		t.Errorf("kept %q", got)
	}

	cut := errors.New("copy cut short")
	if _, err := f.KeepLog(id, 1, 8, func(w io.Writer) error {
		io.WriteString(w, "half of a new log")
		return cut
	}); !errors.Is(err, cut) {
		t.Errorf("a failed copy: %v, want its own error", err)
	} else if de := (*DiskError)(nil); errors.As(err, &de) {
		t.Errorf("a failed copy was taken for the disk's: %v", err)
	}
	if got, _ := f.ReadLog(id, 1); got != "first\nsecond\n\xff last\n" {
		t.Errorf("a failed copy changed the kept log: %q", got)
	}
	dir, _ := f.AttemptDir(id, 1)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".driver.log.") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}

	// A copy cut short by a kill -9 left its temporary file (walk-through 16): the next copy removes it.
	stale := filepath.Join(dir, ".driver.log.0123456789ab")
	os.WriteFile(stale, []byte("half"), 0o644)
	if _, err := f.KeepLog(id, 1, 8, func(w io.Writer) error { _, err := io.WriteString(w, "whole\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale temporary file is still there: %v", err)
	}

	// shared_root is a file, not a folder: the task folder cannot be made (as on a read-only or full disk).
	file := filepath.Join(t.TempDir(), "not-a-folder")
	os.WriteFile(file, nil, 0o644)
	_, err = FS{Root: file}.KeepLog(id, 1, 8, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
	var de *DiskError
	if !errors.As(err, &de) {
		t.Errorf("a task folder that cannot be made: %v, want a *DiskError", err)
	}
}

// TestReadLogTailReadsOnlyTheEnd: Classify gets the last bytes of a kept log, read from its end (a log of
// hundreds of MB was read whole into memory when Ray had lost the job).
func TestReadLogTailReadsOnlyTheEnd(t *testing.T) {
	f := FS{Root: t.TempDir()}
	id := "mvp2-ppo-20251223-143201-7f3b"
	if err := f.WriteLog(id, 1, "0123456789"); err != nil {
		t.Fatal(err)
	}
	for max, want := range map[int64]string{4: "6789", 10: "0123456789", 100: "0123456789"} {
		if got, err := f.ReadLogTail(id, 1, max); err != nil || got != want {
			t.Errorf("tail %d: %q, %v; want %q", max, got, err, want)
		}
	}
	if _, err := f.ReadLogTail(id, 2, 4); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no log: %v", err)
	}
}

// TestTailWriterKeepsTheLastBytes: whatever the sizes of the writes, the tail is the last max bytes written.
func TestTailWriterKeepsTheLastBytes(t *testing.T) {
	var all []byte
	tw := &tailWriter{max: 10}
	for i, size := range []int{3, 0, 7, 1, 25, 4, 9, 10, 2, 11, 5, 5, 5} {
		p := make([]byte, size)
		for j := range p {
			p[j] = byte('a' + (i+j)%26)
		}
		tw.Write(p)
		all = append(all, p...)
		want := all[max(len(all)-10, 0):]
		if string(tw.bytes()) != string(want) {
			t.Fatalf("after write %d: tail %q, want %q", i, tw.bytes(), want)
		}
		if cap(tw.buf) > 64 {
			t.Fatalf("the buffer grew to %d bytes for a tail of 10", cap(tw.buf))
		}
	}
}
