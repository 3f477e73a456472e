package app_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/testkit/testenv"
)

// TestGDALReadsSeededTilesThroughWMTS opens the WMTS capabilities of a
// layer with GDAL's WMTS driver, a real map client, and reads windows of
// each grid set (the built-in ones and a custom top-left aligned one) at
// a level's own resolution: every tile of the window must be the stored
// one at its place, fetched through the /wmts/ paths (rows from the top)
// the capabilities' ResourceURL names.
func TestGDALReadsSeededTilesThroughWMTS(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	_, gdalTranslate := testenv.RequireGDAL(t)
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()}})
	var reqs requestLog
	front.Config.Handler = reqs.wrap(a.Local.Handler)
	front.Start()
	t.Cleanup(front.Close)
	for _, gs := range []string{"EPSG:900913", "EPSG:4326", "TopLeft4326"} {
		wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"gridSetId":"`+gs+`","zoomStart":0,"zoomStop":2,"format":"image/png"}}`))
	}
	gdal := gdalRunner{env: gdalEnv(t)}
	for _, tt := range []struct {
		gridSet string
		windows []grid.TileRange // y from the bottom
	}{
		{"EPSG:900913", []grid.TileRange{{Z: 1, MinX: 0, MinY: 1, MaxX: 1, MaxY: 1}, {Z: 2, MinX: 1, MinY: 1, MaxX: 3, MaxY: 2}}},
		{"EPSG:4326", []grid.TileRange{{Z: 1, MinX: 0, MinY: 0, MaxX: 3, MaxY: 1}, {Z: 2, MinX: 2, MinY: 1, MaxX: 5, MaxY: 3}}},
		{"TopLeft4326", []grid.TileRange{{Z: 2, MinX: 3, MinY: 0, MaxX: 6, MaxY: 2}}},
	} {
		t.Run(tt.gridSet, func(t *testing.T) {
			g := testGridSet(t, tt.gridSet)
			src := "WMTS:" + front.URL + "/demo:world/WMTSCapabilities.xml,layer=demo:world,tilematrixset=" + tt.gridSet
			for _, w := range tt.windows {
				box := g.RangeExtent(w)
				cols, rows := int(w.MaxX-w.MinX+1), int(w.MaxY-w.MinY+1)
				out := filepath.Join(t.TempDir(), "window.png")
				reqs.reset()
				gdal.run(t, gdalTranslate, "-q", "-of", "PNG", "-r", "nearest",
					"-projwin", ftoa(box.MinX), ftoa(box.MaxY), ftoa(box.MaxX), ftoa(box.MinY),
					"-outsize", strconv.Itoa(cols*g.TileWidth), strconv.Itoa(rows*g.TileHeight), src, out)
				got := readPNG(t, out)
				wantPaths := []string{"/demo:world/WMTSCapabilities.xml"}
				_, gridRows := g.Size(w.Z)
				for x := w.MinX; x <= w.MaxX; x++ {
					for y := w.MinY; y <= w.MaxY; y++ {
						key := fmt.Sprintf("demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, w.Z, x, y)
						wantPaths = append(wantPaths, fmt.Sprintf("/wmts/demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, w.Z, x, gridRows-1-y))
						tile := decodeTile(t, a, key, "image/png")
						ox, oy := int(x-w.MinX)*g.TileWidth, int(w.MaxY-y)*g.TileHeight
						if differ, _, _ := rgbDiff(tile, got, ox, oy); differ != 0 {
							t.Errorf("z%d: %d pixels of GDAL's image at (%d, %d) differ from the stored tile %s", w.Z, differ, ox, oy, key)
						}
					}
				}
				reqs.want(t, fmt.Sprintf("gdal_translate of z%d through WMTS", w.Z), wantPaths...)
			}
		})
	}
}

// testGridSet returns a grid set of apptest.Layers: a built-in one, or
// TopLeft4326 (EPSG:4326, top-left aligned, four levels).
func testGridSet(t *testing.T, id string) *grid.GridSet {
	t.Helper()
	if g, ok := grid.Builtin(id); ok {
		return g
	}
	if id != "TopLeft4326" {
		t.Fatalf("no grid set %s in apptest.Layers", id)
	}
	return &grid.GridSet{ID: "TopLeft4326", EPSG: 4326, Extent: grid.Extent{MinX: -180, MinY: -90, MaxX: 180, MaxY: 90},
		TileWidth: 256, TileHeight: 256, Resolutions: []float64{0.703125, 0.3515625, 0.17578125, 0.087890625}, TopLeft: true}
}

// owslibGetTile is a Python program: OWSLib's WebMapTileService reads the
// capabilities at argv[1], checks what they say of the layer, and writes
// gettile's answer for argv[2..] (tile matrix set, matrix, row, column)
// to standard output.
const owslibGetTile = `
import sys
from owslib.wmts import WebMapTileService
url, tms, matrix, row, col = sys.argv[1:6]
wmts = WebMapTileService(url)
layer = wmts.contents["demo:world"]
assert layer.title == "demo:world", layer.title
assert tms in layer.tilematrixsetlinks, list(layer.tilematrixsetlinks)
assert "image/png" in layer.formats, layer.formats
assert "default" in layer.styles, layer.styles
m = wmts.tilematrixsets[tms].tilematrix[matrix]
assert int(row) < m.matrixheight and int(col) < m.matrixwidth
tile = wmts.gettile(layer="demo:world", tilematrixset=tms, tilematrix=matrix, row=int(row), column=int(col), format="image/png", style="default")
sys.stdout.buffer.write(tile.read())
`

// TestOWSLibReadsTheWMTSCapabilities: OWSLib, a real WMTS client, parses
// the capabilities and its gettile (rows from the top) returns the stored
// tile (rows from the bottom), for each grid set.
func TestOWSLibReadsTheWMTSCapabilities(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	python := testenv.RequireOWSLib(t)
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()}})
	front.Config.Handler = a.Local.Handler
	front.Start()
	t.Cleanup(front.Close)
	for _, gs := range []string{"EPSG:900913", "EPSG:4326", "TopLeft4326"} {
		wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"gridSetId":"`+gs+`","zoomStart":0,"zoomStop":2,"format":"image/png"}}`))
	}
	for _, tt := range []struct {
		gridSet        string
		z              int
		col, row, rows int64
	}{{"EPSG:900913", 2, 1, 0, 4}, {"EPSG:4326", 2, 6, 1, 4}, {"TopLeft4326", 2, 5, 3, 4}} {
		key := fmt.Sprintf("demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, tt.z, tt.col, tt.rows-1-tt.row)
		want, _, found := a.Get(t, key)
		if !found {
			t.Fatalf("%s not stored", key)
		}
		cmd := exec.Command(python, "-c", owslibGetTile, front.URL+"/WMTSCapabilities.xml", tt.gridSet,
			strconv.Itoa(tt.z), strconv.FormatInt(tt.row, 10), strconv.FormatInt(tt.col, 10))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: OWSLib: %v\n%s", tt.gridSet, err, stderr.String())
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: gettile row %d column %d answered %d bytes, not the %d of %s", tt.gridSet, tt.row, tt.col, len(got), len(want), key)
		}
	}
}
