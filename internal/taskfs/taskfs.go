// Package taskfs keeps each task's folder on the shared filesystem: <shared_root>/jobs/<task_id>/ with the
// jobspec as submitted, the effective spec, and per attempt the Ray submission payload, Ray's final status and the
// driver log. Task ids are checked before they become paths.
package taskfs

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mvp2/mvp/internal/mvp"
)

// TaskIDPattern is the shape of every task id mvp makes: mvp2-<workload>-<YYYYMMDD>-<HHMMSS>-<hex>, the workload
// one of mvp.Workloads.
var TaskIDPattern = func() *regexp.Regexp {
	names := make([]string, len(mvp.Workloads))
	for i, w := range mvp.Workloads {
		names[i] = regexp.QuoteMeta(string(w))
	}
	return regexp.MustCompile(`^mvp2-(` + strings.Join(names, "|") + `)-\d{8}-\d{6}-[0-9a-f]{4,8}$`)
}()

// FS is the task folders under one shared root.
type FS struct {
	// Root is shared_root; folders live under Root/jobs.
	Root string
	// Key seals an attempt's end as WriteResult writes it (the database's key): a job can write in its attempt's
	// folder, so ReadResult trusts only an end with its seal. Without it nothing is sealed or trusted.
	Key []byte
	// Mounted says that Root/jobs was there once mvp started (CheckWritable makes it): from then on a write does
	// not make it again. Its absence says the shared filesystem is no longer mounted at Root (an empty mount point
	// on the local disk), where a task folder would be seen by mvp and by none of Ray's nodes.
	Mounted bool
}

// TaskDir returns <root>/jobs/<id>, refusing ids that are not mvp task ids.
func (f FS) TaskDir(id string) (string, error) {
	if !TaskIDPattern.MatchString(id) {
		return "", mvp.Errorf(mvp.CodeInvalid, "task_id", "%q is not an mvp task id", id)
	}
	jobs := filepath.Join(f.Root, "jobs")
	dir := filepath.Join(jobs, id)
	if !strings.HasPrefix(dir, jobs+string(filepath.Separator)) {
		return "", mvp.Errorf(mvp.CodeInvalid, "task_id", "%q escapes the jobs folder", id)
	}
	return dir, nil
}

// CheckWritable makes <root>/jobs if need be and writes and removes a file in it: mvp cannot keep task folders on
// a shared root it cannot write, and it says so when it starts rather than losing every task's files. made says
// that the root itself did not exist (a shared filesystem not mounted, or a mistyped path, looks so).
func (f FS) CheckWritable() (made bool, err error) {
	if _, err := os.Stat(f.Root); errors.Is(err, fs.ErrNotExist) {
		made = true
	}
	jobs := filepath.Join(f.Root, "jobs")
	if err := os.MkdirAll(jobs, 0o755); err != nil {
		return made, err
	}
	tmp, err := os.CreateTemp(jobs, ".mvp-write-check-*")
	if err != nil {
		// The folder and the cause, not the check file's random name: a held task's reason quotes this.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return made, fmt.Errorf("create a file in %s: %w", jobs, err)
	}
	name := tmp.Name()
	tmp.Close()
	if err := os.Remove(name); err != nil {
		return made, fmt.Errorf("remove a file in %s: %w", jobs, untemp(err, name))
	}
	return made, nil
}

// CheckMounted refuses a write while Root/jobs, there when mvp started (Mounted), is not: the shared filesystem is
// not mounted at Root now. Anything else mvp keeps on shared_root (the Ray door's packages) asks it too.
func (f FS) CheckMounted() error {
	if !f.Mounted {
		return nil
	}
	jobs := filepath.Join(f.Root, "jobs")
	fi, err := os.Stat(jobs)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a folder", jobs)
	}
	if err != nil {
		return fmt.Errorf("its jobs folder, there when mvp started, is gone (%w): is the shared filesystem still mounted "+
			"at shared_root? mount it back (if shared_root was emptied on purpose, make the folder again: mkdir %s)", err, jobs)
	}
	return nil
}

// AttemptDir returns <task dir>/attempts/aNN.
func (f FS) AttemptDir(id string, n int) (string, error) {
	dir, err := f.TaskDir(id)
	if err != nil {
		return "", err
	}
	if n < 1 || n > 999 {
		return "", mvp.Errorf(mvp.CodeInvalid, "attempt", "attempt number %d is out of range", n)
	}
	return filepath.Join(dir, "attempts", fmt.Sprintf("a%02d", n)), nil
}

