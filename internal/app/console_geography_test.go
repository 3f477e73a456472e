package app_test

import (
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/app/apptest"
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
