package app_test

import (
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/browsertest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/vectortile"
)

// TestDemoPageDrawsVectorTiles opens the demo page in headless Chromium
// on a Mapbox Vector Tile set seeded from the test WMS: OpenLayers draws
// it from its TileJSON, with the style the
// page makes of vector_layers (the polygons, lines and points of the
// WMS's layers, each layer in a colour of its own), asking only for stored
// tiles. The screenshot of the map's canvas shows the lines' and the
// points' colours and a share of pixels other than the background; the
// same for the XYZ source (tilejson-xyz.json, rows from the top).
func TestDemoPageDrawsVectorTiles(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "what a map client (GDAL, OWSLib, OpenLayers in Chromium) makes of the served documents and tiles")
	testenv.RequireChromium(t)
	wmsURL := testenv.RequireWMS(t)
	// The page is served through a front that records the paths asked
	// for (and answered).
	front := httptest.NewUnstartedServer(nil)
	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(vectorLayers, wmsURL, "http://127.0.0.1:1"), SeedThreads: 2,
		Env: map[string]string{"TILECACHE_PUBLIC_URL": "http://" + front.Listener.Addr().String()}})
	var (
		mu    sync.Mutex
		asked = map[string]int{} // tile path: status
	)
	front.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		a.Local.Handler.ServeHTTP(rec, r)
		if strings.HasSuffix(r.URL.Path, ".pbf") {
			mu.Lock()
			asked[r.URL.Path] = rec.status
			mu.Unlock()
		}
	})
	front.Start()
	t.Cleanup(front.Close)
	wantDone(t, waitFinished(t, a, ids(seedReq(t, a, "wms:vector", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":3,
		"format":"application/vnd.mapbox-vector-tile","threadCount":2}}`)), 120*time.Second))
	set := -1
	testenv.Eventually(t, 10*time.Second, "index.json to list the vector tile set and the page to be written", func() bool {
		res := a.DoAuth(t, "", "", "GET", "/index.json", "")
		var idx struct {
			TileSets []struct {
				Format string `json:"format"`
			} `json:"tileSets"`
		}
		if res.Status != 200 || json.Unmarshal([]byte(res.Body), &idx) != nil {
			return false
		}
		for i, ts := range idx.TileSets {
			if ts.Format == vectortile.MVT {
				set = i
			}
		}
		return set >= 0 && a.DoAuth(t, "", "", "GET", "/", "").Status == 200
	})
	stored := map[string]bool{}
	for _, k := range a.TileKeys(t, "wms:vector/") {
		stored[k] = true
	}
	// The page's palette: polygons, lines, points (TileJSON's order), and
	// its background.
	lines, points := color.RGBA{0x1b, 0x99, 0x8b, 0xff}, color.RGBA{0x2e, 0x5e, 0xaa, 0xff}
	bg := color.RGBA{0xf4, 0xf1, 0xea, 0xff}
	// The tile set's archive, published by an export: the page's third
	// source.
	ex := exportReq(t, a, "wms:vector", `{"exportRequest":{"gridSetId":"EPSG:900913","format":"application/vnd.mapbox-vector-tile",
		"zoomStart":0,"zoomStop":3,"archive":"pmtiles","publish":true}}`)
	if tk := waitExport(t, a, ex.Task, 60*time.Second); tk.Status != task.Done {
		t.Fatalf("the export of the vector tile set: %+v", tk)
	}
	testenv.Eventually(t, 10*time.Second, "index.json to list the vector tile set's archive", func() bool {
		res := a.DoAuth(t, "", "", "GET", "/index.json", "")
		var idx struct {
			TileSets []struct {
				PMTiles string `json:"pmtiles"`
			} `json:"tileSets"`
		}
		return res.Status == 200 && json.Unmarshal([]byte(res.Body), &idx) == nil && len(idx.TileSets) > set && idx.TileSets[set].PMTiles != ""
	})
	page := browsertest.Open(t, fmt.Sprintf("%s/#set=%d&z=2&lat=20&lon=10", front.URL, set), 120*time.Second)
	for _, source := range []string{"tms", "xyz", "pmtiles"} {
		if source != "tms" {
			page.Eval(t, fmt.Sprintf(`document.body.removeAttribute("data-ready"); location.hash = "set=%d&z=2&lat=20&lon=10&source=%s"; ""`, set, source))
		}
		page.WaitFor(t, fmt.Sprintf(`body[data-ready="%d"][data-renderer="vector"]`, set))
		var box struct{ Left, Top, Width, Height float64 }
		if err := json.Unmarshal([]byte(page.Eval(t, `(function () {
			var r = document.querySelector("#map canvas").getBoundingClientRect();
			return JSON.stringify({Left: r.left, Top: r.top, Width: r.width, Height: r.height});
		})()`)), &box); err != nil || box.Width < 200 || box.Height < 200 {
			t.Fatalf("%s: the map's canvas: %+v %v", source, box, err)
		}
		shot := screenshot(t, page)
		if dir := os.Getenv("TILECACHE_TEST_SHOTS"); dir != "" {
			os.WriteFile(filepath.Join(dir, "vector-"+source+".png"), page.Screenshot(t), 0o644)
		}
		var total, other, nLines, nPoints int
		for y := int(box.Top); y < int(box.Top+box.Height); y++ {
			for x := int(box.Left); x < int(box.Left+box.Width); x++ {
				c := color.RGBAModel.Convert(shot.At(x, y)).(color.RGBA)
				total++
				switch {
				case near(c, bg):
				case near(c, lines):
					nLines++
					other++
				case near(c, points):
					nPoints++
					other++
				default:
					other++
				}
			}
		}
		t.Logf("%s: %d×%d canvas: %d pixels not background (%.1f%%), %d of the lines' colour, %d of the points'",
			source, int(box.Width), int(box.Height), other, 100*float64(other)/float64(total), nLines, nPoints)
		if float64(other) < 0.05*float64(total) || nLines < 50 || nPoints < 50 {
			t.Errorf("%s: the page drew %d of %d pixels other than the background, %d of the lines' colour and %d of the points'; want 5%% and 50 each",
				source, other, total, nLines, nPoints)
		}
		// Every tile asked for is a stored key (through the source's paths:
		// rows from the bottom for TMS, from the top for XYZ), answered 200;
		// from the archive, none is.
		mu.Lock()
		if source == "pmtiles" {
			if len(asked) != 0 {
				t.Errorf("pmtiles: the page asked for stored tiles %v while drawing the archive", asked)
			}
			mu.Unlock()
			continue
		}
		if len(asked) == 0 {
			t.Errorf("%s: the page asked for no vector tile", source)
		}
		for path, status := range asked {
			var z int
			var x, y int64
			var key string
			if source == "tms" {
				key = strings.TrimPrefix(path, "/")
				_, err := fmt.Sscanf(strings.TrimPrefix(path, "/wms:vector/EPSG:900913/mapbox-vectortile/default/"), "%d/%d/%d.pbf", &z, &x, &y)
				if err != nil {
					t.Errorf("tms: the page asked for %s, not a stored key's path", path)
				}
			} else {
				_, err := fmt.Sscanf(strings.TrimPrefix(path, "/xyz/wms:vector/EPSG:900913/mapbox-vectortile/default/"), "%d/%d/%d.pbf", &z, &x, &y)
				if err != nil {
					t.Errorf("xyz: the page asked for %s, not an XYZ path", path)
				}
				key = fmt.Sprintf("wms:vector/EPSG:900913/mapbox-vectortile/default/%d/%d/%d.pbf", z, x, int64(1)<<z-1-y)
			}
			if !stored[key] || status != 200 {
				t.Errorf("%s: the page asked for %s (key %s, stored: %v), answered %d", source, path, key, stored[key], status)
			}
		}
		t.Logf("%s: %d vector tiles asked for", source, len(asked))
		clear(asked)
		mu.Unlock()
	}
	for _, r := range page.Requests() {
		if !strings.HasPrefix(r.URL, front.URL+"/") && !strings.HasPrefix(r.URL, "data:") && !strings.HasPrefix(r.URL, "blob:") {
			t.Errorf("request to another host: %s", r.URL)
		}
	}
	if c := page.Console(); len(c) > 0 {
		t.Errorf("the page logged errors or threw: %q", c)
	}
}

// statusRecorder remembers the status a handler answered.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// near: c is within a few levels of want in every channel.
func near(c, want color.RGBA) bool {
	d := func(a, b uint8) float64 { return math.Abs(float64(a) - float64(b)) }
	return d(c.R, want.R) <= 6 && d(c.G, want.G) <= 6 && d(c.B, want.B) <= 6
}