// WriteTask writes the jobspec exactly as submitted and the effective spec.
func (f FS) WriteTask(id string, raw []byte, spec json.RawMessage) error {
	if err := f.write(id, "jobspec.yaml", raw); err != nil {
		return err
	}
	return f.write(id, "spec.json", indent(spec))
}

// WriteSubmission writes an attempt's Ray payload and submission id, before the Ray call is made, and makes the
// attempt's results folder.
func (f FS) WriteSubmission(id string, n int, s *mvp.JobSubmission) error {
	dir, err := attemptRel(n)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode submission: %w", err)
	}
	if err := f.write(id, filepath.Join(dir, "submission.json"), b); err != nil {
		return err
	}
	if err := f.write(id, filepath.Join(dir, "submission_id"), []byte(s.SubmissionID+"\n")); err != nil {
		return err
	}
	// The attempt's results folder ($MVP_RESULTS_DIR) exists before the job starts: user code opens files in it.
	root, err := f.openTask(id)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(filepath.Join("results", filepath.Base(dir)), 0o755); err != nil { // results/aNN
		return fmt.Errorf("create the results folder of attempt %d: %w", n, err)
	}
	return nil
}

// result is an attempt's end as status.json holds it: Ray's final view of the job and the failure kind mvp gave
// it; the seal is over its compact JSON.
type result struct {
	*mvp.JobInfo
	FailureKind mvp.FailureKind `json:"failure_kind"`
}

// ErrNotSealed: an attempt's status.json without FS.Key's seal (written by someone else, or read without a key).
var ErrNotSealed = errors.New("the attempt's status.json does not carry mvp's seal")

// seal is the HMAC of attempt n's end r under f.Key, or "" without a key.
func (f FS) seal(id string, n int, r result) (string, error) {
	if len(f.Key) == 0 {
		return "", nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, f.Key)
	fmt.Fprintf(m, "mvp attempt end v1\x00%s\x00%d\x00", id, n)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// WriteResult writes Ray's final view of an attempt and the failure kind mvp gave it (status.json), sealed with
// f.Key.
func (f FS) WriteResult(id string, n int, info *mvp.JobInfo, failure mvp.FailureKind) error {
	dir, err := attemptRel(n)
	if err != nil {
		return err
	}
	r := result{info, failure}
	seal, err := f.seal(id, n, r)
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	b, err := json.MarshalIndent(struct {
		result
		Seal string `json:"mvp_seal,omitempty"`
	}{r, seal}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	return f.write(id, filepath.Join(dir, "status.json"), b)
}

// WriteLog replaces the attempt's copy of the driver log.
func (f FS) WriteLog(id string, n int, log string) error {
	dir, err := attemptRel(n)
	if err != nil {
		return err
	}
	return f.write(id, filepath.Join(dir, "driver.log"), []byte(log))
}

// KeepLog replaces attempt n's copy of the driver log with what fill writes, streamed to disk: into a new file
// renamed over driver.log once fill returns nil. An error of fill (the copy from Ray) leaves the copy as it was
// and is returned as is; a failure of the disk is a *DiskError. It returns up to tailBytes of the log's end.
func (f FS) KeepLog(id string, n int, tailBytes int, fill func(io.Writer) error) (string, error) {
	dir, err := attemptRel(n)
	if err != nil {
		return "", err
	}
	f.removeStaleCopies(id, dir, "driver.log")
	tail := &tailWriter{max: tailBytes}
	err = f.writeFrom(id, filepath.Join(dir, "driver.log"), func(w io.Writer) error {
		return fill(io.MultiWriter(w, tail))
	})
	if err != nil {
		return "", err
	}
	return string(tail.bytes()), nil
}

// removeStaleCopies removes the temporary files of name in the task folder's dir (.<name>.<hex>) that a copy cut
// short by a kill left. Only the scheduler's loop writes driver logs, one at a time, so none is in use.
func (f FS) removeStaleCopies(id, dir, name string) {
	root, err := f.openTask(id)
	if err != nil {
		return
	}
	defer root.Close()
	d, err := root.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if strings.HasPrefix(n, "."+name+".") {
			_ = root.Remove(filepath.Join(dir, n)) // a symlink is removed, never followed
		}
	}
}

// DiskError is a failure to write in the task folder (as opposed to one of what was being written).
type DiskError struct{ Err error }

func (e *DiskError) Error() string { return e.Err.Error() }
func (e *DiskError) Unwrap() error { return e.Err }

// ReadTail returns the last tailBytes of what fill writes, holding no more than twice that: the end of a driver
// log read without keeping it (its task folder cannot be written), for the verdict on its run.
func ReadTail(tailBytes int, fill func(io.Writer) error) (string, error) {
	tail := &tailWriter{max: tailBytes}
	if err := fill(tail); err != nil {
		return "", err
	}
	return string(tail.bytes()), nil
}

// tailWriter keeps the last max bytes written to it. Its buffer grows to twice max before the tail is moved to
// its front, so that a log of hundreds of MB is not moved max bytes at every write of the copy.
type tailWriter struct {
	max int
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	if t.max <= 0 {
		return len(p), nil
	}
	if len(t.buf)+len(p) > 2*t.max {
		keep := t.buf[max(len(t.buf)-t.max, 0):]
		t.buf = append(t.buf[:0], keep...)
	}
	if len(p) > t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
	} else {
		t.buf = append(t.buf, p...)
	}
	return len(p), nil
}

