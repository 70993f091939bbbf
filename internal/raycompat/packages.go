package raycompat

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/mvp2/mvp/internal/mvp"
)

// PackagePattern is the only package name the door keeps: what Ray 2.60's client makes of a local working_dir or
// py_modules folder (16 hex digits of its content hash), of a local archive (its 40-hex SHA-1, with the archive's
// .zip, .tar.gz or .tar.xz) and of a wheel (its file name). A name is checked against it before it becomes a
// path: one segment, no leading dot.
var PackagePattern = regexp.MustCompile(`^(_ray_pkg_[0-9a-f]{16,40}\.(zip|tar\.gz|tar\.xz)|[A-Za-z0-9][A-Za-z0-9_.+-]*\.whl)$`)

// maxPackageName is the longest package name kept: NAME_MAX, as a package is kept in a file of its name.
const maxPackageName = 255

// PackageProtocol is the only protocol of the packages Ray's client uploads.
const PackageProtocol = "gcs"

// Packages keeps the runtime_env packages users upload through the door, one file per package under Dir
// (<shared_root>/ray_packages), so that a task still queued in mvp never depends on Ray's temporary reference:
// the package is uploaded to Ray right before each of the task's submissions (Uploader).
//
// Every job can write on shared_root, so a job could replace a kept package with code of its own, which the next
// submission of another user's task would then run. With Key set, each package is kept sealed: its file holds a
// first line (sealMagic), the seal (an HMAC of its name and bytes under the database's key, which no job knows) on
// the second, then the package's bytes; one file, written by one rename, so that no reader ever sees a package
// with another upload's seal. A file whose seal does not match is not mvp's: Has says the package is not kept
// (Ray's client uploads it again) and Get refuses it.
type Packages struct {
	Dir string
	// Key seals the packages kept (the database's instance key); nil keeps them as raw files (tests).
	Key []byte
	// Mounted, when set, says whether shared_root is still the filesystem mvp started on (taskfs.FS.CheckMounted):
	// while it is not, nothing is kept or read, so that no package lands on an empty mount point, where no node
	// sees it and the share, mounted back, hides it.
	Mounted func() error
	// Guard, when set, orders Prune against the door's use of the packages: a package that Has just said is kept,
	// or that Put just kept, is never pruned under it. It must be set (one for all copies of Packages) wherever
	// Prune runs.
	Guard *sync.RWMutex
}

// use holds Guard for reading (a check and its touch, an upload's rename) and returns what releases it.
func (p Packages) use() func() {
	if p.Guard == nil {
		return func() {}
	}
	p.Guard.RLock()
	return p.Guard.RUnlock
}

// touch records that the package at path was just used (a client asked whether mvp keeps it, mvp uploaded it to
// Ray for a submission, a submission named it): Prune keeps what was used within its retention. The file's times
// are set through a descriptor opened without following a symlink at its name (a job can write on shared_root:
// what it put in a package's place is not touched, and no file elsewhere is).
func touch(path string) error {
	fh, err := openRegular(path, math.MaxInt64)
	if err != nil {
		return err
	}
	defer fh.Close()
	return touchFile(fh)
}

// touchFile sets the times of an open package file to now.
func touchFile(fh *os.File) error {
	now := syscall.NsecToTimeval(time.Now().UnixNano())
	return syscall.Futimes(int(fh.Fd()), []syscall.Timeval{now, now})
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
	if len(name) > maxPackageName {
		// A wheel's name is its file's, which no disk holds longer; nor can mvp keep it (the rename fails).
		return "", mvp.Errorf(mvp.CodeInvalid, "package", "package name %q is %d bytes long; a file name (a wheel's) is at most %d", clip(name), len(name), maxPackageName)
	}
	if !PackagePattern.MatchString(name) {
		return "", mvp.Errorf(mvp.CodeInvalid, "package", "package name %q is not one Ray's client makes (_ray_pkg_<hex>.zip, .tar.gz or .tar.xz, or a wheel's file name)", clip(name))
	}
	return filepath.Join(p.Dir, name), nil
}

