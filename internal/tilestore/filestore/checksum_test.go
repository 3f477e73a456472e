package filestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"tilecache/internal/tilestore"
)

// xattrs reports whether the filesystem of the test's temporary
// directories takes user extended attributes, where the store records
// MD5s.
func xattrs(t *testing.T) bool {
	t.Helper()
	p := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := unix.Setxattr(p, "user.probe", []byte("1"), 0)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
		return false
	}
	if err != nil {
		t.Fatalf("set an extended attribute: %v", err)
	}
	return true
}

// TestChecksumOnlyOfWhatPutWrote: the MD5 is reported for objects the
// store put, and is unknown ("") for a file put into the tree by hand and
// for one rewritten in place by another program, whose attribute no
// longer describes it: never the digest of other content.
func TestChecksumOnlyOfWhatPutWrote(t *testing.T) {
	if !xattrs(t) {
		t.Skip("the temporary directory's filesystem has no user extended attributes")
	}
	s := newStore(t)
	const (
		put      = "l/EPSG:4326/png/default/1/0/0.png"
		byHand   = "l/EPSG:4326/png/default/1/1/0.png"
		inPlace  = "l/EPSG:4326/png/default/1/2/0.png"
		touched  = "l/EPSG:4326/png/default/1/3/0.png"
		sameSize = "l/EPSG:4326/png/default/1/4/0.png"
	)
	data := []byte("tile bytes")
	for _, k := range []string{put, inPlace, touched, sameSize} {
		mustPut(t, s, k, data, tilestore.Meta{ContentType: "image/png"})
	}
	path := func(key string) string { return filepath.Join(s.Root(), filepath.FromSlash(key)) }
	if err := os.MkdirAll(filepath.Dir(path(byHand)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path(byHand), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Rewritten in place (O_TRUNC keeps the inode and its attributes).
	if err := os.WriteFile(path(inPlace), []byte("other bytes, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same bytes with a new time: unknown too (the store cannot tell).
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path(touched), later, later); err != nil {
		t.Fatal(err)
	}
	// Other bytes of the same size written in place, and a different time.
	f, err := os.OpenFile(path(sameSize), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("TILE"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path(sameSize), later.Add(time.Second), later.Add(time.Second)); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{put: tilestore.ContentMD5(data), byHand: "", inPlace: "", touched: "", sameSize: ""}
	for key, sum := range want {
		obj, found, err := s.Stat(t.Context(), key)
		if err != nil || !found {
			t.Fatalf("Stat(%q): found=%v, err=%v", key, found, err)
		}
		if obj.MD5 != sum {
			t.Errorf("Stat(%q).MD5: got %q, want %q", key, obj.MD5, sum)
		}
	}
	err = s.List(t.Context(), "l/", func(o tilestore.Object) error {
		if o.MD5 != want[o.Key] {
			t.Errorf("List: %s has MD5 %q, want %q", o.Key, o.MD5, want[o.Key])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A Put over any of them records the digest again.
	mustPut(t, s, inPlace, data, tilestore.Meta{ContentType: "image/png"})
	if obj, _, _ := s.Stat(t.Context(), inPlace); obj.MD5 != tilestore.ContentMD5(data) {
		t.Errorf("after a Put, Stat(%q).MD5: got %q, want %q", inPlace, obj.MD5, tilestore.ContentMD5(data))
	}
}