func (t *tailWriter) bytes() []byte { return t.buf[max(len(t.buf)-t.max, 0):] }

// attemptRel is attempt n's folder inside the task folder: attempts/aNN.
func attemptRel(n int) (string, error) {
	if n < 1 || n > 999 {
		return "", mvp.Errorf(mvp.CodeInvalid, "attempt", "attempt number %d is out of range", n)
	}
	return filepath.Join("attempts", fmt.Sprintf("a%02d", n)), nil
}

// ReadResult returns what WriteResult kept of attempt n's end: Ray's final view of the job and the failure kind
// mvp gave it. It is an error wrapping os.ErrNotExist when the attempt has not ended (or was never sent), and
// ErrNotSealed when the file does not carry f.Key's seal (the job can write in its attempt's folder).
func (f FS) ReadResult(id string, n int) (*mvp.JobInfo, mvp.FailureKind, error) {
	fh, _, err := f.openAttemptFile(id, n, "status.json")
	if err != nil {
		return nil, "", fmt.Errorf("read attempt status: %w", err)
	}
	defer fh.Close()
	var r struct {
		mvp.JobInfo
		FailureKind mvp.FailureKind `json:"failure_kind"`
		Seal        string          `json:"mvp_seal"`
	}
	if err := json.NewDecoder(io.LimitReader(fh, 1<<20)).Decode(&r); err != nil {
		return nil, "", fmt.Errorf("read attempt status: %w", err)
	}
	want, err := f.seal(id, n, result{&r.JobInfo, r.FailureKind})
	if err != nil || want == "" || !hmac.Equal([]byte(r.Seal), []byte(want)) {
		return nil, "", fmt.Errorf("read attempt status of %s attempt %d: %w", id, n, ErrNotSealed)
	}
	return &r.JobInfo, r.FailureKind, nil
}

