package rangeread_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/pmtiles"
	"tilecache/internal/archive/rangeread"
	"tilecache/internal/source/upstream"
	"tilecache/internal/tilestore"
)

// fixture is the reference converter's archive (5,000 tiles, leaf
// directories) and its tiles, read from memory.
func fixture(t *testing.T) ([]byte, map[archivetest.Tile][]byte) {
	t.Helper()
	b, err := os.ReadFile("../pmtiles/testdata/converted.pmtiles")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r, err := pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	set := map[archivetest.Tile][]byte{}
	err = r.Tiles(ctx, func(z int, x, y int64, data []byte) error {
		set[archivetest.Tile{Z: z, X: x, Y: y}] = bytes.Clone(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 5000 {
		t.Fatalf("fixture holds %d tiles, want 5000", len(set))
	}
	return b, set
}

// checkArchive opens the archive through src and reads every tile, one by
// one and by the walk; with sample, only every 50th one by one (a request
// each).
func checkArchive(t *testing.T, src pmtiles.RangeReader, set map[archivetest.Tile][]byte, sample bool) {
	t.Helper()
	ctx := context.Background()
	r, err := pmtiles.Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if !sample {
		archivetest.CheckReader(t, r, set)
		return
	}
	i := 0
	for k, want := range set {
		if i++; i%50 != 0 {
			continue
		}
		got, ok, err := r.Tile(ctx, k.Z, k.X, k.Y)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("tile %v: %d bytes, %v, %v; want %d bytes", k, len(got), ok, err, len(want))
		}
	}
	n := 0
	err = r.Tiles(ctx, func(z int, x, y int64, data []byte) error {
		if !bytes.Equal(set[archivetest.Tile{Z: z, X: x, Y: y}], data) {
			return fmt.Errorf("tile %d/%d/%d differs", z, x, y)
		}
		n++
		return nil
	})
	if err != nil || n != len(set) {
		t.Fatalf("walk: %d tiles, %v; want %d", n, err, len(set))
	}
}

func TestParse(t *testing.T) {
	for raw, want := range map[string]rangeread.Location{
		"/data/a.pmtiles":                 {Scheme: "file", Path: "/data/a.pmtiles"},
		"rel/a.mbtiles":                   {Scheme: "file", Path: "rel/a.mbtiles"},
		"file:///data/a.pmtiles":          {Scheme: "file", Path: "/data/a.pmtiles"},
		"s3://bucket/archives/a.pmtiles":  {Scheme: "s3", Bucket: "bucket", Key: "archives/a.pmtiles"},
		"https://h.example/a.pmtiles?k=1": {Scheme: "https", URL: "https://h.example/a.pmtiles?k=1"},
		"http://127.0.0.1:8080/a.pmtiles": {Scheme: "http", URL: "http://127.0.0.1:8080/a.pmtiles"},
	} {
		got, err := rangeread.Parse(raw)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for raw, msg := range map[string]string{
		"":                       "empty",
		"s3://bucket":            "not s3://bucket/key",
		"s3://bucket/dir/":       "not s3://bucket/key",
		"ftp://h.example/a":      `scheme "ftp"`,
		"https:///no-host.pmtil": "names no host",
	} {
		if _, err := rangeread.Parse(raw); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", raw, err, msg)
		}
	}
	if l, err := rangeread.Parse("https://u:p@h.example/a.pmtiles?key=secret"); err != nil || l.String() != "https://h.example/a.pmtiles" {
		t.Errorf("String of a URL with a key = %q, %v", l.String(), err)
	}
}

func TestFile(t *testing.T) {
	b, set := fixture(t)
	path := t.TempDir() + "/a.pmtiles"
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := rangeread.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkArchive(t, f, set, false)
	ctx := context.Background()
	if got, err := f.ReadRange(ctx, int64(len(b))-3, 10); err != nil || !bytes.Equal(got, b[len(b)-3:]) {
		t.Errorf("read over the end = %d bytes, %v; want the last 3", len(got), err)
	}
	if got, err := f.ReadRange(ctx, int64(len(b))+5, 10); err != nil || len(got) != 0 {
		t.Errorf("read past the end = %d bytes, %v; want none", len(got), err)
	}
	if _, err := f.ReadRange(ctx, 0, rangeread.MaxRead+1); err == nil {
		t.Error("a read longer than MaxRead was not refused")
	}
	if _, err := rangeread.OpenFile(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("opening a directory: %v", err)
	}
}

// server serves the archive held in content with range requests (as
// http.ServeContent does), with an ETag that changes with the content.
type server struct {
	content atomic.Pointer[[]byte]
	etag    atomic.Value
	ranges  atomic.Int64
	noRange atomic.Bool
}

func (s *server) set(b []byte, etag string) {
	s.content.Store(&b)
	s.etag.Store(etag)
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b := *s.content.Load()
	if s.noRange.Load() {
		w.Write(b)
		return
	}
	if r.Header.Get("Range") != "" {
		s.ranges.Add(1)
	}
	w.Header().Set("ETag", s.etag.Load().(string))
	http.ServeContent(w, r, "a.pmtiles", time.Time{}, bytes.NewReader(b))
}

func loopbackClient(t *testing.T, allow bool) *upstream.Client {
	t.Helper()
	o := upstream.HTTPOptions{Retries: -1, Timeout: 10 * time.Second}
	if allow {
		// What TILECACHE_UPSTREAM_ALLOW=127.0.0.0/8 gives every layer.
		o.Addresses = upstream.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	}
	c, err := upstream.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHTTP(t *testing.T) {
	b, set := fixture(t)
	s := &server{}
	s.set(b, `"v1"`)
	srv := httptest.NewServer(s)
	defer srv.Close()
	url := srv.URL + "/a.pmtiles"

	h := rangeread.NewHTTP(loopbackClient(t, true), url)
	checkArchive(t, h, set, false)
	if s.ranges.Load() == 0 {
		t.Fatal("no range request reached the server")
	}
	ctx := context.Background()
	if got, err := h.ReadRange(ctx, int64(len(b))-3, 10); err != nil || !bytes.Equal(got, b[len(b)-3:]) {
		t.Errorf("read over the end = %d bytes, %v; want the last 3", len(got), err)
	}
	if got, err := h.ReadRange(ctx, int64(len(b))+5, 10); err != nil || len(got) != 0 {
		t.Errorf("read past the end = %d bytes, %v; want none", len(got), err)
	}

	// The archive is replaced: the next read says so.
	s.set(b, `"v2"`)
	if _, err := h.ReadRange(ctx, 0, 100); !errors.Is(err, rangeread.ErrChanged) {
		t.Errorf("read after the archive was replaced: %v, want ErrChanged", err)
	}

	// A server that ignores Range is refused past the first bytes.
	s.noRange.Store(true)
	if _, err := rangeread.NewHTTP(loopbackClient(t, true), url).ReadRange(ctx, 1000, 100); err == nil || !strings.Contains(err.Error(), "range") {
		t.Errorf("server without ranges: %v", err)
	}
	s.noRange.Store(false)

	// Loopback is refused by the default address policy, as for any
	// upstream of a layer.
	_, err := rangeread.NewHTTP(loopbackClient(t, false), url).ReadRange(ctx, 0, 100)
	if ae, ok := errors.AsType[*upstream.AddressError](err); !ok || ae.Class != "loopback" {
		t.Errorf("loopback read with the default policy: %v, want an AddressError", err)
	}
}

func TestS3(t *testing.T) {
	b, set := fixture(t)
	ctx := context.Background()
	store, bucket := archivetest.S3Bucket(t)
	put := func(data []byte) {
		t.Helper()
		if err := store.Put(ctx, "archives/a.pmtiles", data, tilestore.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	put(b)
	r := rangeread.NewS3(store, bucket, "archives/a.pmtiles")
	checkArchive(t, r, set, true)
	if got, err := r.ReadRange(ctx, int64(len(b))+5, 10); err != nil || len(got) != 0 {
		t.Errorf("read past the end = %d bytes, %v; want none", len(got), err)
	}

	// Replaced: the conditional read fails and says so.
	put(append(bytes.Clone(b), 0))
	if _, err := r.ReadRange(ctx, 0, 100); !errors.Is(err, rangeread.ErrChanged) {
		t.Errorf("read after the object was replaced: %v, want ErrChanged", err)
	}
	if _, err := rangeread.NewS3(store, bucket, "archives/missing.pmtiles").ReadRange(ctx, 0, 100); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing object: %v", err)
	}
}
