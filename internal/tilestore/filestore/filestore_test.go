package filestore_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/filestore"
	"tilecache/internal/tilestore/storetest"
)

func newStore(tb testing.TB) *filestore.Store {
	tb.Helper()
	s, err := filestore.New(tb.TempDir())
	if err != nil {
		tb.Fatalf("New error: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	var opts []storetest.Option
	if !xattrs(t) {
		t.Log("the temporary directory's filesystem has no user extended attributes: the store knows no MD5 there")
		opts = append(opts, storetest.NoMD5)
	}
	storetest.Run(t, func(t *testing.T) tilestore.Store { return newStore(t) }, opts...)
}

// TestSync covers the fsync path, which the conformance suite (run without
// it, since fsync can be slow) does not.
func TestSync(t *testing.T) {
	s, err := filestore.NewWithOptions(t.TempDir(), filestore.Options{Sync: true})
	if err != nil {
		t.Fatalf("NewWithOptions error: %v", err)
	}
	const key = "l/EPSG:4326/png/default/0/0/0.png"
	for _, meta := range []tilestore.Meta{
		{ContentType: "image/png"},
		{ContentType: "image/png", CacheControl: "max-age=1"},
	} {
		data := []byte(meta.CacheControl + "data")
		mustPut(t, s, key, data, meta)
		got, gotMeta, found, err := s.Get(t.Context(), key)
		if err != nil || !found || !bytes.Equal(got, data) || gotMeta != meta {
			t.Errorf("Get(%q): got %q, %+v, found=%v, err=%v; want %q, %+v", key, got, gotMeta, found, err, data, meta)
		}
	}
}

func mustPut(tb testing.TB, s *filestore.Store, key string, data []byte, meta tilestore.Meta) {
	tb.Helper()
	if err := s.Put(tb.Context(), key, data, meta); err != nil {
		tb.Fatalf("Put(%q) error: %v", key, err)
	}
}

// files returns the slash-separated paths of all files and directories
// below root, hidden ones included, sorted.
func files(t *testing.T, root string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		got = append(got, rel)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	slices.Sort(got)
	return got
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		root    string
		wantErr bool
	}{
		{"existing directory", dir, false},
		{"missing directory is created", filepath.Join(dir, "x", "y"), false},
		{"empty root", "", true},
		{"root is a file", file, true},
		{"root below a file", filepath.Join(file, "x"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := filestore.New(tt.root)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("New(%q): got error %v, want error: %v", tt.root, err, tt.wantErr)
			}
			if err == nil && !filepath.IsAbs(s.Root()) {
				t.Errorf("Root(): got %q, want an absolute path", s.Root())
			}
		})
	}
}

