package taskfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/mvp2/mvp/internal/mvp"
)

// A task's results live in <task dir>/results/: the job of attempt N gets <task dir>/results/aNN/ as
// MVP_RESULTS_DIR. Only regular files under that folder are ever listed or served: symlinks (at any depth) are
// skipped when listing and refused when asked for, and a path is checked before it is opened, which happens
// through an os.Root so that nothing outside the folder can be reached even if the tree changes meanwhile.

// MaxResultFiles bounds a listing.
const MaxResultFiles = 10000

// maxResultPath bounds a requested path.
const maxResultPath = 1024

var attemptFolderRE = regexp.MustCompile(`^a(\d{2,3})$`)

// ResultsDir returns <task dir>/results.
func (f FS) ResultsDir(id string) (string, error) {
	dir, err := f.TaskDir(id)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "results"), nil
}

// AttemptResultsDir returns <task dir>/results/aNN, the folder attempt n writes its results to.
func (f FS) AttemptResultsDir(id string, n int) (string, error) {
	dir, err := f.ResultsDir(id)
	if err != nil {
		return "", err
	}
	if n < 1 || n > 999 {
		return "", mvp.Errorf(mvp.CodeInvalid, "attempt", "attempt number %d is out of range", n)
	}
	return filepath.Join(dir, fmt.Sprintf("a%02d", n)), nil
}

// openResults opens the task's results folder as an os.Root; ok is false when the task has none yet. It is opened
// inside the task folder (openTask: a task folder the job swapped for a symlink, to another task's folder or one on
// mvp's host, is refused); a results folder that is itself a symlink is refused, and so is one the job swaps for a
// symlink while it is opened (the folder opened must be the one checked).
func (f FS) openResults(id string) (*os.Root, bool, error) {
	notFolder := mvp.Errorf(mvp.CodeNotFound, "path", "the task's results folder is not a folder")
	task, err := f.openTask(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	var e *mvp.Error
	if errors.As(err, &e) {
		return nil, false, err // 404: the task folder is not a folder (a symlink), or changed while it was opened
	}
	if err != nil {
		return nil, false, fmt.Errorf("open the task folder of %s: %w", id, err)
	}
	defer task.Close()
	fi, err := task.Lstat("results")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open results folder: %w", err)
	}
	if !fi.IsDir() {
		return nil, false, notFolder
	}
	r, err := task.OpenRoot("results")
	if err != nil {
		return nil, false, fmt.Errorf("open results folder: %w", err)
	}
	if st, err := r.Stat("."); err != nil || !os.SameFile(fi, st) {
		r.Close()
		return nil, false, notFolder
	}
	return r, true, nil
}

// ListResults lists the regular files under the task's results folder in path order, at most MaxResultFiles
// (truncated says there were more). Symlinks are not listed and not followed. A file whose path OpenResult would
// refuse (CheckResultPath: a backslash, a control character, not UTF-8, too long) is not listed either, so that
// every file listed can be fetched; skipped counts those (and the files under such a folder).
func (f FS) ListResults(id string) (files []mvp.ResultFile, truncated bool, skipped int, err error) {
	root, ok, err := f.openResults(id)
	if err != nil || !ok {
		return []mvp.ResultFile{}, false, 0, err
	}
	defer root.Close()
	files = []mvp.ResultFile{}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skipped
		}
		if d.IsDir() && p != "." && CheckResultPath(p) != nil {
			// No file under it can be asked for; one whose name is not UTF-8 cannot even be walked (io/fs paths are
			// UTF-8), and its files went uncounted.
			skipped += countRegular(root, p)
			return fs.SkipDir
		}
		if d.Type()&fs.ModeSymlink != 0 || !d.Type().IsRegular() {
			return nil // folders are walked (WalkDir does not follow symlinks); nothing else is listed
		}
		if CheckResultPath(p) != nil {
			skipped++
			return nil
		}
		if len(files) == MaxResultFiles {
			truncated = true
			return fs.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rf := mvp.ResultFile{Path: p, Size: info.Size(), ModTime: info.ModTime().UTC()}
		if head, _, ok := strings.Cut(p, "/"); ok {
			if m := attemptFolderRE.FindStringSubmatch(head); m != nil {
				rf.AttemptNo, _ = strconv.Atoi(m[1])
			}
		}
		files = append(files, rf)
		return nil
	})
	if err != nil {
		return nil, false, 0, fmt.Errorf("list results of %s: %w", id, err)
	}
	return files, truncated, skipped, nil
}

// countRegular counts the regular files under the folder dir of root, at any depth, without following symlinks;
// what cannot be read counts nothing.
func countRegular(root *os.Root, dir string) int {
	fh, err := root.Open(dir)
	if err != nil {
		return 0
	}
	entries, err := fh.ReadDir(-1)
	fh.Close()
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		switch {
		case e.Type().IsRegular():
			n++
		case e.IsDir():
			n += countRegular(root, dir+"/"+e.Name())
		}
	}
	return n
}