// WheelReference is how long after its upload (not a check, nor a submission naming it) a wheel counts as
// kept when no task still to run names it: Ray's own temporary reference to an upload (600 s). A wheel's package
// name is its file name, not a hash of its bytes, so one rebuilt under the same version has the same name; Ray
// keeps a package only while a job or that reference holds it, after which its client uploads the rebuilt
// wheel. The door kept it for v2.ray.package_retention_s after its last check, and each check renewed that: a
// rebuilt wheel was never uploaded again and every later job ran the old one (renewed by each check within 600 s,
// the same held for a user who submits every few minutes).
const WheelReference = 600 * time.Second

// isWheel reports whether a package name is a wheel's (its file name: not content-addressed, see WheelReference).
func isWheel(name string) bool { return strings.HasSuffix(name, ".whl") }

// WheelMargin is how long before WheelReference's end a wheel no task names stops being said kept: Prune may
// delete it once unused for package_retention_s (at least WheelReference), and a client that was told it is kept
// submits a moment later; the margin keeps that moment clear of the prune.
const WheelMargin = time.Minute

// Has reports whether the package is kept: a regular file of its name that carries its seal. A job can write on
// shared_root, so what it put there in the package's place (a symlink to a file on mvp's host, bytes of its own, a
// file too large or unreadable) is not a kept package: Ray's client then uploads it again, and Put's rename
// replaces it. A wheel uploaded more than WheelReference-WheelMargin ago counts as kept only while named reports that a task
// still to run names it (nil: none does), as Ray keeps it (WheelReference). Only a shared_root that is not
// mounted, or named's error, is an error.
func (p Packages) Has(protocol, name string, named func() (bool, error)) (bool, error) {
	path, err := p.path(protocol, name)
	if err != nil {
		return false, err
	}
	if err := p.mounted(); err != nil {
		return false, err
	}
	defer p.use()()
	fh, err := openRegular(path, p.maxFile())
	if err != nil {
		return false, nil
	}
	defer fh.Close()
	if p.check(name, fh, p.maxFile()) != nil {
		return false, nil
	}
	if isWheel(name) {
		info, err := fh.Stat()
		if err != nil {
			return false, nil
		}
		if time.Since(info.ModTime()) > WheelReference-WheelMargin {
			kept := false
			if named != nil {
				if kept, err = named(); err != nil {
					return false, err
				}
			}
			if !kept {
				return false, nil // the client uploads it, rebuilt or not, and Put replaces it
			}
		}
	}
	if isWheel(name) {
		// Not renewed by a check: Ray's reference counts from the upload, and a check before every submission
		// would keep a rebuilt wheel of the same name from ever being uploaded again. Prune keeps it while a task
		// names it, and for at least WheelReference after the upload.
		return true, nil
	}
	// The client will not upload it now: it must stay until its job is submitted. A package mvp cannot mark so
	// is said not to be kept, and the client uploads it again.
	if touchFile(fh) != nil {
		return false, nil
	}
	return true, nil
}

// check streams a kept package's file through its seal's HMAC (Has: a package may be MaxPackageBytes, and Ray's
// client asks for it before each upload, so the file is never read whole) and returns why it is not package name
// as mvp kept it, or nil. Like readRegular, it reads at most max bytes and refuses a file that holds more.
func (p Packages) check(name string, r io.Reader, max int64) error {
	if len(p.Key) == 0 {
		n, err := io.Copy(io.Discard, io.LimitReader(r, max+1))
		if err != nil {
			return fmt.Errorf("read it: %w", err)
		}
		if n > max {
			return grewPast(max)
		}
		return nil
	}
	head := make([]byte, len(sealMagic)+sealLen+1)
	got, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read its seal: %w", err)
	}
	seal, err := sealOf(head[:got])
	if err != nil {
		return err
	}
	m := p.mac(name)
	rest := max - int64(len(head))
	n, err := io.Copy(m, io.LimitReader(r, rest+1))
	if err != nil {
		return fmt.Errorf("read it: %w", err)
	}
	if n > rest {
		return grewPast(max)
	}
	if !hmac.Equal(seal, []byte(hex.EncodeToString(m.Sum(nil)))) {
		return errChanged
	}
	return nil
}

// sealMagic is the first line of a sealed package's file; the seal (hex) is the second.
const sealMagic = "mvp sealed ray package v1\n"

// sealLen is the length of a seal in hex.
const sealLen = 2 * sha256.Size

