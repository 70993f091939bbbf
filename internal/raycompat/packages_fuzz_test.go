package raycompat

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mvp2/mvp/internal/mvp"
)

// FuzzPackageFile stands for a job that writes on shared_root: a package is kept through the door (Put), then its
// file is replaced with bytes of the job's. What Put kept reads back as it was put; Has and Get agree on the file
// the job wrote, and what they take is a file mvp sealed for the bytes Get returns (no file of a job's passes
// without the key).
func FuzzPackageFile(f *testing.F) {
	key := bytes.Repeat([]byte{9}, 32)
	p := Packages{Dir: f.TempDir(), Key: key}
	for _, c := range []struct{ name, data, file string }{
		{"_ray_pkg_0123456789abcdef.zip", "PK\x03\x04zip", ""},
		{"_ray_pkg_0123456789abcdef0123456789abcdef01234567.tar.gz", "tar", sealMagic},
		{"my_pkg-1.0-py3-none-any.whl", "wheel", sealMagic + "00\n"},
		{"_ray_pkg_0123456789abcdef.zip", "x", "plain bytes of a job"},
		{"../x.zip", "x", ""}, {".hidden.whl", "x", ""},
	} {
		f.Add(c.name, []byte(c.data), []byte(c.file))
	}
	// A file sealed for other bytes, and one sealed under another name.
	f.Add("_ray_pkg_0123456789abcdef.zip", []byte("a"), p.sealed("_ray_pkg_0123456789abcdef.zip", []byte("b")))
	f.Add("_ray_pkg_0123456789abcdef.zip", []byte("a"), p.sealed("_ray_pkg_fedcba9876543210.zip", []byte("a")))
	f.Fuzz(func(t *testing.T, name string, data, file []byte) {
		if err := p.Put(PackageProtocol, name, data); err != nil {
			if mvp.ErrorCode(err) != mvp.CodeInvalid {
				t.Fatalf("Put(%q): %v", name, err)
			}
			return
		}
		got, ok, err := p.Get(PackageProtocol + "://" + name)
		if err != nil || !ok || !bytes.Equal(got, data) {
			t.Fatalf("Put(%q) then Get: %q %v %v", name, got, ok, err)
		}
		if has, err := p.Has(PackageProtocol, name, nil); !has || err != nil {
			t.Fatalf("Put(%q) then Has: %v %v", name, has, err)
		}
		if err := os.WriteFile(filepath.Join(p.Dir, name), file, 0o644); err != nil {
			t.Fatal(err)
		}
		has, err := p.Has(PackageProtocol, name, nil)
		if err != nil {
			t.Fatalf("Has(%q): %v", name, err)
		}
		got, ok, _ = p.Get(PackageProtocol + "://" + name)
		if has != ok {
			t.Fatalf("a job's file %q: Has says %v, Get %v", file, has, ok)
		}
		if ok && !bytes.Equal(file, p.sealed(name, got)) {
			t.Fatalf("a job's file %q taken as package %q", file, got)
		}
	})
}
