package app_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// objectsOf returns the stored tiles under prefix (without the app's key
// prefix) as the store lists them, by key.
func objectsOf(t *testing.T, a *apptest.App, prefix string) map[string]tilestore.Object {
	t.Helper()
	out := map[string]tilestore.Object{}
	err := a.Local.Tiles.List(t.Context(), a.Prefix+prefix, func(o tilestore.Object) error {
		if k := strings.TrimPrefix(o.Key, a.Prefix); apptest.IsTileKey(k) {
			out[k] = o
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReseedStoresOnlyWhatChanged caches a tile service (another program
// serving a test-pattern layer) through an XYZ source, with the usage
// counted and a CloudFront-compatible server in front. A reseed of the
// same area finds every tile as it is stored: it writes no object, causes
// no invalidation, leaves the usage exact, and processes every tile. Then
// the tile service changes one tile: the next reseed writes exactly that
// one and invalidates its column.
func TestReseedStoresOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	up := apptest.Start(t, apptest.Options{Layers: `
layers:
  - name: src:world
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern}
`})
	wantDone(t, seedAndWait(t, up, "src:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3}}`))
	const srcPrefix = "src:world/EPSG:900913/png/default/"

	c := apptest.NewCDN(t)
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(`
layers:
  - name: xyz:world
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [2, 2]
    source: {type: xyz, url: "%s/tiles/src:world/EPSG:900913/png/{z}/{x}/{-y}.png"}
`, up.URL), Env: map[string]string{"TILECACHE_CDN_DISTRIBUTION_ID": c.ID}})
	const (
		layer  = "xyz:world"
		prefix = "xyz:world/EPSG:900913/png/default/"
		bs     = 96 // a small block size: a tile's size change shows in the usage
	)
	putQuota(t, a, `"diskBlockSize":96`)
	waitSettled(t, a)
	reseed := `{"seedRequest":{"zoomStart":0,"zoomStop":3,"type":"reseed","threadCount":2}}`
	// requests returns the S3 requests made by op (nil on the embedded
	// backend, which counts none).
	requests := func(op func()) *s3store.RequestCounts {
		s, ok := a.Local.Tiles.(*s3store.Store)
		if !ok {
			op()
			return nil
		}
		before := s.Requests()
		op()
		got := s.Requests().Sub(before)
		return &got
	}

	wantDone(t, seedAndWait(t, a, layer, `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":2}}`))
	seeded := objectsOf(t, a, prefix)
	if len(seeded) != 1+4+16+64 {
		t.Fatalf("seeded %d tiles, want 85", len(seeded))
	}
	wantNoDrift(t, a, "seed", layer, bs)
	usage := getUsage(t, a).layer(layer)

	// The same tiles again: nothing written, nothing invalidated.
	var got *s3store.RequestCounts
	paths := cdnStep(t, a, c, func() {
		got = requests(func() { wantDone(t, seedAndWait(t, a, layer, reseed)) })
	})
	if p := tilePaths(paths); len(p) != 0 {
		t.Errorf("unchanged reseed: invalidated %q, want no tile path", p)
	}
	for k, o := range objectsOf(t, a, prefix) {
		s := seeded[k]
		if o.MD5 == "" || o.MD5 != s.MD5 || !o.Modified.Equal(s.Modified) {
			t.Errorf("unchanged reseed: %s is %+v, was %+v", k, o, s)
		}
	}
	if got != nil {
		t.Logf("unchanged reseed of 85 tiles: %d LIST, %d HEAD, %d PUT, %d GET, %d DELETE", got.List, got.Head, got.Put, got.Get, got.Delete)
		if got.Put != 0 || got.Delete != 0 {
			t.Errorf("unchanged reseed: %d PUT and %d DELETE requests, want none", got.Put, got.Delete)
		}
	}
	wantNoDrift(t, a, "unchanged reseed", layer, bs)
	if u := getUsage(t, a).layer(layer); u != usage {
		t.Errorf("unchanged reseed: usage %+v, was %+v", u, usage)
	}

	// The tile service changes one tile (to the bytes of another: a
	// valid PNG of another size).
	const changed = "3/5/2.png"
	other, meta, _ := up.Get(t, srcPrefix+"3/0/0.png")
	if old, _, _ := up.Get(t, srcPrefix+changed); len(old) == len(other) || bytes.Equal(old, other) {
		t.Fatalf("3/0/0 and %s of the test pattern are alike: the step would test nothing", changed)
	}
	up.Put(t, srcPrefix+changed, other, meta)
	before := objectsOf(t, a, prefix)
	paths = cdnStep(t, a, c, func() {
		got = requests(func() { wantDone(t, seedAndWait(t, a, layer, reseed)) })
	})
	wantCovered(t, "reseed after a change", tilePaths(paths), []string{prefix + changed}, slices.Sorted(maps.Keys(before)))
	if p := tilePaths(paths); len(p) != 1 || p[0] != requestPath(prefix+"3/5/")+"*" {
		t.Errorf("reseed after a change: invalidated %q, want only the changed tile's column", p)
	}
	for k, o := range objectsOf(t, a, prefix) {
		s := before[k]
		if rewritten := o.MD5 != s.MD5 || !o.Modified.Equal(s.Modified); rewritten != (k == prefix+changed) {
			t.Errorf("reseed after a change: %s is %+v, was %+v", k, o, s)
		}
	}
	if data, _, _ := a.Get(t, prefix+changed); !bytes.Equal(data, other) {
		t.Errorf("reseed after a change: %s holds %d bytes, want the tile service's new %d", changed, len(data), len(other))
	}
	if got != nil && got.Put != 1 {
		t.Errorf("reseed after a change: %d PUT requests, want 1", got.Put)
	}
	wantNoDrift(t, a, "reseed after a change", layer, bs)
}
