package app_test

// The console's tasks, layers, quota and schedules pages in Chromium:
// requests folded into one row with what they asked, finished ones kept
// across reloads; the layers' details, preview and links to the seed
// form; layer quotas as a form with units; schedules with an area, a
// format and parameters, edited; a viewer's pages read-only; the budgets
// (an update of 128 tasks, an idle page's requests), axe-core; and the
// screenshots of docs/console (TILECACHE_CONSOLE_SCREENSHOTS=dir).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/browsertest"
	"tilecache/internal/testkit/testenv"
)

// TestConsoleRequestRows: a two-lane seed of a box and a killed seed show
// as one row each, with type, layer, tile set, levels, an area thumbnail
// inside the grid set's frame, who submitted them, elapsed time, and the
// tiles done as the server counts them (the killed one's included); the
// lanes open from the row; a reload lists both again, from the server.
func TestConsoleRequestRows(t *testing.T) {
	t.Parallel()
	// On both backends: what the page shows comes from the task and usage stores.
	a := apptest.Start(t, apptest.Options{SeedThreads: 4})
	done := seedAndWait(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"threadCount":2,"bounds":{"coords":{"double":[0,0,90,45]}}}}`)
	wantDone(t, done)
	killed := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8,"threadCount":2}}`)
	testenv.Eventually(t, 10*time.Second, "the slow request to write a tile", func() bool {
		for _, id := range ids(killed) {
			if tk, err := a.Local.Tasks.Get(t.Context(), id); err == nil && tk.Done > 0 {
				return true
			}
		}
		return false
	})
	if r := a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded"); r.Status != http.StatusOK {
		t.Fatalf("kill: %d %s", r.Status, r.Body)
	}
	check := func(page *browsertest.Page) {
		t.Helper()
		demo := fmt.Sprintf(`tbody.request[data-job="%d"]`, done[0].ID)
		slow := fmt.Sprintf(`tbody.request[data-job="%d"]`, killed[0][3])
		waitEval(t, page, `document.querySelector('#requests-finished `+demo+`[data-status="DONE"]') && document.querySelector('#requests-finished `+slow+`[data-status="KILLED"]')`, 10*time.Second)
		var cells []string
		evalJSON(t, page, `Array.from(document.querySelectorAll('`+demo+` tr.req > *')).map(c => c.textContent.trim())`, &cells)
		want := map[int]string{1: "SEED", 2: "demo:world", 3: "EPSG:4326 · image/png", 4: "z0–2", 6: apptest.User, 7: "DONE"}
		for i, w := range want {
			if i >= len(cells) || cells[i] != w {
				t.Errorf("the demo request's cell %d: %q, want %q (row %q)", i, cells[min(i, len(cells)-1)], w, cells)
			}
		}
		if !strings.HasPrefix(cells[0], "▸ 2 tasks") || !strings.HasSuffix(cells[0], fmt.Sprintf("#%d", done[0].ID)) {
			t.Errorf("the demo request's first cell %q, want its two tasks folded and its id", cells[0])
		}
		var total int64
		for _, tk := range done {
			total += tk.Total
		}
		if got, want := cells[9], fmt.Sprintf("%s / %s", commas(total), commas(total)); got != want {
			t.Errorf("the demo request's tiles %q, want %q", got, want)
		}
		if !strings.HasSuffix(cells[11], " s") {
			t.Errorf("the demo request's elapsed time %q", cells[11])
		}
		// The thumbnail: the box (0..90, 0..45) in the world's frame
		// (-180..180, -90..90) drawn 48×24: x 24..36, y 6..12.
		var box map[string]string
		evalJSON(t, page, `(r => Object.fromEntries(['x','y','width','height'].map(k => [k, r.getAttribute(k)])))(document.querySelector('`+demo+` svg.thumb rect.area'))`, &box)
		if box["x"] != "24" || box["y"] != "6" || box["width"] != "12" || box["height"] != "6" {
			t.Errorf("the area thumbnail's box %v, want x 24 y 6 width 12 height 6", box)
		}
		// Tiles done as written, the killed lanes' included (the store
		// records what a killed lane wrote after its last checkpoint
		// once it has stopped).
		var slowTiles string
		testenv.Eventually(t, 10*time.Second, "the killed request's count to be the store's", func() bool {
			var stored int64
			for _, id := range ids(killed) {
				tk, err := a.Local.Tasks.Get(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				stored += tk.Done
			}
			evalJSON(t, page, `document.querySelector('`+slow+` tr.req td:nth-child(10)').textContent`, &slowTiles)
			return stored > 0 && strings.HasPrefix(slowTiles, commas(stored)+" / ")
		})
		// Folded, then opened.
		if n := page.Eval(t, `String(Array.from(document.querySelectorAll('`+demo+` tr.lane')).filter(r => !r.hidden).length)`); n != "0" {
			t.Errorf("%s lanes shown before the row is opened, want none", n)
		}
		page.Do(t, "open", chromedp.Click(chromedp.CSS(demo+` button[aria-expanded]`)))
		waitEval(t, page, `Array.from(document.querySelectorAll('`+demo+` tr.lane')).filter(r => !r.hidden && r.dataset.outcome === 'DONE').length === 2`, 5*time.Second)
	}
	page := openConsole(t, a, "#tasks")
	check(page)
	// Another page (a reload): the server still lists them.
	check(openConsole(t, a, "#tasks"))
	noConsoleErrors(t, page)
}

