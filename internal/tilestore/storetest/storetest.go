// Package storetest is the conformance suite for tilestore.Store adapters,
// in the style of go-cloud's blob/drivertest: every adapter's tests call Run
// with a factory, and the embedded filestore and the S3 adapter are held to
// exactly the same contract.
//
// The suite tests only behaviour the tilestore port documents. Some choices
// keep it portable:
//   - no two keys it stores are an object and a key below it ("a/b" and
//     "a/b/c"), which S3 allows but a directory tree cannot hold;
//   - every Put carries a non-empty ContentType (S3 substitutes its own
//     default for an empty one);
//   - Delete's count is accepted as either the number of keys that existed
//     or len(keys), as the port allows;
//   - every method is expected to return an error satisfying
//     errors.Is(err, context.Canceled) for a cancelled context, List
//     included (adapters must wrap with %w).
//
// What a backend cannot do it declares with an Option (NoMD5), and the
// suite then checks that it says so, rather than skipping the test.
//
// Subtests run one after another, and each gets a fresh, empty store from
// newStore, called with the subtest's *testing.T (use t.TempDir, or a
// unique key prefix plus t.Cleanup).
package storetest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	"tilecache/internal/tilestore"
)

// Option declares a documented limit of a backend (or of where its test
// runs).
type Option int

const (
	// NoMD5: List and Stat report no MD5 (Object.MD5 is "" for every
	// object), which the port allows; the suite checks exactly that.
	NoMD5 Option = iota + 1
)

// Run runs the conformance suite against the stores newStore makes.
func Run(t *testing.T, newStore func(t *testing.T) tilestore.Store, opts ...Option) {
	t.Helper()
	md5Known := !slices.Contains(opts, NoMD5)
	tests := []struct {
		name string
		run  func(t *testing.T, newStore func(t *testing.T) tilestore.Store)
	}{
		{"PutGet", testPutGet},
		{"Overwrite", testOverwrite},
		{"Absent", testAbsent},
		{"Stat", testStat},
		{"Delete", testDelete},
		{"DeleteBatch", testDeleteBatch},
		{"List", testList},
		{"ListStops", testListStops},
		{"ListAfter", testListAfter},
		{"ContextCanceled", testContextCanceled},
		{"ConcurrentPutGet", testConcurrentPutGet},
		{"Upload", testUpload},
		{"Checksum", func(t *testing.T, newStore func(t *testing.T) tilestore.Store) { testChecksum(t, newStore, md5Known) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore) })
	}
}

// randomBytes returns n deterministic pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails
	return b
}

func allByteValues() []byte {
	b := make([]byte, 0, 4*256)
	for range 4 {
		for c := range 256 {
			b = append(b, byte(c))
		}
	}
	return b
}

// mustPut stores an object or fails the test.
func mustPut(tb testing.TB, s tilestore.Store, key string, data []byte, meta tilestore.Meta) {
	tb.Helper()
	if err := s.Put(tb.Context(), key, data, meta); err != nil {
		tb.Fatalf("Put(%q) error: %v", key, err)
	}
}

// mustList returns the objects List reports for prefix.
func mustList(t *testing.T, s tilestore.Store, prefix string) []tilestore.Object {
	t.Helper()
	var got []tilestore.Object
	err := s.List(t.Context(), prefix, func(o tilestore.Object) error {
		got = append(got, o)
		return nil
	})
	if err != nil {
		t.Fatalf("List(%q) error: %v", prefix, err)
	}
	return got
}

func keysOf(objs []tilestore.Object) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

// checkGet asserts that key holds exactly data and meta.
func checkGet(t *testing.T, s tilestore.Store, key string, data []byte, meta tilestore.Meta) {
	t.Helper()
	got, gotMeta, found, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q) error: %v", key, err)
	}
	if !found {
		t.Fatalf("Get(%q): got found=false, want true", key)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("Get(%q): got %d bytes %s, want %d bytes %s", key, len(got), head(got), len(data), head(data))
	}
	if gotMeta != meta {
		t.Errorf("Get(%q): got meta %+v, want %+v", key, gotMeta, meta)
	}
}

