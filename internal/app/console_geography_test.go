package app_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/browsertest"
	"tilecache/internal/testkit/testenv"
)

// TestConsoleSeedMapGeography opens the seed page in Chromium and checks
// what helps find a place on its map, in EPSG:4326 and then in the
// spherical Mercator (EPSG:900913): the world's outline built into the
// bundle is drawn (features, and no request for it), the cursor's
// coordinates are shown after a mouse move (in the grid set's CRS and,
// in the Mercator, in longitude and latitude), a scale line is there,
// the graticule can be shown, and the view, panned far west, stays
// inside the grid set's extent (no copy of the world west of −180°).
func TestConsoleSeedMapGeography(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "a console page in Chromium (the map is the page's own)")
	a := apptest.Start(t, apptest.Options{})
	page := openConsole(t, a, "#seed")
	waitEval(t, page, `window.consoleSeed.gridSet === 'EPSG:4326'`, 10*time.Second)
	waitEval(t, page, `window.consoleSeed.map && window.consoleSeed.map.getSize() && window.consoleSeed.map.getSize()[0] > 0`, 10*time.Second)

	// window.consoleSeed.gridMap is the page's GridMap (web/console/map.js).
	checkGrid := func(t *testing.T, name string, cursor *regexp.Regexp) {
		t.Helper()
		// The outline: the land and the borders, inside the grid set.
		var feats struct {
			N      int
			Extent [4]float64
			Grid   [4]float64
		}
		evalJSON(t, page, `(() => { const gm = window.consoleSeed.gridMap, s = gm.outlineLayer.getSource(); return {N: s.getFeatures().length, Extent: s.getExtent(), Grid: gm.grid.extent}; })()`, &feats)
		if feats.N != 2 {
			t.Errorf("%s: the outline has %d features, want 2 (land, borders)", name, feats.N)
		}
		g := feats.Grid
		tol := (g[2] - g[0]) * 1e-6
		if feats.Extent[0] < g[0]-tol || feats.Extent[1] < g[1]-tol || feats.Extent[2] > g[2]+tol || feats.Extent[3] > g[3]+tol || feats.Extent[2]-feats.Extent[0] < (g[2]-g[0])*0.9 {
			t.Errorf("%s: the outline spans %v, the grid set %v", name, feats.Extent, g)
		}

		// No source repeats the world.
		if w := page.Eval(t, `(() => { const gm = window.consoleSeed.gridMap; return String([gm.tiles.getSource(), gm.outlineLayer.getSource(), gm.source].map(s => s.getWrapX ? s.getWrapX() : s.wrapX_)); })()`); w != "false,false,false" {
			t.Errorf("%s: the grid, outline and drawing sources wrap the world: %s", name, w)
		}

		// The cursor's coordinates after a mouse move.
		var box struct{ X, Y, W, H float64 }
		evalJSON(t, page, `(() => { const r = document.querySelector('#seed-map .ol-viewport').getBoundingClientRect(); return {X: r.left, Y: r.top, W: r.width, H: r.height}; })()`, &box)
		page.Do(t, "move the mouse over the map", chromedp.MouseEvent(chromedp.MouseMoved, box.X+box.W/3, box.Y+box.H/2))
		waitEval(t, page, `/\d\.\d/.test(document.querySelector('#seed-cursor').textContent)`, 5*time.Second)
		if s := page.Eval(t, `document.querySelector('#seed-cursor').textContent`); !cursor.MatchString(s) {
			t.Errorf("%s: the cursor shows %q, want %v", name, s, cursor)
		}
		// Under the map, where it is read (not over the page's header).
		var under bool
		evalJSON(t, page, `(() => { const m = document.querySelector('#seed-map').getBoundingClientRect(), c = document.querySelector('#seed-cursor .ol-mouse-position').getBoundingClientRect(); return c.top >= m.bottom - 1 && c.left >= m.left - 1; })()`, &under)
		if !under {
			t.Errorf("%s: the cursor's coordinates are not under the map", name)
		}
		if n := page.Eval(t, `String(document.querySelectorAll('#seed-map .ol-scale-line').length)`); n != "1" {
			t.Errorf("%s: %s scale lines", name, n)
		}

		// Zoomed in and panned far west, the view stays inside the grid
		// set's extent.
		var v struct {
			Extent [4]float64
			Res    float64
		}
		evalJSON(t, page, `(() => { const m = window.consoleSeed.map, v = m.getView(); v.setZoom(2); const [w] = window.consoleSeed.gridMap.grid.extent;
			v.setCenter([w * 3, 0]); m.renderSync(); return {Extent: v.calculateExtent(m.getSize()), Res: v.getResolution()}; })()`, &v)
		if v.Extent[0] < g[0]-v.Res {
			t.Errorf("%s: panned west, the view shows %v, west of the grid set's %v", name, v.Extent, g)
		}
		if math.Abs(v.Extent[0]-g[0]) > v.Res {
			t.Errorf("%s: panned west, the view shows %v, not the grid set's west edge %g", name, v.Extent, g[0])
		}
	}

	t.Run("EPSG:4326", func(t *testing.T) {
		checkGrid(t, "EPSG:4326", regexp.MustCompile(`^EPSG:4326 -?\d+\.\d{6}, -?\d+\.\d{6}$`))
	})

	// The graticule, shown on demand.
	page.Do(t, "show the graticule", chromedp.Click(chromedp.CSS(`#graticule`)))
	waitEval(t, page, `window.consoleSeed.gridMap.graticule.getVisible()`, 5*time.Second)

	t.Run("EPSG:900913", func(t *testing.T) {
		page.Eval(t, `(() => { const e = document.querySelectorAll('#page-seed select')[1]; e.value = 'EPSG:900913'; e.dispatchEvent(new Event('change', {bubbles: true})); return ''; })()`)
		waitEval(t, page, `window.consoleSeed.gridSet === 'EPSG:900913'`, 10*time.Second)
		checkGrid(t, "EPSG:900913", regexp.MustCompile(`^EPSG:900913 -?\d+\.\d{2}, -?\d+\.\d{2} · \d+\.\d{5}° [EW], \d+\.\d{5}° [NS]$`))
		if page.Eval(t, `String(window.consoleSeed.gridMap.graticule.getVisible())`) != "true" {
			t.Errorf("the graticule was hidden by the change of grid set")
		}
	})

	// Nothing of the outline was asked of the server or elsewhere.
	outlineURL := regexp.MustCompile(`(?i)topojson|world-atlas|countries|land-`)
	for _, r := range page.Requests() {
		if outlineURL.MatchString(r.URL) {
			t.Errorf("the page asked for %s", r.URL)
		}
	}
	noConsoleErrors(t, page)
}