// ReadLog returns the attempt's copy of the driver log, or an error wrapping os.ErrNotExist.
func (f FS) ReadLog(id string, n int) (string, error) {
	fh, _, err := f.openAttemptFile(id, n, "driver.log")
	if err != nil {
		return "", fmt.Errorf("read driver log: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(fh)
	if err != nil {
		return "", fmt.Errorf("read driver log: %w", err)
	}
	return string(b), nil
}

// ReadLogTail returns the last max bytes of the attempt's copy of the driver log (all of it when it is no
// longer), or an error wrapping os.ErrNotExist.
func (f FS) ReadLogTail(id string, n int, max int64) (string, error) {
	fh, fi, err := f.openAttemptFile(id, n, "driver.log")
	if err != nil {
		return "", fmt.Errorf("read driver log: %w", err)
	}
	defer fh.Close()
	if off := fi.Size() - max; off > 0 {
		if _, err := fh.Seek(off, io.SeekStart); err != nil {
			return "", fmt.Errorf("read driver log: %w", err)
		}
	}
	b, err := io.ReadAll(io.LimitReader(fh, max))
	if err != nil {
		return "", fmt.Errorf("read driver log: %w", err)
	}
	return string(b), nil
}

// CopyLog writes the attempt's copy of the driver log from its byte skip on to w and returns the bytes written; an
// error wraps os.ErrNotExist when there is no copy.
func (f FS) CopyLog(id string, n int, skip int64, w io.Writer) (int64, error) {
	fh, fi, err := f.openAttemptFile(id, n, "driver.log")
	if err != nil {
		return 0, fmt.Errorf("read driver log: %w", err)
	}
	defer fh.Close()
	if skip >= fi.Size() {
		return 0, nil
	}
	if _, err := fh.Seek(skip, io.SeekStart); err != nil {
		return 0, fmt.Errorf("read driver log: %w", err)
	}
	m, err := io.Copy(w, fh)
	if err != nil {
		return m, fmt.Errorf("read driver log: %w", err)
	}
	return m, nil
}

// openAttemptFile opens attempt n's file name for reading. The job can write in its attempt folder, so the file is
// opened inside the task folder only (a symlink out of it, at any segment, is refused; one at the last segment
// too), without blocking, and must be a regular file.
func (f FS) openAttemptFile(id string, n int, name string) (*os.File, os.FileInfo, error) {
	dir, err := attemptRel(n)
	if err != nil {
		return nil, nil, err
	}
	root, err := f.openTask(id)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close() // the file stays open
	fh, err := root.OpenFile(filepath.Join(dir, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := fh.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		fh.Close()
		return nil, nil, mvp.Errorf(mvp.CodeNotFound, "", "%s of attempt %d is not a regular file", name, n)
	}
	return fh, fi, nil
}

// openTask opens the task's folder as an os.Root, so that what the job wrote in it (a symlink) cannot lead a read
// outside it. The folder must be a folder, not a symlink, and the one opened must be the one checked (a job that
// swaps it between the two is refused).
func (f FS) openTask(id string) (*os.Root, error) {
	dir, err := f.TaskDir(id)
	if err != nil {
		return nil, err
	}
	return openDir(dir)
}

// openDir opens dir as an os.Root if it is a real folder (not a symlink) and is still that folder once opened.
func openDir(dir string) (*os.Root, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, mvp.Errorf(mvp.CodeNotFound, "", "%s is not a folder", filepath.Base(dir))
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	if st, err := r.Stat("."); err != nil || !os.SameFile(fi, st) {
		r.Close()
		return nil, mvp.Errorf(mvp.CodeNotFound, "", "%s changed while it was opened", filepath.Base(dir))
	}
	return r, nil
}

func indent(b json.RawMessage) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return b
	}
	return out
}

// write writes rel inside the task's folder atomically (a temporary file in the same folder, then a rename),
// through an os.Root on the folder: the job can write in it, and a symlink it put there (an attempt's folder, say)
// must not lead mvp's write outside.
func (f FS) write(id, rel string, b []byte) error {
	return f.writeFrom(id, rel, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// writeFrom writes the task file rel with what fill writes: to a new file beside it, renamed over rel once fill
// and the file's close succeed (a reader never sees half a file). A failure of the disk (the folder, the file, a
// write fill makes to it) is a *DiskError; fill's own error is returned as it is. Either way rel is untouched.
func (f FS) writeFrom(id, rel string, fill func(io.Writer) error) error {
	dir, err := f.TaskDir(id)
	if err != nil {
		return err
	}
	if err := f.CheckMounted(); err != nil {
		return &DiskError{err}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &DiskError{fmt.Errorf("create the task folder: %w", err)}
	}
	root, err := openDir(dir)
	if err != nil {
		return &DiskError{fmt.Errorf("write %s: %w", rel, err)}
	}
	defer root.Close()
	if d := filepath.Dir(rel); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return &DiskError{fmt.Errorf("create folder for %s: %w", rel, err)}
		}
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+"."+hex.EncodeToString(suffix[:]))
	fh, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return &DiskError{fmt.Errorf("write %s: %w", rel, untemp(err, tmp))}
	}
	dw := &diskWriter{w: fh}
	if err := fill(dw); err != nil || dw.err != nil {
		fh.Close()
		root.Remove(tmp)
		if dw.err != nil {
			return &DiskError{fmt.Errorf("write %s: %w", rel, untemp(dw.err, tmp))}
		}
		return err
	}
	if err := fh.Close(); err != nil {
		root.Remove(tmp)
		return &DiskError{fmt.Errorf("write %s: %w", rel, untemp(err, tmp))}
	}
	if err := root.Chmod(tmp, 0o644); err != nil { // whatever the umask: the folder is read by people and tools
		root.Remove(tmp)
		return &DiskError{fmt.Errorf("write %s: %w", rel, untemp(err, tmp))}
	}
	if err := root.Rename(tmp, rel); err != nil {
		root.Remove(tmp)
		return &DiskError{fmt.Errorf("write %s: %w", rel, untemp(err, tmp))}
	}
	return nil
}