// commas writes n as the page does (en-US grouping).
func commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestConsoleTaskUpdateBudget: with a request of 128 tasks listed, each
// update of the tasks page takes at most 50 ms of script, measured by
// the page's own performance marks (tasks-update measures).
func TestConsoleTaskUpdateBudget(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	a := apptest.Start(t, apptest.Options{})
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8,"threadCount":128}}`)
	defer a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	if len(rows) != 128 {
		t.Fatalf("%d tasks, want 128", len(rows))
	}
	page := openConsole(t, a, "#tasks")
	waitEval(t, page, `document.querySelectorAll('tr.lane').length === 128`, 20*time.Second)
	// Open the request: every lane's row is shown and updated.
	page.Do(t, "open", chromedp.Click(chromedp.CSS(`tbody.request button[aria-expanded="false"]`)))
	waitEval(t, page, `performance.getEntriesByName('tasks-update', 'measure').length >= 8`, 20*time.Second)
	var ms []float64
	evalJSON(t, page, `performance.getEntriesByName('tasks-update', 'measure').map(m => m.duration)`, &ms)
	sort.Float64s(ms)
	median, worst := ms[len(ms)/2], ms[len(ms)-1]
	t.Logf("%d updates of 128 tasks: median %.1f ms, worst %.1f ms of script", len(ms), median, worst)
	if median > 50 {
		t.Errorf("an update of 128 tasks takes %.1f ms of script (median of %d), budget 50 ms", median, len(ms))
	}
	noConsoleErrors(t, page)
}

// TestConsoleIdlePages: each page of the console, left open with nothing
// running, asks the server at most 3 times in 30 s of the page's virtual
// clock.
func TestConsoleIdlePages(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	a := apptest.Start(t, apptest.Options{})
	wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`))
	for _, hash := range []string{"#tasks", "#layers", "#quota", "#schedules"} {
		page := openConsole(t, a, hash)
		page.RunVirtualTime(t, 2*time.Second) // the first load's requests
		from := len(page.Requests())
		page.RunVirtualTime(t, 30*time.Second)
		n, urls := restRequests(page, from)
		t.Logf("%s: %d requests in 30 s idle: %q", hash, n, urls)
		if n > 3 {
			t.Errorf("%s: %d requests in 30 s with nothing running, budget 3", hash, n)
		}
	}
}

