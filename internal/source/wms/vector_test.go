package wms_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"tilecache/internal/grid"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/vectortile"
)

// TestVectorMetatile: a metatile of a vector tile format is rendered by
// the test WMS (MapServer's MVT driver) one GetMap per tile, in the tile
// format and without the layer's gutter; each tile is the WMS's answer
// for that tile byte for byte, and holds features.
func TestVectorMetatile(t *testing.T) {
	u := testenv.RequireWMS(t)
	l := layerOf(t, `
layers:
  - name: l
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png, application/vnd.mapbox-vector-tile]
    metatiling: [2, 2]
    gutter: 20
    source: {type: wms, url: "`+u+`", layers: "polygons,lines,points", allowPrivateUpstream: true}
`)
	src, err := wms.New(l, upstream.Shared{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := grid.Builtin("EPSG:900913")
	req := source.Request{Layer: "l", GridSet: g, Z: 3, Format: vectortile.MVT, Gutter: 20,
		Tiles: grid.TileRange{Z: 3, MinX: 4, MaxX: 5, MinY: 4, MaxY: 5}}
	tiles, err := src.Render(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(tiles) != 4 {
		t.Fatalf("%d tiles, want 4", len(tiles))
	}
	for _, tl := range tiles {
		one := req
		one.Gutter = 0
		one.Tiles = grid.TileRange{Z: 3, MinX: tl.X, MaxX: tl.X, MinY: tl.Y, MaxY: tl.Y}
		getMap, box, err := src.GetMapURL(one)
		if err != nil {
			t.Fatal(err)
		}
		if q := query(t, getMap); q.Get("FORMAT") != vectortile.MVT || box.Width != 256 || box.Height != 256 {
			t.Fatalf("GetMap %s: want FORMAT %s, 256×256", getMap, vectortile.MVT)
		}
		resp, err := http.Get(getMap)
		if err != nil {
			t.Fatal(err)
		}
		direct, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Equal(tl.Data, direct) {
			t.Errorf("tile %d/%d: %d bytes, the WMS answers %d for it", tl.X, tl.Y, len(tl.Data), len(direct))
		}
		vt, err := vectortile.Parse(tl.Data, 0)
		if err != nil || vt.Empty() || tl.Encoding != "" {
			t.Errorf("tile %d/%d: %+v, %v; want a vector tile with features, not compressed", tl.X, tl.Y, vt, err)
		}
	}
}

// TestVectorFailureNamesItsTile: a vector tile the WMS answers with
// something that is not one fails naming that tile (not z3 0/0, as when
// the failed check zeroed it) and the limit it broke; an answer longer
// than a vector tile can be is refused as such (not as an image).
func TestVectorFailureNamesItsTile(t *testing.T) {
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", vectortile.MVT)
		w.Write(body.Load().([]byte))
	}))
	defer srv.Close()
	l := layerOf(t, `
layers:
  - name: l
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/vnd.mapbox-vector-tile]
    source: {type: wms, url: "`+srv.URL+`/wms", layers: a, retries: -1, allowPrivateUpstream: true}
`)
	src, err := wms.New(l, upstream.Shared{Budget: upstream.NewBudget(64 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := grid.Builtin("EPSG:900913")
	for _, c := range []struct {
		name string
		body []byte
		want string
	}{
		{"html", []byte("<html><body>Bad gateway</body></html>"), "Bad gateway"},
		{"2000 layers", bytes.Repeat([]byte{0x1a, 0x04, 0x0a, 0x02, 'a', 'b'}, 2000), "not a Mapbox Vector Tile: 2000 layers, more than the 1000 a tile may have"},
		{"oversized", bytes.Repeat([]byte{0x1a, 0x00}, vectortile.MaxSize), "more than the vector tile asked for can take"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body.Store(c.body)
			req := source.Request{Layer: "l", GridSet: g, Z: 3, Format: vectortile.MVT,
				Tiles: grid.TileRange{Z: 3, MinX: 2, MaxX: 2, MinY: 5, MaxY: 5}}
			tiles, err := src.Render(t.Context(), req)
			var ue *upstream.Error
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || tiles != nil {
				t.Fatalf("got %d tiles, %v; want an upstream error saying %q", len(tiles), err, c.want)
			}
			if at := "wms GetMap for z3 tile 2/5: "; !strings.Contains(err.Error(), at) {
				t.Errorf("%v: want it to name the tile, %q", err, at)
			}
		})
	}
}
