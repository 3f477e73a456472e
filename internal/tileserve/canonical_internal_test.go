package tileserve

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
)

// countingReader is a tile store that holds nothing and counts reads.
type countingReader struct{ gets atomic.Int64 }

func (c *countingReader) Get(context.Context, string) ([]byte, tilestore.Meta, bool, error) {
	c.gets.Add(1)
	return nil, tilestore.Meta{}, false, nil
}

// TestNonCanonicalPathsReadNothing: a tile path or key whose numbers are
// not written canonically, or whose extension is not its format's, is a
// 404 before the tile store is read; a canonical one is read.
func TestNonCanonicalPathsReadNothing(t *testing.T) {
	cat, err := layer.Parse([]byte(`
layers:
  - name: e:w
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	store := &countingReader{}
	log := slog.New(slog.DiscardHandler)
	tiles := NewTiles(cat, store, "", nil, log)
	objects := NewObjects(cat, store, "", nil, log)
	for _, c := range []struct {
		h    http.Handler
		path string
	}{
		{tiles, "/tiles/e:w/EPSG:4326/png/06/0/0.png"},
		{tiles, "/tiles/e:w/EPSG:4326/png/6/+4/0.png"},
		{tiles, "/tiles/e:w/EPSG:4326/png/6/8/004.png"},
		{tiles, "/tiles/e:w/EPSG:4326/png/6/8/0.jpeg"},
		{tiles, "/tiles/e:w/EPSG:4326/png/6/8/0x1.png"},
		{tiles, "/tiles/e:w/EPSG:4326/png/6/99999999999999999999/0.png"},
		{objects, "/e:w/EPSG:4326/png/default/06/12/0.png"},
		{objects, "/e:w/EPSG:4326/png/default/6/-1/0.png"},
		{objects, "/e:w/EPSG:4326/png/default/6/1/00.png"},
	} {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.path, nil))
		if rec.Code != http.StatusNotFound || store.gets.Load() != 0 {
			t.Errorf("%s: got %d after %d store reads, want 404 after none", c.path, rec.Code, store.gets.Load())
		}
	}
	for _, c := range []struct {
		h    http.Handler
		path string
	}{{tiles, "/tiles/e:w/EPSG:4326/png/6/8/0.png"}, {objects, "/e:w/EPSG:4326/png/default/6/12/0.png"}} {
		before := store.gets.Load()
		c.h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, c.path, nil))
		if store.gets.Load() == before {
			t.Errorf("%s: the store was not read for a canonical path", c.path)
		}
	}
}

// FuzzTilePosition: whatever tilePosition accepts is written back exactly
// as it was read (one tile, one spelling).
func FuzzTilePosition(f *testing.F) {
	for _, s := range [][3]string{{"6", "8", "0.png"}, {"06", "8", "0.png"}, {"6", "+4", "0.png"}, {"0", "0", "0.jpeg"}, {"19", "524287", "262143.png8"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, zs, xs, file string) {
		z, x, y, ext, ok := tilePosition(zs, xs, file)
		if !ok {
			return
		}
		if got := itoa(int64(z)) + "/" + itoa(x) + "/" + itoa(y) + "." + ext; got != zs+"/"+xs+"/"+file {
			t.Errorf("tilePosition(%q, %q, %q) accepted, but writes back as %q", zs, xs, file, got)
		}
	})
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
