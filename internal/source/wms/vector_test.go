package wms_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"tilecache/internal/grid"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
	"tilecache/internal/testenv"
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
