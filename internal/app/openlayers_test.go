package app_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/grid"
	"tilecache/internal/testkit/browsertest"
	"tilecache/internal/testkit/testenv"
)

// olPage shows a layer of the WMTS capabilities with OpenLayers' WMTS
// source, configured from the capabilities alone (optionsFromCapabilities),
// on a 512×512 map at a level's own resolution. Once OpenLayers has drawn
// it, window.result lists the tiles it loaded, each with the rectangle it
// covers on the page, and body gets data-ready.
const olPage = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="/_ol/ol.css">
<style>html, body { margin: 0 } #map { width: 512px; height: 512px }</style></head>
<body><div id="map"></div>
<script src="/_ol/ol.js"></script>
<script>
'use strict';
var q = new URLSearchParams(location.search);
var loaded = [];
window.result = null;
fetch(q.get('caps')).then(function (r) { return r.text(); }).then(function (text) {
  var caps = new ol.format.WMTSCapabilities().read(text);
  var options = ol.source.WMTS.optionsFromCapabilities(caps, { layer: q.get('layer'), matrixSet: q.get('set'), format: 'image/png' });
  if (!options) throw new Error('no such layer or matrix set in the capabilities');
  options.transition = 0;
  var source = new ol.source.WMTS(options);
  var tileGrid = source.getTileGrid();
  source.on('tileloadend', function (e) { loaded.push({ coord: e.tile.getTileCoord(), src: e.tile.getImage().src }); });
  source.on('tileloaderror', function (e) { console.error('tile load error: ' + e.tile.getImage().src); });
  var z = +q.get('z');
  var map = new ol.Map({
    target: 'map', controls: [], interactions: [],
    layers: [new ol.layer.Tile({ source: source })],
    view: new ol.View({ projection: options.projection, resolutions: tileGrid.getResolutions(),
      center: [+q.get('x'), +q.get('y')], zoom: z })
  });
  map.once('rendercomplete', function () {
    window.result = loaded.filter(function (t) { return t.coord[0] === z; }).map(function (t) {
      var ext = tileGrid.getTileCoordExtent(t.coord);
      var tl = map.getPixelFromCoordinate(ol.extent.getTopLeft(ext));
      var br = map.getPixelFromCoordinate(ol.extent.getBottomRight(ext));
      return { Src: t.src, Left: tl[0], Top: tl[1], Width: br[0] - tl[0], Height: br[1] - tl[1], Loaded: true };
    });
    document.body.setAttribute('data-ready', '1');
  });
}).catch(function (e) { console.error(String(e)); });
</script></body></html>`

// TestOpenLayersShowsTheWMTSTiles opens the WMTS capabilities with
// OpenLayers' WMTS source (the npm package ol, in headless Chromium) for
// the spherical Mercator grid, the geographic one (latitude first in the
// capabilities) and a custom top-left aligned one: OpenLayers asks for
// exactly the tiles of the view through the /wmts/ paths, each answered
// 200 with the stored tile (rows from the bottom) of its place, and draws
// their pixels where the grid puts them.
func TestOpenLayersShowsTheWMTSTiles(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	testenv.RequireChromium(t)
	olDir := testenv.RequireOpenLayers(t)
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()}})
	mux := http.NewServeMux()
	mux.Handle("/_ol/", http.StripPrefix("/_ol/", http.FileServer(http.Dir(olDir))))
	mux.HandleFunc("/_ol/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, olPage)
	})
	mux.Handle("/", a.Local.Handler)
	front.Config.Handler = mux
	front.Start()
	t.Cleanup(front.Close)
	for _, gs := range []string{"EPSG:900913", "EPSG:4326", "TopLeft4326"} {
		wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"gridSetId":"`+gs+`","zoomStart":0,"zoomStop":2,"format":"image/png"}}`))
	}
	for _, tt := range []struct {
		gridSet string
		z       int
		want    grid.TileRange // the tiles of the 512×512 view, y from the bottom
	}{
		{"EPSG:900913", 1, grid.TileRange{Z: 1, MinX: 0, MinY: 0, MaxX: 1, MaxY: 1}},
		{"EPSG:4326", 1, grid.TileRange{Z: 1, MinX: 1, MinY: 0, MaxX: 2, MaxY: 1}},
		{"TopLeft4326", 2, grid.TileRange{Z: 2, MinX: 3, MinY: 1, MaxX: 4, MaxY: 2}},
	} {
		t.Run(tt.gridSet, func(t *testing.T) {
			g := testGridSet(t, tt.gridSet)
			page := browsertest.Open(t, fmt.Sprintf("%s/_ol/page.html?caps=/demo:world/WMTSCapabilities.xml&layer=demo:world&set=%s&z=%d&x=0&y=0",
				front.URL, tt.gridSet, tt.z), 60*time.Second)
			page.WaitFor(t, `body[data-ready="1"]`)
			var tiles []placedTile
			if err := json.Unmarshal([]byte(page.Eval(t, "JSON.stringify(window.result)")), &tiles); err != nil {
				t.Fatal(err)
			}
			shot := screenshot(t, page)
			_, rows := g.Size(tt.z)
			var got, want []string
			for x := tt.want.MinX; x <= tt.want.MaxX; x++ {
				for y := tt.want.MinY; y <= tt.want.MaxY; y++ {
					want = append(want, fmt.Sprintf("/wmts/demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, tt.z, x, rows-1-y))
				}
			}
			for _, tl := range tiles {
				path := strings.TrimPrefix(tl.Src, front.URL)
				got = append(got, path)
				var x, row int64
				if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(path))+" "+strings.TrimSuffix(filepath.Base(path), ".png"), "%d %d", &x, &row); err != nil {
					t.Fatalf("tile %s: %v", path, err)
				}
				key := fmt.Sprintf("demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, tt.z, x, rows-1-row)
				if math.Abs(tl.Width-256) > 0.01 || math.Abs(tl.Height-256) > 0.01 {
					t.Errorf("%s drawn %v×%v px, want 256×256", path, tl.Width, tl.Height)
				}
				comparePixels(t, shot, decodeTile(t, a, key, "image/png"), key, tl)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("OpenLayers loaded %q, want %q", got, want)
			}
			for _, r := range page.Requests() {
				if strings.Contains(r.URL, "/wmts/") && r.Status != 200 {
					t.Errorf("%s answered %d", r.URL, r.Status)
				}
			}
			if c := page.Console(); len(c) > 0 {
				t.Errorf("the page logged errors or threw: %q", c)
			}
		})
	}
}
