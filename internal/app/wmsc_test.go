package app_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/edgepath"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/testkit/browsertest"
	"tilecache/internal/testkit/testenv"
)

// olWMSPage shows a layer with OpenLayers' tiled WMS source (TileWMS,
// TILED=true) on a 512×512 map at a level's own resolution, the tile grid
// given as a WMS-C client is given it (the grid's extent, whose top-left
// corner is the origin, and its resolutions). Once OpenLayers has drawn
// it, window.result lists the tiles it loaded with the rectangle each
// covers on the page, and body gets data-ready.
const olWMSPage = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="stylesheet" href="/_ol/ol.css">
<style>html, body { margin: 0 } #map { width: 512px; height: 512px }</style></head>
<body><div id="map"></div>
<script src="/_ol/ol.js"></script>
<script>
'use strict';
var q = new URLSearchParams(location.search);
var loaded = [];
window.result = null;
var extent = q.get('extent').split(',').map(Number);
var tileGrid = new ol.tilegrid.TileGrid({ extent: extent, resolutions: q.get('res').split(',').map(Number), tileSize: 256 });
var source = new ol.source.TileWMS({
  url: '/gwc/service/wms', projection: q.get('proj'), tileGrid: tileGrid, transition: 0,
  params: { LAYERS: q.get('layer'), FORMAT: 'image/png', STYLES: '', TILED: true, VERSION: q.get('version') }
});
source.on('tileloadend', function (e) { loaded.push({ coord: e.tile.getTileCoord(), src: e.tile.getImage().src }); });
source.on('tileloaderror', function (e) { console.error('tile load error: ' + e.tile.getImage().src); });
var z = +q.get('z');
var map = new ol.Map({
  target: 'map', controls: [], interactions: [],
  layers: [new ol.layer.Tile({ source: source })],
  view: new ol.View({ projection: q.get('proj'), resolutions: tileGrid.getResolutions(), center: [+q.get('x'), +q.get('y')], zoom: z })
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
</script></body></html>`

// cdnEmulation serves the OGC bindings as the CDN does: the edge's
// mapping (edgepath.OWS, the Go twin of functions/edge/ows.js, on what
// the service writes for the edge) turns the request into a key, which is
// answered from the store when stored (the bucket), and only otherwise by
// origin (the tile function's failover), counted in origins.
func cdnEmulation(t *testing.T, a *apptest.App, origin http.Handler, origins *atomic.Int64) http.Handler {
	c, err := layer.Parse([]byte(apptest.Layers), "test layers")
	if err != nil {
		t.Fatal(err)
	}
	values := edgepath.ValuesOf(c, nil)
	kv := func(k string) (string, bool) { v, ok := values[k]; return v, ok }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ans, ok := edgepath.OWS(r.URL.EscapedPath(), r.URL.RawQuery, kv)
		if !ok {
			origin.ServeHTTP(w, r)
			return
		}
		if ans.Status != 0 {
			w.Header().Set("Content-Type", ans.ContentType)
			w.WriteHeader(ans.Status)
			fmt.Fprint(w, ans.Body)
			return
		}
		key, err := url.PathUnescape(ans.Key)
		if err != nil {
			t.Errorf("%s: key %s does not unescape", r.URL, ans.Key)
		}
		if data, meta, found := a.Get(t, strings.TrimPrefix(key, "/")); found {
			w.Header().Set("Content-Type", meta.ContentType)
			w.Write(data)
			return
		}
		origins.Add(1)
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath, r2.URL.RawQuery, r2.RequestURI = key, ans.Key, "", ans.Key
		origin.ServeHTTP(w, r2)
	})
}

// TestOpenLayersDrawsFromWMSC: OpenLayers' tiled WMS layer in headless
// Chromium, pointed at /gwc/service/wms, asks for the tiles of the view
// as WMS GetMap boxes; each is answered 200 with the stored tile of its
// place (drawn pixel for pixel where the grid puts it), and none of them
// reached the origin: through the CDN's mapping (the edge function's Go
// twin, then the store) the stored tiles cost zero origin requests. The
// same page through `tilecache serve` alone draws the same tiles.
func TestOpenLayersDrawsFromWMSC(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	testenv.RequireChromium(t)
	olDir := testenv.RequireOpenLayers(t)
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()}})
	var origins atomic.Int64
	cdn := cdnEmulation(t, a, a.Local.Handler, &origins)
	mux := http.NewServeMux()
	mux.Handle("/_ol/", http.StripPrefix("/_ol/", http.FileServer(http.Dir(olDir))))
	mux.HandleFunc("/_ol/wms.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, olWMSPage)
	})
	var viaCDN atomic.Bool
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if viaCDN.Load() {
			cdn.ServeHTTP(w, r)
			return
		}
		a.Local.Handler.ServeHTTP(w, r)
	}))
	front.Config.Handler = mux
	front.Start()
	t.Cleanup(front.Close)
	for _, gs := range []string{"EPSG:900913", "EPSG:4326"} {
		wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"gridSetId":"`+gs+`","zoomStart":0,"zoomStop":2,"format":"image/png"}}`))
	}
	for _, tt := range []struct {
		name, gridSet, proj, version string
		z                            int
		cdn                          bool
		want                         grid.TileRange // the tiles of the 512×512 view, y from the bottom
	}{
		{"EPSG:3857 through the CDN", "EPSG:900913", "EPSG:3857", "1.1.1", 1, true, grid.TileRange{Z: 1, MinX: 0, MinY: 0, MaxX: 1, MaxY: 1}},
		{"EPSG:4326 WMS 1.3.0 through the CDN", "EPSG:4326", "EPSG:4326", "1.3.0", 1, true, grid.TileRange{Z: 1, MinX: 1, MinY: 0, MaxX: 2, MaxY: 1}},
		{"EPSG:3857 on serve", "EPSG:900913", "EPSG:3857", "1.1.1", 2, false, grid.TileRange{Z: 2, MinX: 1, MinY: 1, MaxX: 2, MaxY: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			viaCDN.Store(tt.cdn)
			g := testGridSet(t, tt.gridSet)
			var res []string
			for _, r := range g.Resolutions {
				res = append(res, strconv.FormatFloat(r, 'g', -1, 64))
			}
			e := g.Extent
			before := origins.Load()
			page := browsertest.Open(t, fmt.Sprintf("%s/_ol/wms.html?layer=demo:world&proj=%s&version=%s&extent=%s&res=%s&z=%d&x=0&y=0",
				front.URL, tt.proj, tt.version, url.QueryEscape(fmt.Sprintf("%v,%v,%v,%v", e.MinX, e.MinY, e.MaxX, e.MaxY)),
				strings.Join(res, ","), tt.z), 60*time.Second)
			page.WaitFor(t, `body[data-ready="1"]`)
			var tiles []placedTile
			if err := json.Unmarshal([]byte(page.Eval(t, "JSON.stringify(window.result)")), &tiles); err != nil {
				t.Fatal(err)
			}
			shot := screenshot(t, page)
			var got, want []string
			for x := tt.want.MinX; x <= tt.want.MaxX; x++ {
				for y := tt.want.MinY; y <= tt.want.MaxY; y++ {
					want = append(want, fmt.Sprintf("%d/%d/%d", tt.z, x, y))
				}
			}
			w, h := g.Span(tt.z)
			for _, tl := range tiles {
				u, err := url.Parse(tl.Src)
				if err != nil || u.Path != "/gwc/service/wms" {
					t.Fatalf("tile %s: not a WMS request", tl.Src)
				}
				q := url.Values{}
				for k, v := range u.Query() {
					q[strings.ToUpper(k)] = v
				}
				var b [4]float64
				for i, s := range strings.Split(q.Get("BBOX"), ",") {
					b[i], _ = strconv.ParseFloat(s, 64)
				}
				if tt.version == "1.3.0" && tt.proj == "EPSG:4326" {
					b = [4]float64{b[1], b[0], b[3], b[2]}
				}
				x := int64(math.Round((b[0] - e.MinX) / w))
				y := int64(math.Round((b[1] - e.MinY) / h))
				got = append(got, fmt.Sprintf("%d/%d/%d", tt.z, x, y))
				key := fmt.Sprintf("demo:world/%s/png/default/%d/%d/%d.png", tt.gridSet, tt.z, x, y)
				if math.Abs(tl.Width-256) > 0.01 || math.Abs(tl.Height-256) > 0.01 {
					t.Errorf("%s drawn %v×%v px, want 256×256", key, tl.Width, tl.Height)
				}
				comparePixels(t, shot, decodeTile(t, a, key, "image/png"), key, tl)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("OpenLayers loaded %q, want %q", got, want)
			}
			for _, r := range page.Requests() {
				if strings.Contains(r.URL, "/gwc/service/wms") && r.Status != 200 {
					t.Errorf("%s answered %d", r.URL, r.Status)
				}
			}
			if n := origins.Load() - before; tt.cdn && n != 0 {
				t.Errorf("%d requests for stored tiles reached the origin, want none", n)
			}
			if c := page.Console(); len(c) > 0 {
				t.Errorf("the page logged errors or threw: %q", c)
			}
			t.Logf("%d WMS-C tiles drawn, %d origin requests", len(tiles), origins.Load()-before)
		})
	}
}
