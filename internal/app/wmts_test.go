package app_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/testenv"
)

// TestGDALReadsSeededTilesThroughWMTS opens the WMTS capabilities of a
// layer with GDAL's WMTS driver, a real map client, and reads windows of
// each grid set (the built-in ones and a custom top-left aligned one) at
// a level's own resolution: every tile of the window must be the stored
// one at its place, fetched through the /wmts/ paths (rows from the top)
// the capabilities' ResourceURL names.
func TestGDALReadsSeededTilesThroughWMTS(t *testing.T) {
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
	topLeft := &grid.GridSet{ID: "TopLeft4326", EPSG: 4326, Extent: grid.Extent{MinX: -180, MinY: -90, MaxX: 180, MaxY: 90},
		TileWidth: 256, TileHeight: 256, Resolutions: []float64{0.703125, 0.3515625, 0.17578125, 0.087890625}, TopLeft: true}
	for _, tt := range []struct {
		gridSet string
		windows []grid.TileRange // y from the bottom
	}{
		{"EPSG:900913", []grid.TileRange{{Z: 1, MinX: 0, MinY: 1, MaxX: 1, MaxY: 1}, {Z: 2, MinX: 1, MinY: 1, MaxX: 3, MaxY: 2}}},
		{"EPSG:4326", []grid.TileRange{{Z: 1, MinX: 0, MinY: 0, MaxX: 3, MaxY: 1}, {Z: 2, MinX: 2, MinY: 1, MaxX: 5, MaxY: 3}}},
		{"TopLeft4326", []grid.TileRange{{Z: 2, MinX: 3, MinY: 0, MaxX: 6, MaxY: 2}}},
	} {
		t.Run(tt.gridSet, func(t *testing.T) {
			g, ok := grid.Builtin(tt.gridSet)
			if !ok {
				g = topLeft
			}
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