// CheckResultPath refuses a requested result path that is not a plain relative path of clean segments: empty,
// absolute, with a backslash, a NUL or a control character, a "." or ".." or empty segment, not UTF-8, or too long.
func CheckResultPath(p string) error {
	bad := func(why string) error {
		return mvp.Errorf(mvp.CodeInvalid, "path", "result path %q %s; give a path relative to the results folder, as listed", clipPath(p), why)
	}
	switch {
	case p == "":
		return bad("is empty")
	case len(p) > maxResultPath:
		return bad(fmt.Sprintf("is longer than %d bytes", maxResultPath))
	case !utf8.ValidString(p):
		return bad("is not UTF-8")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return bad("is absolute")
	case strings.ContainsAny(p, "\\"):
		return bad("contains a backslash")
	case strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return bad("contains a control character")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad("has an empty, '.' or '..' segment")
		}
	}
	if path.Clean(p) != p {
		return bad("is not clean")
	}
	return nil
}

// OpenResult opens the regular file at rel under the task's results folder. Every segment of rel is looked at
// without following links: a symlink anywhere on the way, or anything but a regular file at the end, is refused
// (not found). The caller closes the file.
func (f FS) OpenResult(id, rel string) (*os.File, fs.FileInfo, error) {
	if err := CheckResultPath(rel); err != nil {
		return nil, nil, err
	}
	notFound := mvp.Errorf(mvp.CodeNotFound, "path", "task %s has no result file %q", id, clipPath(rel))
	root, ok, err := f.openResults(id)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return nil, nil, notFound
	}
	defer root.Close()
	segs := strings.Split(rel, "/")
	for i := range segs {
		fi, err := root.Lstat(strings.Join(segs[:i+1], "/"))
		if err != nil {
			if i == 0 {
				if hint := inAttemptFolders(root, rel); hint != "" {
					return nil, nil, mvp.Errorf(mvp.CodeNotFound, "path", "task %s has no result file %q; result paths "+
						"begin with the attempt's folder, as mvp results %s lists them: give %s", id, clipPath(rel), id, hint)
				}
			}
			return nil, nil, notFound
		}
		last := i == len(segs)-1
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, nil, mvp.Errorf(mvp.CodeNotFound, "path", "%q is a symbolic link; only regular files under the results folder are served", clipPath(rel))
		case !last && !fi.IsDir():
			return nil, nil, notFound
		case last && fi.IsDir():
			return nil, nil, mvp.Errorf(mvp.CodeInvalid, "path", "%q is a folder; list the results to see its files", clipPath(rel))
		case last && !fi.Mode().IsRegular():
			return nil, nil, notFound
		}
	}
	fh, fi, err := openLeaf(root, rel)
	if err != nil {
		return nil, nil, notFound
	}
	return fh, fi, nil
}

// inAttemptFolders names, quoted and joined by "or", the paths aNN/rel under root that are regular files (at most
// three, the latest attempts first), for a path asked for without its attempt's folder; "" when rel begins with an
// attempt's folder or no attempt holds it. It only names paths: nothing is opened.
func inAttemptFolders(root *os.Root, rel string) string {
	head, _, _ := strings.Cut(rel, "/")
	if attemptFolderRE.MatchString(head) {
		return ""
	}
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return ""
	}
	var found []string
	for i := len(entries) - 1; i >= 0 && len(found) < 3; i-- {
		e := entries[i]
		if !e.IsDir() || !attemptFolderRE.MatchString(e.Name()) {
			continue
		}
		p := e.Name() + "/" + rel
		if fi, err := root.Lstat(p); err == nil && fi.Mode().IsRegular() {
			found = append(found, strconv.Quote(clipPath(p)))
		}
	}
	return strings.Join(found, " or ")
}

// openLeaf opens rel under root if it is a regular file. The Root refuses anything that would leave the folder,
// even if a segment became a link since it was checked; O_NOFOLLOW refuses a link at the end; and O_NONBLOCK keeps
// a named pipe swapped in since the check from holding the open until some writer comes (on a regular file the
// flag changes nothing).
func openLeaf(root *os.Root, rel string) (*os.File, fs.FileInfo, error) {
	return openRegular(root, rel, syscallNoFollow)
}

// openRegular opens rel under root for reading, with flag added, if it is a regular file. A file a job wrote may be
// a named pipe: it is opened without waiting for a writer (O_NONBLOCK) and refused.
func openRegular(root *os.Root, rel string, flag int) (*os.File, fs.FileInfo, error) {
	fh, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|flag, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		fh.Close()
		return nil, nil, fmt.Errorf("%s is not a regular file", rel)
	}
	return fh, fi, nil
}

func clipPath(s string) string { return mvp.Clip(s, 80) }