// TestConsoleLayerDetails: the layers page lists a layer's parameter
// filters; its details show what is stored per tile set (as the server
// counts it), a preview drawn from stored tiles only (nothing rendered),
// and links to the seed form prefilled; a killed last task reads KILLED.
func TestConsoleLayerDetails(t *testing.T) {
	t.Parallel()
	// On both backends: what the page shows comes from the task and usage stores.
	a := apptest.Start(t, apptest.Options{})
	wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`))
	seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8}}`)
	if r := a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded"); r.Status != http.StatusOK {
		t.Fatalf("kill: %d %s", r.Status, r.Body)
	}
	keys := a.TileKeys(t, "demo:world/")
	var bytes int64
	testenv.Eventually(t, 10*time.Second, "the usage to count the demo tiles", func() bool {
		var u struct {
			DiskQuotaUsage struct {
				Layers []struct {
					Layer                string
					UsedTiles, UsedBytes int64
				}
			}
		}
		_ = json.Unmarshal([]byte(a.Do(t, http.MethodGet, "/rest/diskquota/usage.json", "").Body), &u)
		for _, l := range u.DiskQuotaUsage.Layers {
			if l.Layer == "demo:world" && l.UsedTiles == int64(len(keys)) {
				bytes = l.UsedBytes
				return true
			}
		}
		return false
	})
	page := openConsole(t, a, "#layers")
	waitEval(t, page, `document.querySelector('#layers-table tr[data-layer="topp:states"] td.params')`, 10*time.Second)
	params := page.Eval(t, `document.querySelector('#layers-table tr[data-layer="topp:states"] td.params').textContent`)
	if !strings.Contains(params, "STYLES: pophatch, polygon") || !strings.Contains(params, "CQL_FILTER: matching") {
		t.Errorf("topp:states's parameters read %q", params)
	}
	waitEval(t, page, `/KILLED/.test(document.querySelector('#layers-table tr[data-layer="slow:world"]').textContent)`, 10*time.Second)
	seedHref := page.Eval(t, `document.querySelector('a[aria-label="Seed demo:world"]').getAttribute('href')`)
	if want := "#seed?layer=demo%3Aworld&gridSet=EPSG%3A4326&format=image%2Fpng&type=seed"; seedHref != want {
		t.Errorf("Seed link %q, want %q", seedHref, want)
	}

	page.Do(t, "details", chromedp.Click(chromedp.CSS(`button[aria-label="Details of demo:world"]`)))
	waitEval(t, page, `document.querySelector('#tilesets-table tbody tr')`, 10*time.Second)
	var sets []map[string]string
	evalJSON(t, page, `Array.from(document.querySelectorAll('#tilesets-table tbody tr')).map(r => Object.assign({}, r.dataset))`, &sets)
	if len(sets) != 1 || sets[0]["gridSet"] != "EPSG:4326" || sets[0]["format"] != "image/png" || sets[0]["tiles"] != fmt.Sprint(len(keys)) || sets[0]["bytes"] != fmt.Sprint(bytes) {
		t.Errorf("tile sets %v, want EPSG:4326 image/png with %d tiles, %d bytes", sets, len(keys), bytes)
	}
	reseed := page.Eval(t, `document.querySelector('a[aria-label="Reseed EPSG:4326 image/png"]').getAttribute('href')`)
	if want := "#seed?layer=demo%3Aworld&gridSet=EPSG%3A4326&format=image%2Fpng&type=reseed&zoomStart=0&zoomStop=2"; reseed != want {
		t.Errorf("Reseed link %q, want %q", reseed, want)
	}
	// The preview draws stored tiles and makes the server render none.
	waitEval(t, page, `document.querySelector('#layer-preview[data-shown="EPSG:4326 image/png"]') && window.consoleBase.found > 0`, 15*time.Second)
	if after := a.TileKeys(t, "demo:world/"); len(after) != len(keys) {
		t.Errorf("%d tiles stored after the preview, %d before: it rendered", len(after), len(keys))
	}
	var base struct{ Asked, Found, Missing, Failed int }
	evalJSON(t, page, `window.consoleBase`, &base)
	t.Logf("preview: %+v", base)
	if base.Failed != 0 {
		t.Errorf("preview reads failed: %+v", base)
	}
	// A link opens the seed form filled with its request.
	page.Do(t, "seed link", chromedp.Click(chromedp.CSS(`a[aria-label="Truncate an area of EPSG:4326 image/png"]`)))
	waitEval(t, page, `!document.getElementById('page-seed').hidden && location.hash === '#seed' && (r => r && r.seedRequest.type === 'truncate' && r.seedRequest.gridSetId === 'EPSG:4326' && r.seedRequest.format === 'image/png')(window.consoleSeed.lastEstimateRequest)`, 10*time.Second)
	noConsoleErrors(t, page)
}

