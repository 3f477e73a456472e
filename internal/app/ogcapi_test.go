package app_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/testkit/testenv"
)

// TestGDALReadsSeededTilesThroughOGCAPI opens a layer's OGC API – Tiles
// collection with GDAL's OGCAPI driver, a real client that follows the
// documents' links (collection, map tile sets, tile set, tile matrix set),
// and reads windows of each grid set (the built-in ones under their
// registered ids, and a custom top-left aligned one under its own) at a
// level's own resolution: every tile of the window must be the stored one
// at its place, fetched through the OGC API tile paths (rows from the top).
// The landing page leads GDAL to the collections.
func TestGDALReadsSeededTilesThroughOGCAPI(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	gdalinfo, gdalTranslate := testenv.RequireGDAL(t)
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
	collection := "/ogcapi/collections/demo:world"

	// From the landing page: the collections are GDAL's subdatasets.
	out := gdal.run(t, gdalinfo, "OGCAPI:"+front.URL+"/ogcapi")
	if want := "SUBDATASET_1_NAME=OGCAPI:" + front.URL + collection; !strings.Contains(string(out), want) {
		t.Errorf("gdalinfo of the landing page: no %s in\n%s", want, out)
	}

	for _, tt := range []struct {
		gridSet, tms string
		windows      []grid.TileRange // y from the bottom
		// GDAL before 3.7 does not reproject the collection's extent
		// (degrees) into the tile matrix set's CRS: for Web Mercator it
		// is given in metres, as its users do.
		extent []string
	}{
		{"EPSG:900913", "WebMercatorQuad", []grid.TileRange{{Z: 1, MinX: 0, MinY: 1, MaxX: 1, MaxY: 1}, {Z: 2, MinX: 1, MinY: 1, MaxX: 3, MaxY: 2}},
			[]string{"-oo", "MINX=-20037508.34", "-oo", "MINY=-20037508.34", "-oo", "MAXX=20037508.34", "-oo", "MAXY=20037508.34"}},
		{"EPSG:4326", "WorldCRS84Quad", []grid.TileRange{{Z: 1, MinX: 0, MinY: 0, MaxX: 3, MaxY: 1}, {Z: 2, MinX: 2, MinY: 1, MaxX: 5, MaxY: 3}}, nil},
		{"TopLeft4326", "TopLeft4326", []grid.TileRange{{Z: 2, MinX: 3, MinY: 0, MaxX: 6, MaxY: 2}}, nil},
	} {
		t.Run(tt.gridSet, func(t *testing.T) {
			g := testGridSet(t, tt.gridSet)
			src := "OGCAPI:" + front.URL + collection
			for _, w := range tt.windows {
				box := g.RangeExtent(w)
				cols, rows := int(w.MaxX-w.MinX+1), int(w.MaxY-w.MinY+1)
				out := filepath.Join(t.TempDir(), "window.png")
				reqs.reset()
				args := append([]string{"-q", "-of", "PNG", "-r", "nearest",
					"-oo", "TILEMATRIXSET=" + tt.tms, "-oo", "TILEMATRIX=" + strconv.Itoa(w.Z)}, tt.extent...)
				gdal.run(t, gdalTranslate, append(args, "-projwin", ftoa(box.MinX), ftoa(box.MaxY), ftoa(box.MaxX), ftoa(box.MinY),
					"-outsize", strconv.Itoa(cols*g.TileWidth), strconv.Itoa(rows*g.TileHeight), src, out)...)
				got := readPNG(t, out)
				wantPaths := []string{collection, collection + "/map/tiles", collection + "/map/tiles/" + tt.tms,
					"/ogcapi/tileMatrixSets/" + tt.tms}
				_, gridRows := g.Size(w.Z)
				for x := w.MinX; x <= w.MaxX; x++ {
					for y := w.MinY; y <= w.MaxY; y++ {
						key := fmt.Sprintf("demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, w.Z, x, y)
						wantPaths = append(wantPaths, fmt.Sprintf("%s/map/tiles/%s/%d/%d/%d.png", collection, tt.tms, w.Z, gridRows-1-y, x))
						tile := decodeTile(t, a, key, "image/png")
						ox, oy := int(x-w.MinX)*g.TileWidth, int(w.MaxY-y)*g.TileHeight
						if differ, _, _ := rgbDiff(tile, got, ox, oy); differ != 0 {
							t.Errorf("z%d: %d pixels of GDAL's image at (%d, %d) differ from the stored tile %s", w.Z, differ, ox, oy, key)
						}
					}
				}
				reqs.want(t, fmt.Sprintf("gdal_translate of z%d through OGC API – Tiles", w.Z), wantPaths...)
			}
		})
	}
}