// checkAbsent asserts that Get and Stat report key as absent without error.
func checkAbsent(t *testing.T, s tilestore.Store, key string) {
	t.Helper()
	data, _, found, err := s.Get(t.Context(), key)
	if err != nil || found {
		t.Errorf("Get(%q): got found=%v (%d bytes), err=%v; want found=false, err=nil", key, found, len(data), err)
	}
	obj, found, err := s.Stat(t.Context(), key)
	if err != nil || found {
		t.Errorf("Stat(%q): got %+v, found=%v, err=%v; want found=false, err=nil", key, obj, found, err)
	}
}

func head(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("%x…", b[:16])
	}
	return fmt.Sprintf("%x", b)
}

func testPutGet(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	tests := []struct {
		name string
		key  string
		data []byte
		meta tilestore.Meta
	}{
		{"geowebcache key", "topp:states/EPSG:4326/png/default/3/5/2.png", randomBytes(3000, 1), tilestore.Meta{ContentType: "image/png"}},
		{"cache control", "layer/EPSG:900913/jpeg/default/12/2048/1365.jpeg", randomBytes(500, 2), tilestore.Meta{ContentType: "image/jpeg", CacheControl: "public, max-age=3600"}},
		{"empty content", "empty/0/0/0.png", []byte{}, tilestore.Meta{ContentType: "image/png", CacheControl: "no-cache"}},
		{"every byte value", "bin/all.bin", allByteValues(), tilestore.Meta{ContentType: "application/octet-stream"}},
		{"one MiB", "big/0/0/0.png", randomBytes(1<<20, 3), tilestore.Meta{ContentType: "image/png", CacheControl: "max-age=60"}},
		{"content type unrelated to extension", "odd/1.png", []byte("GIF89a"), tilestore.Meta{ContentType: "image/gif"}},
		{"content type with parameter", "png8/EPSG:4326/png8/default/0/0/0.png", randomBytes(100, 4), tilestore.Meta{ContentType: "image/png; mode=8bit"}},
		{"no extension", "topp:states/metadata", []byte("a=b\n"), tilestore.Meta{ContentType: "text/plain"}},
		{"parameters id key", "topp:states/EPSG:4326/png/0123456789abcdef0123456789abcdef01234567/0/0/0.png", randomBytes(10, 5), tilestore.Meta{ContentType: "image/png"}},
		{"top level key", "top.png", randomBytes(10, 6), tilestore.Meta{ContentType: "image/png"}},
		// A gzip-compressed vector tile keeps its Content-Encoding, and its
		// bytes come back compressed, as they were put.
		{"content encoding", "roads/EPSG:900913/mapbox-vectortile/default/3/2/5.pbf", gzipped(randomBytes(4000, 7)), tilestore.Meta{ContentType: "application/vnd.mapbox-vector-tile", ContentEncoding: "gzip"}},
		{"content encoding, default content type", "roads/EPSG:900913/mapbox-vectortile/default/3/2/6.pbf", gzipped([]byte("x")), tilestore.Meta{ContentType: "application/vnd.mapbox-vector-tile", ContentEncoding: "gzip", CacheControl: "max-age=60"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			mustPut(t, s, tt.key, tt.data, tt.meta)
			checkGet(t, s, tt.key, tt.data, tt.meta)
			obj, found, err := s.Stat(t.Context(), tt.key)
			if err != nil || !found {
				t.Fatalf("Stat(%q): got found=%v, err=%v; want found=true, err=nil", tt.key, found, err)
			}
			if obj.Size != int64(len(tt.data)) {
				t.Errorf("Stat(%q).Size: got %d, want %d", tt.key, obj.Size, len(tt.data))
			}
		})
	}
}