func TestLayoutOnDisk(t *testing.T) {
	s := newStore(t)
	const key = "topp:states/EPSG:4326/png/default/3/5/2.png"
	data := []byte("\x89PNG\r\n\x1a\nnot really")
	mustPut(t, s, key, data, tilestore.Meta{ContentType: "image/png"})

	got, err := os.ReadFile(filepath.Join(s.Root(), filepath.FromSlash(key)))
	if err != nil {
		t.Fatalf("read object file: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("object file: got %q, want %q", got, data)
	}
	want := []string{
		"topp:states/",
		"topp:states/EPSG:4326/",
		"topp:states/EPSG:4326/png/",
		"topp:states/EPSG:4326/png/default/",
		"topp:states/EPSG:4326/png/default/3/",
		"topp:states/EPSG:4326/png/default/3/5/",
		"topp:states/EPSG:4326/png/default/3/5/2.png",
	}
	if got := files(t, s.Root()); !slices.Equal(got, want) {
		t.Errorf("files on disk: got %q, want %q (no sidecar, no temp file)", got, want)
	}
}

func TestKeysRejected(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	s, err := filestore.New(root)
	if err != nil {
		t.Fatalf("New error: %v", err)
	}
	if err := os.WriteFile(filepath.Join(parent, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := []string{
		"",
		"/etc/passwd",
		"/",
		"..",
		"../secret",
		"a/../../secret",
		"a/..",
		".",
		"./a",
		"a/./b",
		"a//b",
		"a/",
		`a\b`,
		`..\secret`,
		"a\x00b",
		"a/.b.png.meta",
		".hidden",
		"\xff.png",
		strings.Repeat("a", 201),
		strings.Repeat("a/", 513) + "a",
	}
	ctx := t.Context()
	for _, key := range keys {
		t.Run(strconv.Quote(key), func(t *testing.T) {
			if err := s.Put(ctx, key, []byte("x"), tilestore.Meta{ContentType: "image/png"}); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("Put(%q): got error %v, want kind %v", key, err, apperr.Invalid)
			}
			if _, _, _, err := s.Get(ctx, key); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("Get(%q): got error %v, want kind %v", key, err, apperr.Invalid)
			}
			if _, _, err := s.Stat(ctx, key); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("Stat(%q): got error %v, want kind %v", key, err, apperr.Invalid)
			}
			if _, err := s.Delete(ctx, []string{"ok.png", key}); !apperr.Is(err, apperr.Invalid) {
				t.Errorf("Delete(%q): got error %v, want kind %v", key, err, apperr.Invalid)
			}
		})
	}
	if got, want := files(t, parent), []string{"root/", "secret"}; !slices.Equal(got, want) {
		t.Errorf("files around the root: got %q, want %q", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(parent, "secret")); err != nil || string(b) != "s" {
		t.Errorf("file outside the root: got %q, %v; want it untouched", b, err)
	}
}

func TestListNeverEscapesRoot(t *testing.T) {
	parent := t.TempDir()
	s, err := filestore.New(filepath.Join(parent, "root"))
	if err != nil {
		t.Fatalf("New error: %v", err)
	}
	for _, p := range []string{"outside.png", "root2/x.png"} {
		full := filepath.Join(parent, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{"../", "../root2/", "..", "/", "./", "a/../../"} {
		var got []string
		err := s.List(t.Context(), prefix, func(o tilestore.Object) error {
			got = append(got, o.Key)
			return nil
		})
		if err != nil || len(got) != 0 {
			t.Errorf("List(%q): got %q, %v; want nothing, nil", prefix, got, err)
		}
	}
}

func TestSidecars(t *testing.T) {
	s := newStore(t)
	const key = "l/g/png/default/0/0/0.png"
	sidecar := "l/g/png/default/0/0/.0.png.meta"
	tests := []struct {
		name        string
		meta        tilestore.Meta
		wantSidecar bool
	}{
		{"default meta", tilestore.Meta{ContentType: "image/png"}, false},
		{"cache control", tilestore.Meta{ContentType: "image/png", CacheControl: "max-age=86400"}, true},
		{"back to default", tilestore.Meta{ContentType: "image/png"}, false},
		{"other content type", tilestore.Meta{ContentType: "image/png; mode=8bit"}, true},
		{"empty content type", tilestore.Meta{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustPut(t, s, key, []byte(tt.name), tt.meta)
			onDisk := files(t, s.Root())
			if got := slices.Contains(onDisk, sidecar); got != tt.wantSidecar {
				t.Errorf("sidecar %s on disk: got %v, want %v (files %q)", sidecar, got, tt.wantSidecar, onDisk)
			}
			_, meta, _, err := s.Get(t.Context(), key)
			if err != nil || meta != tt.meta {
				t.Errorf("Get meta: got %+v, %v; want %+v", meta, err, tt.meta)
			}
			var listed []string
			if err := s.List(t.Context(), "", func(o tilestore.Object) error {
				listed = append(listed, o.Key)
				return nil
			}); err != nil {
				t.Fatalf("List error: %v", err)
			}
			if !slices.Equal(listed, []string{key}) {
				t.Errorf("List: got %q, want only [%q]", listed, key)
			}
		})
	}
	if _, err := s.Delete(t.Context(), []string{key}); err != nil {
		t.Fatalf("Delete error: %v", err)
	}
	if got := files(t, s.Root()); len(got) != 0 {
		t.Errorf("files after Delete: got %q, want none (sidecar and directories removed)", got)
	}
}

func TestHiddenFilesNotListed(t *testing.T) {
	s := newStore(t)
	mustPut(t, s, "l/1.png", []byte("x"), tilestore.Meta{ContentType: "image/png"})
	// What a crash, or another tool, may leave behind.
	for _, p := range []string{"l/.1.png.tmp-abc-1", "l/.2.png.meta", ".DS_Store", "l/.git/config"} {
		full := filepath.Join(s.Root(), filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := s.List(t.Context(), "", func(o tilestore.Object) error {
		got = append(got, o.Key)
		return nil
	}); err != nil {
		t.Fatalf("List error: %v", err)
	}
	if want := []string{"l/1.png"}; !slices.Equal(got, want) {
		t.Errorf("List: got %q, want %q", got, want)
	}
}

func TestDeletePrunesEmptyDirectories(t *testing.T) {
	s := newStore(t)
	meta := tilestore.Meta{ContentType: "image/png"}
	for _, k := range []string{"a/b/c/1.png", "a/b/c/2.png", "a/x.png", "a/d/1.png"} {
		mustPut(t, s, k, []byte(k), meta)
	}
	steps := []struct {
		delete []string
		want   []string
	}{
		{[]string{"a/b/c/1.png"}, []string{"a/", "a/b/", "a/b/c/", "a/b/c/2.png", "a/d/", "a/d/1.png", "a/x.png"}},
		{[]string{"a/b/c/2.png", "a/d/1.png"}, []string{"a/", "a/x.png"}},
		{[]string{"a/x.png"}, nil},
	}
	for i, st := range steps {
		if _, err := s.Delete(t.Context(), st.delete); err != nil {
			t.Fatalf("step %d: Delete(%q) error: %v", i, st.delete, err)
		}
		if got := files(t, s.Root()); !slices.Equal(got, st.want) {
			t.Errorf("step %d: after Delete(%q): got files %q, want %q", i, st.delete, got, st.want)
		}
	}
	if _, err := os.Stat(s.Root()); err != nil {
		t.Errorf("root after deleting everything: %v, want it kept", err)
	}
}

// TestPutDeleteRace has writers create objects in directories that
// deleters keep emptying and pruning: Put must recreate what pruning
// removed under it, and never fail. Run it with -race.
func TestPutDeleteRace(t *testing.T) {
	s := newStore(t)
	meta := tilestore.Meta{ContentType: "image/png"}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				key := fmt.Sprintf("p/%d/a/b/%d-%d.png", i%2, w, i)
				if err := s.Put(t.Context(), key, []byte(key), meta); err != nil {
					t.Errorf("Put(%q) error: %v", key, err)
					return
				}
				n, err := s.Delete(t.Context(), []string{key})
				if err != nil || n != 1 {
					t.Errorf("Delete(%q): got %d, %v; want 1, nil", key, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := files(t, s.Root()); len(got) != 0 {
		t.Errorf("files after deleting everything: got %q, want none", got)
	}
}

func TestKeyConflicts(t *testing.T) {
	meta := tilestore.Meta{ContentType: "image/png"}
	tests := []struct {
		name        string
		first, then string
	}{
		{"object below an object", "a/b", "a/b/c.png"},
		{"object where a prefix is", "a/b/c.png", "a/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			mustPut(t, s, tt.first, []byte("first"), meta)
			err := s.Put(t.Context(), tt.then, []byte("then"), meta)
			if !apperr.Is(err, apperr.Conflict) {
				t.Errorf("Put(%q) after Put(%q): got error %v, want kind %v", tt.then, tt.first, err, apperr.Conflict)
			}
			data, _, found, err := s.Get(t.Context(), tt.first)
			if err != nil || !found || string(data) != "first" {
				t.Errorf("Get(%q): got %q, found=%v, err=%v; want the first object intact", tt.first, data, found, err)
			}
			if got := files(t, s.Root()); slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, ".tmp-") }) {
				t.Errorf("files after the failed Put: got %q, want no temp files left", got)
			}
		})
	}
}

func TestDefaultContentType(t *testing.T) {
	// A file copied into the tree from outside has no sidecar: its meta is
	// derived from its extension.
	tests := []struct{ key, want string }{
		{"l/0.png", "image/png"},
		{"l/0.jpeg", "image/jpeg"},
		{"l/0.jpg", "image/jpeg"},
		{"l/0.gif", "image/gif"},
		{"l/0.webp", "image/webp"},
		{"l/0.pbf", "application/vnd.mapbox-vector-tile"},
		{"l/0.tiff", "image/tiff"},
		{"l/0.json", "application/json"},
		{"l/0.bin", "application/octet-stream"},
		{"l/noext", "application/octet-stream"},
	}
	s := newStore(t)
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			full := filepath.Join(s.Root(), filepath.FromSlash(tt.key))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, meta, found, err := s.Get(t.Context(), tt.key)
			if err != nil || !found {
				t.Fatalf("Get(%q): got found=%v, err=%v", tt.key, found, err)
			}
			if want := (tilestore.Meta{ContentType: tt.want}); meta != want {
				t.Errorf("Get(%q) meta: got %+v, want %+v", tt.key, meta, want)
			}
		})
	}
}

func TestDeleteIgnoresDirectories(t *testing.T) {
	s := newStore(t)
	mustPut(t, s, "a/b/1.png", []byte("x"), tilestore.Meta{ContentType: "image/png"})
	if err := os.Mkdir(filepath.Join(s.Root(), "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := s.Delete(t.Context(), []string{"a/b", "a", "empty"})
	if err != nil || n != 0 {
		t.Errorf("Delete of directories: got %d, %v; want 0, nil", n, err)
	}
	if got, want := files(t, s.Root()), []string{"a/", "a/b/", "a/b/1.png", "empty/"}; !slices.Equal(got, want) {
		t.Errorf("files: got %q, want %q", got, want)
	}
}
