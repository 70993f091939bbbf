package raycompat

import (
	"context"
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
	"unicode"

	"github.com/mvp2/mvp/internal/mvp"
)

// PackagePattern is the only package name the door keeps: what Ray 2.60's client makes of a local working_dir or
// py_modules folder (16 hex digits of its content hash), of a local archive (its 40-hex SHA-1, with the archive's
// .zip, .tar.gz or .tar.xz) and of a wheel (its file name). A name is checked against it before it becomes a
// path: one segment, no leading dot.
var PackagePattern = regexp.MustCompile(`^(_ray_pkg_[0-9a-f]{16,40}\.(zip|tar\.gz|tar\.xz)|[A-Za-z0-9][A-Za-z0-9_.+-]*\.whl)$`)

// PackageProtocol is the only protocol of the packages Ray's client uploads.
const PackageProtocol = "gcs"

// Packages keeps the runtime_env packages users upload through the door, one file per package under Dir
// (<shared_root>/ray_packages), so that a task still queued in mvp never depends on Ray's temporary reference:
// the package is uploaded to Ray right before each of the task's submissions (Uploader).
type Packages struct {
	Dir string
	// Mounted, when set, says whether shared_root is still the filesystem mvp started on (taskfs.FS.CheckMounted):
	// while it is not, nothing is kept or read, so that no package lands on an empty mount point, where no node
	// sees it and the share, mounted back, hides it.
	Mounted func() error
}

// mounted returns Mounted's refusal as a 503 that names shared_root, or nil.
func (p Packages) mounted() error {
	if p.Mounted == nil {
		return nil
	}
	if err := p.Mounted(); err != nil {
		return mvp.Errorf(mvp.CodeUnavailable, "", "mvp keeps Ray packages in %s on shared_root, which is not mounted now: %v", p.Dir, err)
	}
	return nil
}

// path returns the file of a package, or a CodeInvalid error for a protocol or name the door does not keep.
func (p Packages) path(protocol, name string) (string, error) {
	if protocol != PackageProtocol {
		return "", mvp.Errorf(mvp.CodeInvalid, "protocol", "package protocol %q is not kept by mvp; only %s:// packages are", clip(protocol), PackageProtocol)
	}
	if !PackagePattern.MatchString(name) {
		return "", mvp.Errorf(mvp.CodeInvalid, "package", "package name %q is not one Ray's client makes (_ray_pkg_<hex>.zip, .tar.gz or .tar.xz, or a wheel's file name)", clip(name))
	}
	return filepath.Join(p.Dir, name), nil
}

// Has reports whether the package is kept: a regular file of its name. A job can write on shared_root, so what
// it put there in the package's place (a symlink, to a file on mvp's host) is not a kept package: Ray's client
// then uploads it again, and Put's rename replaces the link itself.
func (p Packages) Has(protocol, name string) (bool, error) {
	path, err := p.path(protocol, name)
	if err != nil {
		return false, err
	}
	if err := p.mounted(); err != nil {
		return false, err
	}
	switch fi, err := os.Lstat(path); {
	case err == nil:
		return fi.Mode().IsRegular(), nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("look up package %s: %w", name, err)
	}
}

// Put keeps a package, atomically (a reader never sees half a file).
func (p Packages) Put(protocol, name string, data []byte) error {
	path, err := p.path(protocol, name)
	if err != nil {
		return err
	}
	if err := p.mounted(); err != nil {
		return err
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return fmt.Errorf("make the packages folder: %w", err)
	}
	tmp, err := os.CreateTemp(p.Dir, ".upload-*")
	if err != nil {
		return fmt.Errorf("keep package %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("keep package %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("keep package %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keep package %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("keep package %s: %w", name, err)
	}
	return nil
}

// Get returns a kept package; ok is false when the URI is not one the door keeps or it is not there.
func (p Packages) Get(uri string) (data []byte, ok bool, err error) {
	protocol, name, found := strings.Cut(uri, "://")
	if !found {
		return nil, false, nil
	}
	path, err := p.path(protocol, name)
	if err != nil {
		return nil, false, nil // not a package of the door's: passed on to Ray as it is
	}
	if err := p.mounted(); err != nil {
		return nil, false, fmt.Errorf("%w: %w", mvp.ErrSubmitInfra, err)
	}
	data, err = readRegular(path, MaxPackageBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: read the package kept at %s: %w (mvp must be able to read <shared_root>/ray_packages; v2.shared_root sets where it is)",
			mvp.ErrSubmitInfra, path, err)
	}
	return data, true, nil
}

// readRegular reads the file at path if it is a regular file of at most max bytes, never following a
// symlink at its name (a job can write on shared_root: a link there to a file on mvp's host, read and uploaded to
// Ray, would hand that file to every job of the cluster) and without blocking on a FIFO.
func readRegular(path string, max int64) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("it is a symbolic link, not a file mvp kept")
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("it is not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("it holds %d bytes, more than a package may (%d)", fi.Size(), max)
	}
	// The size read above may be passed by the time the file is read (a job writing it meanwhile): what is read is
	// checked again.
	data, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("it grew past the %d bytes a package may hold while it was read", max)
	}
	return data, nil
}

// Uploader is the Ray client the scheduler submits with: before each submission it uploads to Ray the packages
// the job's runtime_env names (working_dir, py_modules) that the door keeps, so a task queued for hours finds its
// package in Ray whatever Ray did with the user's original upload. Every other call goes straight to Ray.
type Uploader struct {
	mvp.RayClient
	Packages Packages
}

// SubmitJob uploads the job's kept packages, then submits it. A failed upload is returned as it is (Ray
// unavailable: the loop looks again; refused: the submission is refused).
func (u Uploader) SubmitJob(ctx context.Context, s *mvp.JobSubmission) error {
	for _, uri := range packageURIs(s.RuntimeEnv) {
		data, ok, err := u.Packages.Get(uri)
		if err != nil {
			return fmt.Errorf("submit job %s: %w", s.SubmissionID, err)
		}
		if !ok {
			continue
		}
		if err := u.RayClient.UploadPackage(ctx, uri, data); err != nil {
			return fmt.Errorf("submit job %s: %w", s.SubmissionID, err)
		}
	}
	return u.RayClient.SubmitJob(ctx, s)
}

// packageURIs lists the package URIs of a runtime_env: working_dir and every py_modules entry that is a string.
func packageURIs(env map[string]any) []string {
	var out []string
	if wd, ok := env["working_dir"].(string); ok {
		out = append(out, wd)
	}
	if mods, ok := env["py_modules"].([]any); ok {
		for _, m := range mods {
			if s, ok := m.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// clip shortens user text echoed in an error.
func clip(s string) string { return mvp.Clip(s, 80) }

// shown is user text echoed bare in an error (as Ray words it, "Job <id> does not exist"): clipped, and quoted
// with its control characters escaped when it holds any, so that an id from a URL (%1b[…m, %0a) puts no terminal
// escape or forged line into the answer or a log that shows it.
func shown(s string) string {
	s = clip(s)
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}