// untemp drops the temporary file's name from err (an *fs.PathError or *os.LinkError on tmp): the name is random,
// and a failure said with it read differently each time (a task held for its folder on a full shared_root rewrote
// its reason at every pass). What is left is the cause (no space left on device…), under the file's own name.
func untemp(err error, tmp string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && filepath.Base(pe.Path) == filepath.Base(tmp) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) && filepath.Base(le.Old) == filepath.Base(tmp) {
		return le.Err
	}
	return err
}

// diskWriter remembers the first error of the file it writes to.
type diskWriter struct {
	w   io.Writer
	err error
}

func (d *diskWriter) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	n, err := d.w.Write(p)
	d.err = err
	return n, err
}

// progressPath returns the attempt's progress file.
func (f FS) progressPath(id string, n int) (string, error) {
	dir, err := f.AttemptDir(id, n)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, mvp.ProgressFile), nil
}

// ProgressModTime returns when the attempt's progress file last changed, or an error wrapping os.ErrNotExist when
// it has none. A progress file that is not a regular file (a symlink, a folder) is refused.
func (f FS) ProgressModTime(id string, n int) (time.Time, error) {
	p, err := f.progressPath(id, n)
	if err != nil {
		return time.Time{}, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return time.Time{}, fmt.Errorf("stat progress file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return time.Time{}, fmt.Errorf("%s of attempt %d is not a regular file", mvp.ProgressFile, n)
	}
	return fi.ModTime(), nil
}

// ReadProgress returns at most max+1 bytes of the attempt's progress file (so that a caller sees it was larger
// than max) and its modification time. It never follows a symlink.
func (f FS) ReadProgress(id string, n int, max int) ([]byte, time.Time, error) {
	fh, fi, err := f.openAttemptFile(id, n, mvp.ProgressFile)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("open progress file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, int64(max)+1))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read progress file: %w", err)
	}
	return b, fi.ModTime(), nil
}

// syscallNoFollow makes an open fail on a symlink at the last segment.
const syscallNoFollow = syscall.O_NOFOLLOW

// CheckpointFolder is the name of a task's checkpoint folder inside its task folder (verl's trainer.default_local_dir).
const CheckpointFolder = "checkpoints"

// CheckpointTracker is the file in which verl records the step of its latest complete checkpoint
// (global_step_<step>/ beside it); its trainer's resume_mode=auto resumes from that step, or from step 0 without it.
const CheckpointTracker = "latest_checkpointed_iteration.txt"

// LatestCheckpoint returns the step verl's resume_mode=auto would resume from in the task's checkpoint folder, as
// verl's find_latest_ckpt_path finds it: the step its tracker file names, if that step's global_step_<step> folder
// exists; 0 when there is none (no folder, no tracker, a tracker that names no step or a missing folder). A tracker
// that is not a regular file (a named pipe the job made) is an error, read without waiting for a writer.
func (f FS) LatestCheckpoint(id string) (int, error) {
	root, err := f.openTask(id)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer root.Close()
	// The job writes this folder: a tracker it made a named pipe must not hold the open until some writer comes.
	fh, _, err := openRegular(root, filepath.Join(CheckpointFolder, CheckpointTracker), 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("the checkpoint tracker of %s: %w", id, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 64))
	if err != nil {
		return 0, err
	}
	step, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || step <= 0 {
		return 0, nil
	}
	fi, err := root.Stat(filepath.Join(CheckpointFolder, fmt.Sprintf("global_step_%d", step)))
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return step, nil
}