// maxFile is the largest file a kept package may be: MaxPackageBytes, and its seal's lines when sealed.
func (p Packages) maxFile() int64 {
	if len(p.Key) == 0 {
		return MaxPackageBytes
	}
	return MaxPackageBytes + int64(len(sealMagic)+sealLen+1)
}

// mac is the HMAC-SHA256 under p.Key of package name, to which its bytes are then written: its sum, in hex, is
// the package's seal.
func (p Packages) mac(name string) hash.Hash {
	m := hmac.New(sha256.New, p.Key)
	fmt.Fprintf(m, "mvp ray package v1\x00%s\x00", name)
	return m
}

// seal is the seal of package name holding data: the hex HMAC-SHA256 of both under p.Key.
func (p Packages) seal(name string, data []byte) string {
	m := p.mac(name)
	m.Write(data)
	return hex.EncodeToString(m.Sum(nil))
}

// sealed is the file that keeps package name holding data (data itself without a key).
func (p Packages) sealed(name string, data []byte) []byte {
	return append(p.sealHeader(name, data), data...)
}

// sealHeader is what a sealed package's file holds before the package's bytes: the magic line and the seal's
// (nothing without a key). It is written before data rather than joined to it: a package may be 100 MiB.
func (p Packages) sealHeader(name string, data []byte) []byte {
	if len(p.Key) == 0 {
		return nil
	}
	out := make([]byte, 0, len(sealMagic)+sealLen+1)
	out = append(out, sealMagic...)
	out = append(out, p.seal(name, data)...)
	return append(out, '\n')
}

// open returns the package's bytes from its file, or why the file is not package name as mvp kept it.
func (p Packages) open(name string, file []byte) ([]byte, error) {
	if len(p.Key) == 0 {
		return file, nil
	}
	seal, err := sealOf(file)
	if err != nil {
		return nil, err
	}
	data := file[len(sealMagic)+sealLen+1:]
	if !hmac.Equal(seal, []byte(p.seal(name, data))) {
		return nil, errChanged
	}
	return data, nil
}

// errChanged is why a file whose bytes do not match its seal is not the package mvp kept.
var errChanged = errors.New("it is not what was uploaded through mvp: it was changed on shared_root since (a job can write there)")

// sealOf returns the seal (hex) that heads a sealed package's file, given the file's first bytes (its first two
// lines, or all of it when it is shorter), or why the file carries none.
func sealOf(head []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(head, []byte(sealMagic))
	if !ok {
		return nil, errors.New("it carries no seal of mvp's: it was not kept by this mvp (an mvp before packages were " +
			"sealed, or another program, wrote it)")
	}
	if len(rest) < sealLen+1 || rest[sealLen] != '\n' {
		return nil, errors.New("its seal is damaged")
	}
	return rest[:sealLen], nil
}

// SealUnsealed seals every package kept in a file without a seal and returns how many it sealed: on an upgrade,
// the packages an mvp before sealing kept, so that the door tasks queued across it still run (trusted once, as
// they are then). Only the first start of a database made before sealing calls it (sqlite's PackagesSealed), or a
// job could have a file of its own sealed by removing a seal and waiting for a restart. A file that already
// begins like a sealed one is left as it is: sealed by mvp, or written by a job (then refused).
func (p Packages) SealUnsealed() (int, error) {
	if len(p.Key) == 0 {
		return 0, nil
	}
	root, err := p.openDir()
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("seal the kept packages: %w", err)
	}
	defer root.Close()
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		return 0, fmt.Errorf("seal the kept packages: %w", err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !PackagePattern.MatchString(name) || !e.Type().IsRegular() {
			continue
		}
		data, err := readRegular(filepath.Join(p.Dir, name), MaxPackageBytes)
		if err != nil || bytes.HasPrefix(data, []byte(sealMagic)) {
			continue // not a package mvp can keep (never uploaded: Has says it is not kept), or sealed
		}
		if err := p.writeAtomic(root, name, p.sealHeader(name, data), data); err != nil {
			return n, fmt.Errorf("seal the kept package %s: %w", name, err)
		}
		n++
	}
	return n, nil
}