// TestConsoleLayerQuotaForm: layer quotas are rows of a form, a number
// and its unit: the stored ones shown as such, a change and a new row
// saved as the server's JSON, a value that is no number refused in the
// page with nothing sent.
func TestConsoleLayerQuotaForm(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	a := apptest.Start(t, apptest.Options{})
	if r := a.Do(t, http.MethodPut, "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":false,"globalQuota":{"value":"100","units":"MiB"},"layerQuotas":[{"layer":"topp:states","expirationPolicyName":"LRU","quota":{"value":"1.5","units":"GiB"}}]}}`, "Content-Type", "application/json"); r.Status != http.StatusOK {
		t.Fatalf("PUT diskquota: %d %s", r.Status, r.Body)
	}
	page := openConsole(t, a, "#quota")
	row := `#layer-quota-rows tr[data-layer="topp:states"]`
	waitEval(t, page, `document.querySelector('`+row+`') && !document.getElementById('quota-fields').disabled`, 10*time.Second)
	var shown []string
	evalJSON(t, page, `['layer','value','units','policy'].map(k => document.querySelector('`+row+` [data-q=' + k + ']').value)`, &shown)
	if !slices.Equal(shown, []string{"topp:states", "1.5", "GiB", "LRU"}) {
		t.Errorf("the stored layer quota reads %q", shown)
	}
	setValue(t, page, row+` [data-q=value]`, "2")
	page.Do(t, "add", chromedp.Click(chromedp.CSS(`#layer-quota-add`)))
	added := `#layer-quota-rows tr:last-child`
	setValue(t, page, added+` [data-q=layer]`, "demo:world")
	setValue(t, page, added+` [data-q=value]`, "ten")
	page.Do(t, "save", chromedp.Click(chromedp.CSS(`#quota-save`)))
	waitEval(t, page, `/the quota of demo:world: "ten" is not a positive number/.test(document.getElementById('quota-result').textContent)`, 5*time.Second)
	if n := strings.Count(page.Eval(t, `JSON.stringify(window.consoleStats.requests.filter(r => r.method === 'PUT'))`), "diskquota"); n != 0 {
		t.Errorf("%d PUTs sent for a bad value", n)
	}
	setValue(t, page, added+` [data-q=value]`, "500")
	setValue(t, page, added+` [data-q=units]`, "MiB")
	setValue(t, page, added+` [data-q=policy]`, "LRU")
	page.Do(t, "save", chromedp.Click(chromedp.CSS(`#quota-save`)))
	waitEval(t, page, `document.getElementById('quota-result').textContent === 'Saved.'`, 10*time.Second)
	var c struct {
		Cfg struct {
			LayerQuotas []struct {
				Layer  string
				Policy string `json:"expirationPolicyName"`
				Quota  struct{ Value, Units string }
			}
		} `json:"cacheQuotaConfiguration"`
	}
	if err := json.Unmarshal([]byte(a.Do(t, http.MethodGet, "/rest/diskquota.json", "").Body), &c); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(c.Cfg.LayerQuotas)
	if want := "[{topp:states LRU {2 GiB}} {demo:world LRU {500 MiB}}]"; got != want {
		t.Errorf("stored layer quotas %s, want %s", got, want)
	}
	noConsoleErrors(t, page)
}