func testOverwrite(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	s := newStore(t)
	const key = "topp:states/EPSG:4326/png/default/1/0/0.png"
	versions := []struct {
		data []byte
		meta tilestore.Meta
	}{
		{randomBytes(2000, 10), tilestore.Meta{ContentType: "image/png", CacheControl: "max-age=60"}},
		{randomBytes(10, 11), tilestore.Meta{ContentType: "image/png"}}, // shorter, Cache-Control dropped
		{randomBytes(5000, 12), tilestore.Meta{ContentType: "image/jpeg", CacheControl: "no-store"}},
		{[]byte{}, tilestore.Meta{ContentType: "image/png"}},
	}
	for i, v := range versions {
		mustPut(t, s, key, v.data, v.meta)
		checkGet(t, s, key, v.data, v.meta)
		obj, found, err := s.Stat(t.Context(), key)
		if err != nil || !found || obj.Size != int64(len(v.data)) {
			t.Errorf("version %d: Stat(%q): got size %d, found=%v, err=%v; want size %d", i, key, obj.Size, found, err, len(v.data))
		}
	}
	if got := keysOf(mustList(t, s, "")); !slices.Equal(got, []string{key}) {
		t.Errorf("List after overwrites: got %q, want [%q]", got, key)
	}
}

func testAbsent(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	const existing = "a/b/1.png"
	tests := []struct {
		name  string
		setup bool // store existing first
		key   string
	}{
		{"empty store", false, "missing/0/0/0.png"},
		{"sibling exists", true, "a/b/2.png"},
		{"prefix of an object", true, "a/b"},
		{"below an object", true, "a/b/1.png/x"},
		{"prefix of the name", true, "a/b/1.pn"},
		{"name plus suffix", true, "a/b/1.png2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			if tt.setup {
				mustPut(t, s, existing, []byte("x"), tilestore.Meta{ContentType: "image/png"})
			}
			checkAbsent(t, s, tt.key)
		})
	}
}

func testStat(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	s := newStore(t)
	for _, size := range []int{0, 1, 1234, 65536} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			key := fmt.Sprintf("stat/%d.png", size)
			mustPut(t, s, key, randomBytes(size, uint64(size)), tilestore.Meta{ContentType: "image/png"})
			obj, found, err := s.Stat(t.Context(), key)
			if err != nil || !found {
				t.Fatalf("Stat(%q): got found=%v, err=%v; want found=true, err=nil", key, found, err)
			}
			if obj.Key != key {
				t.Errorf("Stat(%q).Key: got %q, want %q", key, obj.Key, key)
			}
			if obj.Size != int64(size) {
				t.Errorf("Stat(%q).Size: got %d, want %d", key, obj.Size, size)
			}
			if obj.Modified.IsZero() {
				t.Errorf("Stat(%q).Modified: got zero time, want the time of the Put", key)
			}
		})
	}
}