// Put keeps a package, sealed, atomically (a reader never sees half a file, or a package with another's seal).
func (p Packages) Put(protocol, name string, data []byte) error {
	if _, err := p.path(protocol, name); err != nil {
		return err
	}
	if err := p.mounted(); err != nil {
		return err
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return fmt.Errorf("make the packages folder: %w", err)
	}
	root, err := p.openDir()
	if err != nil {
		return fmt.Errorf("keep package %s: %w", name, err)
	}
	defer root.Close()
	if err := p.writeAtomic(root, name, p.sealHeader(name, data), data); err != nil {
		return fmt.Errorf("keep package %s: %w", name, err)
	}
	return nil
}

// openDir opens the packages folder as an os.Root, refusing it when it is not a folder of its own (a job can
// write on shared_root: a symlink in its place would have uploads written, and files pruned, wherever it points
// on mvp's host). It returns fs.ErrNotExist, wrapped, when there is no folder.
func (p Packages) openDir() (*os.Root, error) {
	dirInfo, err := os.Lstat(p.Dir)
	if err != nil {
		return nil, err
	}
	if !dirInfo.IsDir() {
		return nil, fmt.Errorf("%s is not a folder (%s); mvp does not follow it: remove it, and mvp makes the folder again", p.Dir, dirInfo.Mode().Type())
	}
	root, err := os.OpenRoot(p.Dir)
	if err != nil {
		return nil, err
	}
	if opened, err := root.Stat("."); err != nil || !os.SameFile(dirInfo, opened) {
		root.Close()
		return nil, fmt.Errorf("%s changed while it was opened; try again", p.Dir)
	}
	return root, nil
}

// uploadPrefix begins the name of a package's file while it is being written.
const uploadPrefix = ".upload-"

// writeAtomic writes the file name in root holding parts one after the other, atomically (a reader never sees
// half a file; a symlink in its place is replaced, not followed).
func (p Packages) writeAtomic(root *os.Root, name string, parts ...[]byte) error {
	var tmp *os.File
	var tmpName string
	for try := 0; ; try++ {
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		tmpName = uploadPrefix + hex.EncodeToString(rnd[:])
		f, err := root.OpenFile(tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			tmp = f
			break
		}
		if !errors.Is(err, fs.ErrExist) || try == 9 {
			return err
		}
	}
	defer root.Remove(tmpName)
	for _, data := range parts {
		if _, err := tmp.Write(data); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	defer p.use()() // a package kept now is not pruned under its upload
	return root.Rename(tmpName, name)
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
	defer p.use()()
	file, err := readRegular(path, p.maxFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: read the package kept at %s: %w (mvp must be able to read <shared_root>/ray_packages; shared_root in dev.yaml sets where it is)",
			mvp.ErrSubmitInfra, path, err)
	}
	if data, err = p.open(name, file); err != nil {
		return nil, false, fmt.Errorf("%w: the package kept at %s is refused: %w; submit the job again with Ray's "+
			"client, which uploads the package again", mvp.ErrSubmitInfra, path, err)
	}
	if !isWheel(name) { // a wheel's use counts from its upload (WheelReference)
		_ = touch(path) // best effort: this submission has the bytes; a retry after a prune finds none (documented)
	}
	return data, true, nil
}