// TestConsoleScheduleEdit: a schedule with an area, a format and a
// parameter is listed with them; edited in the page (its cron, its
// area), it is saved with the change; a change the server refuses (a
// level beyond the grid) leaves the schedule as it was.
func TestConsoleScheduleEdit(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	a := apptest.Start(t, apptest.Options{})
	body := `{"name":"states-nightly","cron":"0 3 * * *","timezone":"UTC","request":{"layer":"topp:states","seedRequest":{"type":"reseed","gridSetId":"EPSG:4326","format":"image/png","zoomStart":0,"zoomStop":3,"threadCount":1,` +
		`"bounds":{"coords":{"double":[-120,30,-100,45]}},"parameters":{"entry":[{"string":["STYLES","pophatch"]}]}}}}`
	if r := a.Do(t, http.MethodPost, "/rest/schedules.json", body, "Content-Type", "application/json"); r.Status != http.StatusCreated {
		t.Fatalf("POST schedule: %d %s", r.Status, r.Body)
	}
	page := openConsole(t, a, "#schedules")
	row := `#schedules-table tr[data-schedule="states-nightly"]`
	waitEval(t, page, `document.querySelector('`+row+`')`, 10*time.Second)
	for sel, want := range map[string]string{"td.what": "reseed topp:states EPSG:4326 image/png levels 0–3", "td.area": "-120, 30, -100, 45", "td.params": "STYLES=pophatch"} {
		if got := page.Eval(t, `document.querySelector('`+row+` `+sel+`').textContent`); got != want {
			t.Errorf("%s reads %q, want %q", sel, got, want)
		}
	}
	page.Do(t, "edit", chromedp.Click(chromedp.CSS(`button[aria-label="Edit schedule states-nightly"]`)))
	waitEval(t, page, `document.getElementById('schedule-add').textContent === 'Save the changes' && document.querySelector('#schedule-params select[data-param="STYLES"]')?.value === 'pophatch'`, 5*time.Second)
	var form []string
	evalJSON(t, page, `[...document.querySelectorAll('#schedule-form [data-bound]')].map(e => e.value).concat([document.querySelector('#schedule-form .row:nth-child(2) .field:nth-child(4) select').value])`, &form)
	if !slices.Equal(form, []string{"-120", "30", "-100", "45", "image/png"}) {
		t.Errorf("the form holds %q, want the bounds and the format", form)
	}
	setValue(t, page, `#schedule-form .field:nth-child(2) input`, "30 4 * * *")
	setValue(t, page, `#schedule-form [data-bound="maxx"]`, "-90")
	page.Do(t, "save", chromedp.Click(chromedp.CSS(`#schedule-add`)))
	waitEval(t, page, `/Saved states-nightly/.test(document.getElementById('schedule-result').textContent)`, 10*time.Second)
	// The list is read again after the save and drawn anew: its Edit
	// button is clicked below once it is the new list's.
	waitEval(t, page, `(document.querySelector('#schedules-table tr[data-schedule="states-nightly"] td') || {}).textContent === '30 4 * * *'`, 10*time.Second)
	get := func() string { return a.Do(t, http.MethodGet, "/rest/schedules/states-nightly.json", "").Body }
	if s := get(); !strings.Contains(s, `"cron":"30 4 * * *"`) || !strings.Contains(strings.ReplaceAll(s, " ", ""), `[-120,30,-90,45]`) || !strings.Contains(s, "pophatch") {
		t.Errorf("after the edit: %s", s)
	}
	// A change the server refuses once the old schedule is deleted (a bad
	// cron expression): the old one is saved back as it was.
	type sched struct {
		Cron    string
		Request json.RawMessage
	}
	read := func() (s sched) {
		if err := json.Unmarshal([]byte(get()), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := read()
	page.Do(t, "edit again", chromedp.Click(chromedp.CSS(`button[aria-label="Edit schedule states-nightly"]`)))
	waitEval(t, page, `document.getElementById('schedule-add').textContent === 'Save the changes'`, 5*time.Second)
	setValue(t, page, `#schedule-form .field:nth-child(2) input`, "99 4 * * *")
	page.Do(t, "save", chromedp.Click(chromedp.CSS(`#schedule-add`)))
	waitEval(t, page, `/Not saved.*states-nightly is kept as it was/.test(document.getElementById('schedule-result').textContent)`, 10*time.Second)
	if after := read(); after.Cron != before.Cron || string(after.Request) != string(before.Request) {
		t.Errorf("a refused change altered the schedule: %s %s, was %s %s", after.Cron, after.Request, before.Cron, before.Request)
	}
	noConsoleErrors(t, page)
}

// TestConsoleViewerReadOnly: a viewer's tasks, layers (a layer's details
// and document open), quota and schedules pages show no control that
// changes anything: no visible kill, save, add, remove, delete, edit,
// truncate or seed control, the quota form disabled, the layer document
// read-only.
func TestConsoleViewerReadOnly(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	a := apptest.Start(t, apptest.Options{SeedThreads: 1})
	if r := a.Do(t, http.MethodPut, "/rest/layers/edit:roads.xml", strings.Replace(consoleWMSDoc, "TITLE", "Roads", 1), "Content-Type", "text/xml"); r.Status/100 != 2 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`))
	seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8}}`)
	defer a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	if r := a.Do(t, http.MethodPost, "/rest/schedules.json", `{"name":"n","cron":"@daily","request":{"layer":"demo:world","seedRequest":{"zoomStart":0,"zoomStop":1}}}`, "Content-Type", "application/json"); r.Status != http.StatusCreated {
		t.Fatalf("POST schedule: %d %s", r.Status, r.Body)
	}
	if r := a.Do(t, http.MethodPut, "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":false,"layerQuotas":[{"layer":"demo:world","expirationPolicyName":"LRU","quota":{"value":"1","units":"GiB"}}]}}`, "Content-Type", "application/json"); r.Status != http.StatusOK {
		t.Fatalf("PUT diskquota: %d %s", r.Status, r.Body)
	}
	page := openConsoleAs(t, a, apptest.ViewerUser, "#tasks")
	// Visible controls that would change something (reads and navigation
	// are allowed: Details, Preview, Document, Show, Refresh, Close, the
	// task rows' disclosure).
	changing := `Array.from(document.querySelectorAll('main button, main a[href^="#seed"], main input, main select, main textarea'))
		.filter(e => e.getClientRects().length && !e.closest('[hidden]') && !e.matches(':disabled') && !e.readOnly && !e.closest('#coverage-form, #audit-form, .ol-control')
			&& !(e.tagName === 'BUTTON' && /^(Details|Preview|Document|Show|Refresh failures|Reload|Close|Read the capabilities|▸|▾)/.test(e.textContent.trim())))
		.map(e => e.outerHTML.slice(0, 100))`
	for _, c := range []struct{ hash, ready string }{
		{"#tasks", `document.querySelector('#requests-active tbody.request') && document.querySelector('#requests-finished tbody.request')`},
		{"#layers", `document.querySelector('#layers-table tr[data-layer="demo:world"]')`},
		{"#quota", `document.querySelector('#layer-quota-rows tr')`},
		{"#schedules", `document.querySelector('#schedules-table tr[data-schedule="n"]')`},
	} {
		page.Eval(t, `location.hash = '`+c.hash+`', ''`)
		waitEval(t, page, c.ready, 15*time.Second)
		switch c.hash {
		case "#tasks":
			page.Do(t, "open", chromedp.Click(chromedp.CSS(`#requests-active button[aria-expanded="false"]`)))
		case "#layers":
			page.Do(t, "details", chromedp.Click(chromedp.CSS(`button[aria-label="Details of demo:world"]`)))
			waitEval(t, page, `document.querySelector('#tilesets-table tbody tr')`, 10*time.Second)
			var missing []string
			evalJSON(t, page, changing, &missing)
			if len(missing) != 0 {
				t.Errorf("layer details to a viewer: controls that change something: %q", missing)
			}
			page.Do(t, "document", chromedp.Click(chromedp.CSS(`button[aria-label="Document of edit:roads"]`)))
			waitEval(t, page, `document.getElementById('layer-xml')?.readOnly === true`, 10*time.Second)
		}
		var shown []string
		evalJSON(t, page, changing, &shown)
		// The form fields of a page a viewer may not change are hidden or
		// disabled; the seed page is not this test's.
		if len(shown) != 0 {
			t.Errorf("%s to a viewer: controls that change something: %q", c.hash, shown)
		}
	}
	if got := page.Eval(t, `String(document.getElementById('quota-fields').disabled)`); got != "true" {
		t.Errorf("the quota form to a viewer: disabled=%s", got)
	}
	noConsoleErrors(t, page)
}

