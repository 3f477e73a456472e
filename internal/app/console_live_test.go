package app_test

import (
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// layerRunning reports whether a task of layer is pending or running.
func layerRunning(t *testing.T, a *apptest.App, layer string) bool {
	t.Helper()
	var list struct {
		Rows [][5]int64 `json:"long-array-array"`
	}
	if err := json.Unmarshal([]byte(a.Do(t, http.MethodGet, "/rest/seed/"+layer+".json", "").Body), &list); err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Rows {
		if r[4] == 0 || r[4] == 1 {
			return true
		}
	}
	return false
}

// TestConsoleLiveCache leaves the seed page open on slow:world (a tile
// every 40 ms a lane) while another client seeds it: without a reload,
// the stored tiles appear on the map while the seed runs, the coverage
// map's pages grow, and once it ends the estimate knows the layer's rate
// and tile size, and its follow-up stops asking. The estimate prices the
// AWS services on AWS only. The coverage map opens at the
// deepest stored level, its legend in kilobytes and tiles. Idle, with
// both maps following a layer, the page keeps to its budget of 3
// requests in 30 s.
func TestConsoleLiveCache(t *testing.T) {
	t.Parallel()
	// On both backends: what the page shows comes from the task and usage stores.
	a := apptest.Start(t, apptest.Options{})
	page := openConsole(t, a, "#seed")
	page.Eval(t, `(() => { window.notReloaded = true; return ''; })()`)
	waitEval(t, page, `window.consoleSeed.gridSet === 'EPSG:4326' && window.consoleSeed.map.getSize()[0] > 0`, 10*time.Second)
	page.Eval(t, `(s => { s.value = 'slow:world'; s.dispatchEvent(new Event('change')); return ''; })(document.querySelector('#seed-form select'))`)
	waitEstimate(t, page)
	est := page.Eval(t, `document.querySelector('#estimate').textContent`)
	if !strings.Contains(est, "unknown") {
		t.Errorf("before any seed, the estimate knows the rate and size: %q", est)
	}
	// The costs of the backend running: AWS's services on AWS, none here.
	for _, aws := range []string{"S3", "DynamoDB", "SQS", "$"} {
		if named := strings.Contains(est, aws); named != apptest.AWSPass() {
			t.Errorf("the estimate on the %s backend names %q: %v: %q", backendOf(a), aws, named, est)
		}
	}
	// Level 3 (16×8 tiles), whose tiles a seed of levels 0-4 writes
	// after the 42 of levels 0-2, and before the 512 of level 4.
	page.Eval(t, `(v => { v.setZoom(3); v.setCenter([0, 0]); return ''; })(window.consoleSeed.map.getView())`)
	settled := `window.consoleBase.asked > 0 && window.consoleBase.asked === window.consoleBase.found + window.consoleBase.missing + window.consoleBase.failed`
	waitEval(t, page, settled+` && window.consoleBase.missing > 0`, 20*time.Second)
	if page.Eval(t, `String(window.consoleBase.found)`) != "0" {
		t.Fatalf("tiles found before the seed: %s", page.Eval(t, `JSON.stringify(window.consoleBase)`))
	}

	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":4,"threadCount":2}}`)
	defer a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	t.Logf("seeding slow:world levels 0-4: %d tasks", len(rows))
	// Found while it runs (the page learns of the seed from the task
	// list it polls, within 10 s).
	start := time.Now()
	waitEval(t, page, `window.consoleBase.found > 0`, 40*time.Second)
	seenRunning := layerRunning(t, a, "slow:world")
	var base struct{ Asked, Found, Missing, Failed int }
	evalJSON(t, page, `window.consoleBase`, &base)
	t.Logf("stored tiles first found after %v: %+v", time.Since(start).Round(time.Millisecond), base)
	if base.Found == 0 {
		t.Fatalf("no stored tile shown %v after the seed started: %+v", time.Since(start), base)
	}
	if !seenRunning {
		t.Errorf("the stored tiles were shown only once the seed had ended")
	}

	// The coverage map, while the seed runs, grows on its own.
	page.Eval(t, `(() => { location.hash = '#quota'; return ''; })()`)
	waitEval(t, page, `!document.getElementById('page-quota').hidden`, 5*time.Second)
	page.Eval(t, `(() => { const s = document.querySelector('#coverage-form select'); s.value = 'slow:world'; s.dispatchEvent(new Event('change')); document.getElementById('coverage-zoom').value = '4'; return ''; })()`)
	page.Do(t, "show the pages", chromedp.Click(chromedp.CSS(`#coverage-show`)))
	waitEval(t, page, `window.consoleQuota.pages && window.consoleQuota.pages.zoom === 4`, 10*time.Second)
	tilesExpr := `String(window.consoleQuota.pages.pages.reduce((s, p) => s + p.tiles, 0))`
	first := page.Eval(t, tilesExpr)
	grown := false
	testenv.Eventually(t, 90*time.Second, "the coverage map grown or the seed ended", func() bool {
		if !layerRunning(t, a, "slow:world") {
			return true // grown stays false: it must grow while the seed runs
		}
		grown = page.Eval(t, tilesExpr) != first
		return grown
	})
	t.Logf("coverage at level 4: %s tiles, then %s", first, page.Eval(t, tilesExpr))
	if !grown {
		t.Errorf("the coverage map stayed at %s tiles while the seed ran", first)
	}
	waitLive(t, a, 0, 90*time.Second)
	waitEval(t, page, tilesExpr+` === '512'`, 15*time.Second)

	// Opened anew, at the deepest stored level, the legend in human units.
	page.Eval(t, `(() => { const z = document.getElementById('coverage-zoom'); z.value = ''; return ''; })()`)
	page.Do(t, "show the pages", chromedp.Click(chromedp.CSS(`#coverage-show`)))
	waitEval(t, page, `document.getElementById('coverage-zoom').value === '4' && window.consoleQuota.pages.zoom === 4 && document.getElementById('coverage-legend')`, 10*time.Second)
	if l := page.Eval(t, `document.getElementById('coverage-legend').textContent`); !regexp.MustCompile(`\d(\.\d+)? (B|KiB|MiB) .*\d(\.\d+)? (B|KiB|MiB)`).MatchString(l) {
		t.Errorf("the legend by bytes reads %q", l)
	}
	page.Eval(t, `(s => { s.value = 'tiles'; s.dispatchEvent(new Event('change')); return ''; })(document.querySelectorAll('#coverage-form select')[3])`)
	if l := page.Eval(t, `document.getElementById('coverage-legend').textContent`); !regexp.MustCompile(`\d+ tiles?\b.*\d+ tiles?`).MatchString(l) {
		t.Errorf("the legend by tiles reads %q", l)
	}

	// Back on the seed map: every tile shown is found, and the estimate
	// knows the layer's rate and size.
	page.Eval(t, `(() => { location.hash = '#seed'; return ''; })()`)
	waitEval(t, page, settled+` && !document.querySelector('#estimate').hasAttribute('aria-busy')`, 20*time.Second)
	waitEval(t, page, `/tiles\/s/.test(document.querySelector('#estimate').textContent) && /a tile/.test(document.querySelector('#estimate').textContent)`, 15*time.Second)
	t.Logf("estimate after the seed: %s", page.Eval(t, `document.querySelector('#estimate dl').textContent`))
	// The layer is followed no more once its seed has ended: no poll is
	// still to come (the idle budget below counts the requests).
	waitEval(t, page, `window.consoleLive.following === 0`, 5*time.Second)
	if page.Eval(t, `String(window.notReloaded === true)`) != "true" {
		t.Error("the page was reloaded")
	}

	// Idle: both maps follow slow:world, nothing runs.
	page.RunVirtualTime(t, 2*time.Second)
	from := len(page.Requests())
	page.RunVirtualTime(t, 30*time.Second)
	n, urls := restRequests(page, from)
	t.Logf("%d requests in 30 s idle on the seed page: %q", n, urls)
	if n > 3 {
		t.Errorf("%d requests in 30 s with nothing running, budget 3", n)
	}
	noConsoleErrors(t, page)
}

// TestConsoleBackgrounds: another layer's stored tiles as the seed map's
// background, read stored-only; and an operator's base map
// (TILECACHE_CONSOLE_BASE_MAP, here a tile server on 127.0.0.1), whose
// origin the console's policy allows, drawn on demand without a
// violation.
func TestConsoleBackgrounds(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "a console page in Chromium (the map is the page's own)")
	var served atomic.Int64
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	for i := range img.Pix {
		img.Pix[i] = 200
	}
	img.Set(0, 0, color.Black)
	tiles := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "image/png")
		_ = png.Encode(w, img)
	}))
	defer tiles.Close()
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_CONSOLE_BASE_MAP": tiles.URL + "/{z}/{x}/{y}.png"}})
	if csp := a.Do(t, http.MethodGet, "/console/", "").Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src 'self' data: blob: "+tiles.URL+";") {
		t.Errorf("the policy %q does not allow the base map's %s", csp, tiles.URL)
	}
	wantDone(t, seedAndWait(t, a, "topp:states", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"format":"image/png"}}`))
	page := openConsole(t, a, "#seed")
	waitEval(t, page, `window.consoleSeed.gridSet === 'EPSG:4326' && window.consoleSeed.map.getSize()[0] > 0`, 10*time.Second)

	// topp:states under demo:world's seed form (whose own stored tiles
	// are read first).
	settled := `window.consoleBase.asked > 0 && window.consoleBase.asked === window.consoleBase.found + window.consoleBase.missing + window.consoleBase.failed`
	waitEval(t, page, settled, 10*time.Second)
	from := len(page.Requests())
	page.Eval(t, `(s => { s.value = 'topp:states'; s.dispatchEvent(new Event('change')); return ''; })(document.getElementById('bg-layer'))`)
	waitEval(t, page, settled+` && window.consoleBase.found > 0`, 20*time.Second)
	var other int
	for _, r := range page.Requests()[from:] {
		if strings.Contains(r.URL, "/tiles/demo:world/") {
			t.Errorf("the background read %s", r.URL)
		}
		if strings.Contains(r.URL, "/tiles/topp:states/EPSG:4326/png/") {
			other++
		}
	}
	if other == 0 || served.Load() != 0 {
		t.Errorf("%d reads of topp:states's tiles, %d of the base map before it was asked for", other, served.Load())
	}

	// The base map, on demand, in EPSG:4326 and in the Mercator.
	page.Do(t, "show the base map", chromedp.Click(chromedp.CSS(`#base-map`)))
	waitEval(t, page, `window.consoleSeed.gridMap.baseMap.getVisible() && !window.consoleSeed.gridMap.outlineLayer.getVisible()`, 5*time.Second)
	within(t, 15*time.Second, "a base map tile served", func() bool { return served.Load() > 0 })
	setSeedGrid(t, page, "EPSG:900913")
	before := served.Load()
	page.Eval(t, `(v => { v.setZoom(4); return ''; })(window.consoleSeed.map.getView())`)
	within(t, 15*time.Second, "a base map tile served in the Mercator", func() bool { return served.Load() > before })
	t.Logf("base map tiles served: %d", served.Load())
	if served.Load() == before || before == 0 {
		t.Errorf("base map tiles served: %d in EPSG:4326, %d in all", before, served.Load())
	}
	if page.Eval(t, `String(window.consoleSeed.gridMap.baseMap.getVisible())`) != "true" {
		t.Error("the base map was hidden by the change of grid set")
	}
	noConsoleErrors(t, page)
}