// mercator is the spherical Mercator's coordinate of longitude, latitude.
func mercator(lon, lat float64) [2]float64 {
	const r = 6378137.0
	return [2]float64{r * lon * math.Pi / 180, r * math.Log(math.Tan(math.Pi/4+lat*math.Pi/360))}
}

// setSeedGrid chooses grid set name on the seed page and waits for its map.
func setSeedGrid(t *testing.T, page *browsertest.Page, name string) {
	t.Helper()
	page.Eval(t, `(() => { const s = document.querySelectorAll('#seed-form select')[1]; s.value = '`+name+`'; s.dispatchEvent(new Event('change')); return ''; })()`)
	waitEval(t, page, `window.consoleSeed.gridSet === '`+name+`'`, 10*time.Second)
}

// waitEstimate waits for the seed page's estimate to be shown for the
// form as it is (not busy, and asked after the form last changed).
func waitEstimate(t *testing.T, page *browsertest.Page) {
	t.Helper()
	waitEval(t, page, `!window.consoleSeed.queued && document.querySelector('#estimate').dataset.tiles && !document.querySelector('#estimate').hasAttribute('aria-busy')`, 15*time.Second)
}

// TestConsoleSeedAreaAcrossGridSets draws on the seed page's map, over
// the world's outline, and checks that the area is kept, carried to the
// new CRS, when the grid set changes: a box drawn with the mouse in
// EPSG:4326 becomes the same box in the spherical Mercator (its corners'
// coordinates, found here independently) and back; a polygon drawn with
// clicks too, vertex by vertex; an uploaded GeoJSON is drawn in either
// CRS. KML is read in the browser and sent as the GeoJSON it holds. Each
// time the page's estimate equals POST /rest/estimate's for the request.
func TestConsoleSeedAreaAcrossGridSets(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "a console page in Chromium (the map is the page's own)")
	a := apptest.Start(t, apptest.Options{})
	dir := t.TempDir()
	geo := filepath.Join(dir, "norway.geojson")
	if err := os.WriteFile(geo, []byte(`{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[4.9,58.0],[31.1,69.8],[10,71],[4.9,58.0]]]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	kml := filepath.Join(dir, "norway.kml")
	if err := os.WriteFile(kml, []byte(`<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><Placemark><name>N</name><Polygon><outerBoundaryIs><LinearRing>
<coordinates>4.9,58.0,0 31.1,69.8,0 10,71,0 4.9,58.0,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark></Document></kml>`), 0o644); err != nil {
		t.Fatal(err)
	}
	page := openConsole(t, a, "#seed")
	waitEval(t, page, `window.consoleSeed.gridSet === 'EPSG:4326' && window.consoleSeed.map.getSize()[0] > 0`, 10*time.Second)
	if page.Eval(t, `String(window.consoleSeed.gridMap.outlineLayer.getSource().getFeatures().length)`) != "2" {
		t.Fatal("no outline under the map")
	}
	if page.Eval(t, `String(!!document.querySelector('#base-map'))`) != "false" {
		t.Error("a base map is offered with none configured")
	}
	for _, r := range page.Requests() {
		if !strings.HasPrefix(r.URL, a.URL) && !strings.HasPrefix(r.URL, "data:") && !strings.HasPrefix(r.URL, "blob:") {
			t.Errorf("the page asked %s, outside the service", r.URL)
		}
	}

	bounds := func() []float64 {
		var b []float64
		evalJSON(t, page, `Array.from(document.querySelectorAll('#area-box-fields input')).map(i => Number(i.value))`, &b)
		return b
	}
	near := func(what string, got, want []float64, tol float64) {
		t.Helper()
		for i := range want {
			if math.Abs(got[i]-want[i]) > tol {
				t.Errorf("%s: %v, want %v (±%g)", what, got, want, tol)
				return
			}
		}
	}

	// A box, drawn with the mouse (click, move, click) on the outline.
	page.Do(t, "choose a box", chromedp.Click(chromedp.CSS(`#area-box`)))
	clickMap(t, page, "#seed-map", [][2]float64{{200, 120}, {330, 220}})
	waitEval(t, page, `document.querySelector('#area-box-fields input').value !== ''`, 5*time.Second)
	waitEstimate(t, page)
	drawn := bounds()
	t.Logf("box drawn: %v", drawn)
	if drawn[0] >= drawn[2] || drawn[1] >= drawn[3] {
		t.Fatalf("the box drawn has bounds %v", drawn)
	}
	compareEstimate(t, a, page, "application/json", "")

	setSeedGrid(t, page, "EPSG:900913")
	waitEstimate(t, page)
	lo, hi := mercator(drawn[0], drawn[1]), mercator(drawn[2], drawn[3])
	near("the box in EPSG:900913", bounds(), []float64{lo[0], lo[1], hi[0], hi[1]}, 0.02)
	if n := page.Eval(t, `String(window.consoleSeed.gridMap.source.getFeatures().length)`); n != "1" {
		t.Errorf("the box is drawn %s times in EPSG:900913", n)
	}
	compareEstimate(t, a, page, "application/json", "")
	setSeedGrid(t, page, "EPSG:4326")
	waitEstimate(t, page)
	near("the box back in EPSG:4326", bounds(), drawn, 1e-6)

	// A polygon, drawn with clicks.
	page.Do(t, "choose a polygon", chromedp.Click(chromedp.CSS(`#area-polygon`)))
	clickMap(t, page, "#seed-map", [][2]float64{{180, 150}, {320, 140}, {260, 250}, {180, 150}})
	waitEval(t, page, `window.consoleSeed.gridMap.source.getFeatures().length === 1`, 5*time.Second)
	waitEstimate(t, page)
	var tri [][2]float64
	evalJSON(t, page, `window.consoleSeed.gridMap.source.getFeatures()[0].getGeometry().getCoordinates()[0]`, &tri)
	compareEstimate(t, a, page, "application/json", "")
	setSeedGrid(t, page, "EPSG:900913")
	waitEstimate(t, page)
	var ring [][2]float64
	evalJSON(t, page, `window.consoleSeed.gridMap.source.getFeatures()[0].getGeometry().getCoordinates()[0]`, &ring)
	if len(ring) != 4 {
		t.Fatalf("the polygon in EPSG:900913 has the ring %v, want the 3 corners closed", ring)
	}
	for i := range 3 {
		m := mercator(tri[i][0], tri[i][1])
		near(fmt.Sprintf("corner %d in EPSG:900913", i), ring[i][:], m[:], 0.01)
	}
	compareEstimate(t, a, page, "application/json", "")

	// An uploaded GeoJSON, drawn in the grid set's CRS, and again in
	// the other's.
	page.Do(t, "choose a file", chromedp.Click(chromedp.CSS(`#area-file`)))
	page.Do(t, "upload", chromedp.SetUploadFiles(chromedp.CSS(`#area-file-fields input[type=file]`), []string{geo}))
	waitEval(t, page, `window.consoleSeed.upload && window.consoleSeed.upload.kind === 'geojson'`, 5*time.Second)
	waitEstimate(t, page)
	var ext [4]float64
	evalJSON(t, page, `window.consoleSeed.gridMap.source.getExtent()`, &ext)
	lo, hi = mercator(4.9, 58), mercator(31.1, 71)
	near("the GeoJSON in EPSG:900913", ext[:], []float64{lo[0], lo[1], hi[0], hi[1]}, 0.01)
	compareEstimate(t, a, page, "application/json", "")
	setSeedGrid(t, page, "EPSG:4326")
	waitEstimate(t, page)
	evalJSON(t, page, `window.consoleSeed.gridMap.source.getExtent()`, &ext)
	near("the GeoJSON in EPSG:4326", ext[:], []float64{4.9, 58, 31.1, 71}, 1e-9)
	compareEstimate(t, a, page, "application/json", "")
	geoTiles := page.Eval(t, `document.querySelector('#estimate').dataset.tiles`)

	// The same polygon in KML: read here, sent as GeoJSON, the same tiles.
	page.Do(t, "upload KML", chromedp.SetUploadFiles(chromedp.CSS(`#area-file-fields input[type=file]`), []string{kml}))
	waitEval(t, page, `window.consoleSeed.upload && window.consoleSeed.upload.kind === 'kml'`, 5*time.Second)
	waitEstimate(t, page)
	evalJSON(t, page, `window.consoleSeed.gridMap.source.getExtent()`, &ext)
	near("the KML in EPSG:4326", ext[:], []float64{4.9, 58, 31.1, 71}, 1e-9)
	var sent struct {
		SeedRequest struct{ Geometry string } `json:"seedRequest"`
	}
	evalJSON(t, page, `window.consoleSeed.lastEstimateRequest`, &sent)
	if !strings.Contains(sent.SeedRequest.Geometry, `"FeatureCollection"`) || !strings.Contains(sent.SeedRequest.Geometry, `[31.1,69.8]`) {
		t.Errorf("the KML was sent as %q, want its GeoJSON", sent.SeedRequest.Geometry)
	}
	compareEstimate(t, a, page, "application/json", "")
	if got := page.Eval(t, `document.querySelector('#estimate').dataset.tiles`); got != geoTiles {
		t.Errorf("the KML estimates %s tiles, the same polygon in GeoJSON %s", got, geoTiles)
	}
	axeClean(t, page, "the seed form with an uploaded area")
	noConsoleErrors(t, page)
}

// TestConsoleSeedFormRefusals: the form refuses, with the reason, a
// request whose levels exceed the layer's ("to level 40" was clamped to
// the last level) or whose area leaves the grid set (a box west of
// −180°); Submit then sends nothing and no task is made. "Go to" shows a
// coordinate typed in longitude and latitude on the Mercator map, and a
// layer's extent.
func TestConsoleSeedFormRefusals(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "a console page in Chromium (the form's checks are the page's own)")
	a := apptest.Start(t, apptest.Options{})
	page := openConsole(t, a, "#seed")
	waitEval(t, page, `window.consoleSeed.gridSet === 'EPSG:4326' && window.consoleSeed.map.getSize()[0] > 0`, 10*time.Second)
	page.Eval(t, `(s => { s.value = 'topp:states'; s.dispatchEvent(new Event('change')); return ''; })(document.querySelector('#seed-form select'))`)
	waitEstimate(t, page)

	setValue := func(sel, v string) {
		page.Eval(t, `(e => { e.value = '`+v+`'; e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true})); return ''; })(document.querySelector('`+sel+`'))`)
	}
	refused := func(want string) {
		t.Helper()
		waitEval(t, page, `!window.consoleSeed.queued && document.querySelector('#estimate .refused')`, 10*time.Second)
		if got := page.Eval(t, `document.querySelector('#estimate .refused').textContent`); got != want {
			t.Errorf("the estimate says %q, want %q", got, want)
		}
		page.Do(t, "submit", chromedp.Click(chromedp.CSS(`#seed-submit`)))
		waitEval(t, page, `document.getElementById('status').textContent !== ''`, 5*time.Second)
		if got := page.Eval(t, `document.getElementById('status').textContent`); got != want {
			t.Errorf("Submit says %q, want %q", got, want)
		}
		if page.Eval(t, `location.hash`) != "#seed" {
			t.Errorf("a refused request left the page for %s", page.Eval(t, `location.hash`))
		}
		for _, r := range page.Requests() {
			if strings.Contains(r.URL, "/rest/seed/") && !strings.HasSuffix(r.URL, ".json") {
				t.Errorf("the page asked %s", r.URL)
			}
		}
		if rows := a.Do(t, http.MethodGet, "/rest/seed.json", "").Body; !strings.Contains(rows, `"long-array-array":[]`) {
			t.Errorf("tasks after a refused request: %s", rows)
		}
	}
	// topp:states has levels 0 to 12 in EPSG:4326.
	setValue(`#seed-form .row input[type=number]:nth-of-type(1)`, "0")
	page.Eval(t, `(() => { const z = document.querySelectorAll('#seed-form .row input[type=number]'); z[1].value = '40'; z[1].dispatchEvent(new Event('input', {bubbles: true})); return ''; })()`)
	refused("To level 40 is beyond the layer's levels in EPSG:4326: 0 to 12.")
	page.Eval(t, `(() => { const z = document.querySelectorAll('#seed-form .row input[type=number]'); z[1].value = '2'; z[1].dispatchEvent(new Event('input', {bubbles: true})); return ''; })()`)
	waitEstimate(t, page)

	// A box west of −180° (typed: the map keeps the drawing inside).
	page.Do(t, "choose a box", chromedp.Click(chromedp.CSS(`#area-box`)))
	page.Eval(t, `(() => { const b = document.querySelectorAll('#area-box-fields input'); [-251, -10, -169, 10].forEach((v, i) => { b[i].value = String(v); b[i].dispatchEvent(new Event('input', {bubbles: true})); b[i].dispatchEvent(new Event('change', {bubbles: true})); }); return ''; })()`)
	refused("The area (-251, -10, -169, 10) leaves grid set EPSG:4326's extent (-180, -90, 180, 90): keep it inside.")
	axeClean(t, page, "the seed form refusing a box")
	page.Eval(t, `(() => { const b = document.querySelectorAll('#area-box-fields input'); [-100, 30, -90, 40].forEach((v, i) => { b[i].value = String(v); b[i].dispatchEvent(new Event('input', {bubbles: true})); b[i].dispatchEvent(new Event('change', {bubbles: true})); }); return ''; })()`)
	waitEstimate(t, page)
	if page.Eval(t, `String(!!document.querySelector('#estimate .refused'))`) != "false" {
		t.Error("a box inside the grid set is refused")
	}
	compareEstimateOf(t, a, page, "topp:states")

	// Go to: a coordinate in longitude and latitude on the Mercator map.
	setSeedGrid(t, page, "EPSG:900913")
	setValue(`#goto-place`, "10.75, 59.91")
	setValue(`#goto-crs`, "lonlat")
	page.Do(t, "go", chromedp.Click(chromedp.CSS(`#goto`)))
	var centre [2]float64
	evalJSON(t, page, `window.consoleSeed.map.getView().getCenter()`, &centre)
	want := mercator(10.75, 59.91)
	if math.Abs(centre[0]-want[0]) > 1 || math.Abs(centre[1]-want[1]) > 1 {
		t.Errorf("go to 10.75, 59.91: the view is centred on %v, want %v", centre, want)
	}
	// A box in the grid set's own CRS.
	setValue(`#goto-crs`, "grid")
	setValue(`#goto-place`, "-1000000 -1000000 1000000 1000000")
	page.Do(t, "go", chromedp.Click(chromedp.CSS(`#goto`)))
	var view [4]float64
	evalJSON(t, page, `window.consoleSeed.map.getView().calculateExtent(window.consoleSeed.map.getSize())`, &view)
	if view[0] > -1e6 || view[2] < 1e6 || view[2]-view[0] > 8e6 {
		t.Errorf("go to a box of ±1,000 km: the view shows %v", view)
	}
	// The layer's extent: topp:states's in EPSG:4326.
	setSeedGrid(t, page, "EPSG:4326")
	page.Do(t, "go to the layer", chromedp.Click(chromedp.CSS(`#goto-layer`)))
	evalJSON(t, page, `window.consoleSeed.map.getView().calculateExtent(window.consoleSeed.map.getSize())`, &view)
	if view[0] > -124 || view[2] < -66 || view[1] > 22 || view[3] < 50 || view[2]-view[0] > 120 {
		t.Errorf("the layer's extent: the view shows %v, want about -124, 22, -66, 50", view)
	}
	noConsoleErrors(t, page)
}