// TestConsolePagesAccessible runs axe-core on the tasks page (a request
// opened, a finished one listed), a layer's details, the layer quota rows
// and a schedule being edited: no serious or critical violation. With
// TILECACHE_CONSOLE_SCREENSHOTS=dir it saves a screenshot of each page
// there (docs/console holds them).
func TestConsolePagesAccessible(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	axePath := testenv.RequireAxe(t)
	axe, err := os.ReadFile(axePath)
	if err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("TILECACHE_CONSOLE_SCREENSHOTS")
	a := apptest.Start(t, apptest.Options{SeedThreads: 8})
	wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":2,"bounds":{"coords":{"double":[-30,-20,60,50]}}}}`))
	seedReq(t, a, "broken:world", `{"seedRequest":{"zoomStart":2,"zoomStop":2,"threadCount":2,"tileFailureRetryCount":0,"totalFailuresBeforeAborting":2}}`)
	seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8,"threadCount":3}}`)
	defer a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	if r := a.Do(t, http.MethodPost, "/rest/schedules.json", `{"name":"states-nightly","cron":"0 3 * * *","request":{"layer":"topp:states","seedRequest":{"type":"reseed","format":"image/png","zoomStart":0,"zoomStop":3,"bounds":{"coords":{"double":[-120,30,-100,45]}},"parameters":{"entry":[{"string":["STYLES","pophatch"]}]}}}}`, "Content-Type", "application/json"); r.Status != http.StatusCreated {
		t.Fatalf("POST schedule: %d %s", r.Status, r.Body)
	}
	if r := a.Do(t, http.MethodPut, "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true,"globalQuota":{"value":"2","units":"GiB"},"layerQuotas":[{"layer":"demo:world","expirationPolicyName":"LRU","quota":{"value":"500","units":"MiB"}}]}}`, "Content-Type", "application/json"); r.Status != http.StatusOK {
		t.Fatalf("PUT diskquota: %d %s", r.Status, r.Body)
	}
	page := openConsole(t, a, "#tasks")
	if _, err := chromedp.Run(page.Ctx(), chromedp.EmulateViewport(1400, 900)); err != nil {
		t.Fatal(err)
	}
	page.Eval(t, string(axe)+"\n;''")
	runAxe := func(name string) {
		t.Helper()
		var violations []struct {
			ID, Impact, Help string
			Nodes            []struct{ Target []string }
		}
		v, err := chromedp.Run(page.Ctx(), chromedp.Evaluate[string](`axe.run(document, {resultTypes: ['violations']}).then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("axe on %s: %v", name, err)
		}
		if err := json.Unmarshal([]byte(v), &violations); err != nil {
			t.Fatal(err)
		}
		for _, x := range violations {
			if x.Impact == "serious" || x.Impact == "critical" {
				t.Errorf("%s: %s violation %s (%s) at %v", name, x.Impact, x.ID, x.Help, x.Nodes)
			} else {
				t.Logf("%s: %s violation %s (%s)", name, x.Impact, x.ID, x.Help)
			}
		}
		if shots == "" {
			return
		}
		png, err := chromedp.Run(page.Ctx(), chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot of %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitEval(t, page, `document.querySelector('#requests-active tbody.request[data-layer="slow:world"]') && document.querySelector('#requests-finished tbody.request[data-layer="demo:world"]') && document.querySelector('#requests-finished tbody.request[data-status="ABORTED"]')`, 20*time.Second)
	page.Do(t, "refresh failures", chromedp.Click(chromedp.CSS(`#failures-refresh`)))
	waitEval(t, page, `document.querySelector('#failure-list li[data-tasks]') && document.querySelector('tr.why:not([hidden])')`, 10*time.Second)
	page.Do(t, "open", chromedp.Click(chromedp.CSS(`#requests-active button[aria-expanded="false"]`)))
	runAxe("tasks")
	page.Eval(t, `location.hash = '#layers', ''`)
	waitEval(t, page, `document.querySelector('button[aria-label="Details of demo:world"]')`, 10*time.Second)
	page.Do(t, "details", chromedp.Click(chromedp.CSS(`button[aria-label="Details of demo:world"]`)))
	waitEval(t, page, `document.querySelector('#tilesets-table tbody tr') && window.consoleBase.found > 0`, 15*time.Second)
	runAxe("layers")
	page.Eval(t, `location.hash = '#quota', ''`)
	waitEval(t, page, `document.querySelector('#layer-quota-rows tr') && document.querySelector('#usage-table tr.usage-row')`, 10*time.Second)
	runAxe("quota")
	page.Eval(t, `location.hash = '#schedules', ''`)
	waitEval(t, page, `document.querySelector('button[aria-label="Edit schedule states-nightly"]')`, 10*time.Second)
	page.Do(t, "edit", chromedp.Click(chromedp.CSS(`button[aria-label="Edit schedule states-nightly"]`)))
	waitEval(t, page, `document.querySelector('#schedule-params select[data-param="STYLES"]')?.value === 'pophatch'`, 5*time.Second)
	runAxe("schedules")
	// The seed form, filled from the finished request's "Again…" link: its
	// box on the coastline map over the stored tiles, and its estimate.
	page.Eval(t, `location.hash = '#tasks', ''`)
	again := `#requests-finished tbody.request[data-layer="demo:world"] a.again`
	waitEval(t, page, `document.querySelector('`+again+`')`, 10*time.Second)
	page.Do(t, "again", chromedp.Click(chromedp.CSS(again)))
	waitEval(t, page, `!document.getElementById('page-seed').hidden && (r => r && r.seedRequest.bounds)(window.consoleSeed.lastEstimateRequest) && document.querySelector('#estimate[data-tiles]') && window.consoleBase.found > 0`, 15*time.Second)
	runAxe("seed")
	noConsoleErrors(t, page)
}

// TestConsoleSeedFormPrefilled: the links of the layers and tasks pages
// (#seed?layer=…) fill the seed form — layer, grid set, format, type,
// levels and box — and the estimate it asks is of that request; the
// address goes back to #seed, so the same link fills the form again
// after a change; a field the layer does not offer is named, not taken.
func TestConsoleSeedFormPrefilled(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	a := apptest.Start(t, apptest.Options{})
	link := "#seed?layer=demo%3Aworld&gridSet=EPSG%3A900913&format=image%2Fjpeg&type=reseed&zoomStart=1&zoomStop=2&bounds=-2000000,-1000000,2000000,1000000"
	page := openConsole(t, a, link)
	type sent struct {
		SeedRequest struct {
			GridSetID           string `json:"gridSetId"`
			Format, Type        string
			ZoomStart, ZoomStop int
			Bounds              struct{ Coords struct{ Double []float64 } }
		} `json:"seedRequest"`
	}
	want := func(what string) {
		t.Helper()
		waitEval(t, page, `(r => r && r.seedRequest.type === 'reseed' && r.seedRequest.gridSetId === 'EPSG:900913' && r.seedRequest.bounds)(window.consoleSeed.lastEstimateRequest)`, 15*time.Second)
		var s sent
		evalJSON(t, page, `window.consoleSeed.lastEstimateRequest`, &s)
		r := s.SeedRequest
		if r.Format != "image/jpeg" || r.ZoomStart != 1 || r.ZoomStop != 2 || !slices.Equal(r.Bounds.Coords.Double, []float64{-2000000, -1000000, 2000000, 1000000}) {
			t.Errorf("%s: the estimate asked for %+v", what, r)
		}
		if h := page.Eval(t, `location.hash`); h != "#seed" {
			t.Errorf("%s: the address is %q after the form was filled, want #seed", what, h)
		}
	}
	want("opened at the link")

	// Changed by hand, then the same link followed again.
	page.Eval(t, `(() => { for (const s of document.querySelectorAll('#seed-form select')) if ([...s.options].some(o => o.value === 'truncate')) { s.value = 'truncate'; s.dispatchEvent(new Event('change')); } return ''; })()`)
	waitEval(t, page, `(r => r && r.seedRequest.type === 'truncate')(window.consoleSeed.lastEstimateRequest)`, 10*time.Second)
	page.Eval(t, `(location.hash = `+strconv.Quote(link)+`, '')`)
	want("the same link followed again")

	// A format the layer does not offer is named and left as it was.
	page.Eval(t, `(location.hash = '#seed?layer=demo%3Aworld&format=image%2Fwebp', '')`)
	waitEval(t, page, `/format image\/webp: not offered for demo:world/.test(document.body.textContent)`, 10*time.Second)
}