// Prune deletes the kept packages last used (kept, asked for by a client, named by a submission, or uploaded to
// Ray for one; a wheel: uploaded, WheelReference) before cutoff that inUse does not name, and the files of uploads left half-written (mvp stopped
// during one) older than cutoff. It returns how many packages it deleted and their bytes, and the files it could
// not delete (it goes on past them). Only the folder itself is read, through an os.Root (a job can write on
// shared_root: a symlink in the folder's place is refused, and one in a package's place is deleted, never
// followed); only files of a package's name or an upload's are deleted; nothing while shared_root is not mounted.
func (p Packages) Prune(ctx context.Context, cutoff time.Time, inUse map[string]bool) (n int, bytes int64, err error) {
	if err := p.mounted(); err != nil {
		return 0, 0, err
	}
	root, err := p.openDir()
	if errors.Is(err, fs.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("prune Ray packages: %w", err)
	}
	defer root.Close()
	dir, err := root.Open(".")
	if err != nil {
		return 0, 0, fmt.Errorf("prune Ray packages: %w", err)
	}
	entries, err := dir.ReadDir(-1)
	dir.Close()
	if err != nil {
		return 0, 0, fmt.Errorf("prune Ray packages: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		name := e.Name()
		upload := strings.HasPrefix(name, uploadPrefix)
		if !upload && (!PackagePattern.MatchString(name) || inUse[name]) {
			continue
		}
		// Read without Guard: only a stale file is looked at again under it, so a pass takes Guard once per file
		// it may delete, not once per package.
		if info, err := e.Info(); err != nil || info.IsDir() || !info.ModTime().Before(cutoff) {
			continue
		}
		size, removed, err := p.pruneOne(root, name, cutoff)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if removed && !upload {
			n++
			bytes += size
		}
	}
	if len(errs) > 0 {
		return n, bytes, fmt.Errorf("prune Ray packages in %s: %w", p.Dir, errors.Join(errs...))
	}
	return n, bytes, nil
}

// pruneOne deletes the file name in root if it is not a folder and was last modified before cutoff, under Guard,
// so that no Has, Get, Used or Put's rename is between its reading and its deletion.
func (p Packages) pruneOne(root *os.Root, name string, cutoff time.Time) (size int64, removed bool, err error) {
	if p.Guard != nil {
		p.Guard.Lock()
		defer p.Guard.Unlock()
	}
	fi, err := root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if fi.IsDir() || !fi.ModTime().Before(cutoff) {
		return 0, false, nil
	}
	if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, false, err
	}
	return fi.Size(), true, nil
}

// Used records that a submission names these URIs: each package the door keeps among them (a wheel aside) is touched, so that
// Prune, which reads the tasks still to run before it deletes, does not delete it under a task being made (a
// client may name a package it uploaded days ago without asking for it again).
func (p Packages) Used(uris []string) {
	if len(uris) == 0 || p.mounted() != nil {
		return
	}
	for _, uri := range uris {
		protocol, name, ok := strings.Cut(uri, "://")
		if !ok {
			continue
		}
		path, err := p.path(protocol, name)
		if err != nil || isWheel(name) {
			// A wheel's use counts from its upload (WheelReference): Ray's client checks before it names one, and
			// uploads it again when it is not said kept, so one named here was uploaded within 600 s or is named
			// by a task still to run, which Prune keeps.
			continue
		}
		func() {
			defer p.use()()
			_ = touch(path) // a package not kept (or not touched) is passed to Ray as named, as before
		}()
	}
}

// PackagesInUse names the packages the door keeps that these effective specs of Ray-door tasks name (their
// runtime_env's working_dir and py_modules): each such task's are uploaded to Ray again before each of its attempts.
func PackagesInUse(specs []json.RawMessage) map[string]bool {
	in := map[string]bool{}
	for _, spec := range specs {
		var req mvp.RayJobRequest
		if json.Unmarshal(spec, &req) != nil {
			continue
		}
		for _, uri := range packageURIs(req.RuntimeEnv) {
			if protocol, name, ok := strings.Cut(uri, "://"); ok && protocol == PackageProtocol {
				in[name] = true
			}
		}
	}
	return in
}

// readRegular reads the file at path if it is a regular file of at most max bytes, never following a
// symlink at its name (a job can write on shared_root: a link there to a file on mvp's host, read and uploaded to
// Ray, would hand that file to every job of the cluster) and without blocking on a FIFO.
func readRegular(path string, max int64) ([]byte, error) {
	fh, err := openRegular(path, max)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	// The size read when it was opened may be passed by the time the file is read (a job writing it meanwhile):
	// what is read is checked again.
	data, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, grewPast(max)
	}
	return data, nil
}

// grewPast is the error of a package file found to hold more than max bytes as it was read, when it held at most
// max as it was opened (a job writing it meanwhile).
func grewPast(max int64) error {
	return fmt.Errorf("it grew past the %d bytes a package may hold while it was read", max)
}

// openRegular opens the file at path if it is a regular file of at most max bytes when opened, as readRegular
// reads it (no symlink followed, no FIFO blocked on); a reader of it must still stop at max bytes.
func openRegular(path string, max int64) (*os.File, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("it is a symbolic link, not a file mvp kept")
	}
	if err != nil {
		return nil, err
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		fh.Close()
		return nil, fmt.Errorf("it is not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > max {
		fh.Close()
		return nil, fmt.Errorf("it holds %d bytes, more than a package may (%d)", fi.Size(), max)
	}
	return fh, nil
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