// compareEstimateOf is compareEstimate for another layer than demo:world.
func compareEstimateOf(t *testing.T, a *apptest.App, page *browsertest.Page, layer string) {
	t.Helper()
	raw := page.Eval(t, `JSON.stringify(window.consoleSeed.lastEstimateRequest)`)
	r := a.Do(t, http.MethodPost, "/rest/estimate/"+layer+".json", raw, "Content-Type", "application/json")
	var e struct{ Tiles int64 }
	if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &e) != nil || e.Tiles == 0 {
		t.Fatalf("POST estimate %s: %d %s", raw, r.Status, r.Body)
	}
	if shown := page.Eval(t, `document.querySelector('#estimate').dataset.tiles`); shown != fmt.Sprint(e.Tiles) {
		t.Errorf("the page shows %s tiles for %s, POST /rest/estimate says %d", shown, raw, e.Tiles)
	}
}

// axeClean runs axe-core on the page and fails the test on a serious or
// critical violation.
func axeClean(t *testing.T, page *browsertest.Page, name string) {
	t.Helper()
	axe, err := os.ReadFile(testenv.RequireAxe(t))
	if err != nil {
		t.Fatal(err)
	}
	page.Eval(t, string(axe)+"\n;''")
	v, err := chromedp.Run(page.Ctx(), chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe on %s: %v", name, err)
	}
	var violations []struct {
		ID, Impact, Help string
		Nodes            []struct{ Target []string }
	}
	if err := json.Unmarshal([]byte(v), &violations); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: axe found %d violations", name, len(violations))
	for _, x := range violations {
		if x.Impact == "serious" || x.Impact == "critical" {
			t.Errorf("%s: %s violation %s (%s) at %v", name, x.Impact, x.ID, x.Help, x.Nodes)
		}
	}
}