func testDelete(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	tests := []struct {
		name   string
		put    []string
		delete []string
		want   int // objects that existed; len(delete) is also accepted
		left   []string
	}{
		{"present and absent", []string{"d/1.png", "d/2.png", "d/3.png"}, []string{"d/1.png", "d/9.png", "d/3.png"}, 2, []string{"d/2.png"}},
		{"only absent", []string{"d/1.png"}, []string{"d/8.png", "e/9.png"}, 0, []string{"d/1.png"}},
		{"no keys", []string{"d/1.png"}, nil, 0, []string{"d/1.png"}},
		{"prefix is not an object", []string{"d/e/1.png"}, []string{"d/e", "d"}, 0, []string{"d/e/1.png"}},
		{"whole directories", []string{"d/e/1.png", "d/e/2.png", "d/f/1.png", "g.png"}, []string{"d/e/1.png", "d/e/2.png", "d/f/1.png"}, 3, []string{"g.png"}},
		{"top level", []string{"a.png", "b.png"}, []string{"a.png"}, 1, []string{"b.png"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			for _, k := range tt.put {
				mustPut(t, s, k, []byte(k), tilestore.Meta{ContentType: "image/png", CacheControl: "max-age=1"})
			}
			n, err := s.Delete(t.Context(), tt.delete)
			if err != nil {
				t.Fatalf("Delete(%q) error: %v", tt.delete, err)
			}
			if n != tt.want && n != len(tt.delete) {
				t.Errorf("Delete(%q): got %d, want %d (or %d from a backend that cannot tell)", tt.delete, n, tt.want, len(tt.delete))
			}
			for _, k := range tt.delete {
				checkAbsent(t, s, k)
			}
			if got := keysOf(mustList(t, s, "")); !slices.Equal(got, tt.left) {
				t.Errorf("List after Delete: got %q, want %q", got, tt.left)
			}
			// Deleted objects can be stored again, whatever the backend did
			// with their (now empty) prefixes.
			for _, k := range tt.delete {
				if !slices.Contains(tt.put, k) {
					continue
				}
				mustPut(t, s, k, []byte("again"), tilestore.Meta{ContentType: "image/png"})
				checkGet(t, s, k, []byte("again"), tilestore.Meta{ContentType: "image/png"})
			}
		})
	}
}

func testDeleteBatch(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	s := newStore(t)
	keys := make([]string, 0, tilestore.DeleteBatch)
	for i := range tilestore.DeleteBatch {
		keys = append(keys, fmt.Sprintf("layer/EPSG:4326/png/default/%d/%d/%d.png", i%3, i%17, i))
	}
	putAll(t, s, keys)
	n, err := s.Delete(t.Context(), keys)
	if err != nil {
		t.Fatalf("Delete(%d keys) error: %v", len(keys), err)
	}
	if n != len(keys) {
		t.Errorf("Delete(%d keys): got %d, want %d", len(keys), n, len(keys))
	}
	if got := mustList(t, s, ""); len(got) != 0 {
		t.Errorf("List after Delete: got %d objects (first %q), want none", len(got), got[0].Key)
	}
	for _, k := range []string{keys[0], keys[len(keys)/2], keys[len(keys)-1]} {
		checkAbsent(t, s, k)
	}
}

// putAll stores keys with a few concurrent writers, so that a remote backend
// is not slow.
func putAll(t *testing.T, s tilestore.Store, keys []string) {
	t.Helper()
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range work {
				if err := s.Put(t.Context(), k, []byte(k), tilestore.Meta{ContentType: "image/png"}); err != nil {
					t.Errorf("Put(%q) error: %v", k, err)
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
}

func testContextCanceled(t *testing.T, newStore func(t *testing.T) tilestore.Store) {
	s := newStore(t)
	const key = "c/0/0/0.png"
	mustPut(t, s, key, []byte("x"), tilestore.Meta{ContentType: "image/png"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name string
		call func() error
	}{
		{"List", func() error {
			return s.List(ctx, "", func(tilestore.Object) error { return nil })
		}},
		{"Put", func() error { return s.Put(ctx, "c/1.png", []byte("y"), tilestore.Meta{ContentType: "image/png"}) }},
		{"Get", func() error { _, _, _, err := s.Get(ctx, key); return err }},
		{"Stat", func() error { _, _, err := s.Stat(ctx, key); return err }},
		{"Delete", func() error { _, err := s.Delete(ctx, []string{key}); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled context: got error %v, want one wrapping %v", tt.name, err, context.Canceled)
			}
		})
	}
	t.Run("List cancelled while listing", func(t *testing.T) {
		for i := range 5 {
			mustPut(t, s, fmt.Sprintf("l/%d.png", i), []byte("x"), tilestore.Meta{ContentType: "image/png"})
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		calls := 0
		err := s.List(ctx, "l/", func(tilestore.Object) error {
			calls++
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("List cancelled by its callback: got error %v after %d calls, want one wrapping %v", err, calls, context.Canceled)
		}
	})
}

// gzipped returns b gzip-compressed.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}
