package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/browsertest"
	"tilecache/internal/testkit/testenv"
)

// TestConsoleKillOneTask kills one running task with its row's button:
// it is gone from the server's list within a second (three under the
// race detector) and shown KILLED, while the other task of the same
// request runs on.
func TestConsoleKillOneTask(t *testing.T) {
	t.Parallel()
	// On both backends: what the page shows comes from the task and usage stores.
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8,"threadCount":2}}`)
	defer a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	first, second := rows[0][3], rows[1][3]
	page := openConsole(t, a, "#tasks")
	// One row for the request; its two tasks open from it.
	job := fmt.Sprintf(`tbody.request[data-job="%d"]`, first)
	waitEval(t, page, `document.querySelectorAll('`+job+` tr.lane[data-status="RUNNING"]').length === 2`, 20*time.Second)
	page.Do(t, "open the request", chromedp.Click(chromedp.CSS(job+` button[aria-expanded="false"]`)))
	page.Do(t, "kill one task", chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[aria-label="Kill task %d"]`, first))))
	start := time.Now()
	within := time.Second
	if raceDetector {
		within = 3 * time.Second
	}
	waitLive(t, a, 1, within)
	t.Logf("task %d gone %v after the click", first, time.Since(start).Round(time.Millisecond))
	live := map[int64]int64{}
	for _, r := range listRows(t, a, "/rest/seed.json") {
		live[r[3]] = r[4]
	}
	if live[second] != 1 {
		t.Fatalf("after killing task %d: the server lists %v, want task %d RUNNING", first, live, second)
	}
	tk, err := a.Local.Tasks.Get(t.Context(), first)
	if err != nil || tk.Status != task.Aborted || !tk.Killed {
		t.Fatalf("task %d after the click: %+v %v, want ABORTED and killed", first, tk, err)
	}
	waitEval(t, page, fmt.Sprintf(`document.querySelector('tr.lane[data-task="%d"][data-outcome="KILLED"]')`, first), 5*time.Second)
	if got := page.Eval(t, fmt.Sprintf(`document.querySelector('tr.lane[data-task="%d"]')?.dataset.status || ''`, second)); got != "RUNNING" {
		t.Errorf("the other task's row: %q, want RUNNING", got)
	}
	// The other task's own button: one task, no question asked.
	page.Do(t, "kill the other", chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[aria-label="Kill task %d"]`, second))))
	waitLive(t, a, 0, within)
	waitEval(t, page, fmt.Sprintf(`document.querySelector('#requests-finished tr.lane[data-task="%d"][data-outcome="KILLED"]')`, second), 5*time.Second)
	if got := page.Eval(t, `document.querySelector('`+job+`').dataset.status`); got != "KILLED" {
		t.Errorf("the request after both kills: %s, want KILLED", got)
	}
	noConsoleErrors(t, page)
}

// TestConsoleFailureReasons: a task that fails shows why, the text of
// GET /rest/failures.json, in the list of failures and beside its entry
// among the finished tasks; a task killed from the page shows none.
func TestConsoleFailureReasons(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "a console page in Chromium (it reads and writes through the REST interface, which the REST suite checks on both backends)")
	a := apptest.Start(t, apptest.Options{})
	page := openConsole(t, a, "#tasks")
	waitEval(t, page, `document.querySelector('#failure-list li')?.textContent === 'No task failed in the last 24 hours.'`, 10*time.Second)
	rows := seedReq(t, a, "broken:world", `{"seedRequest":{"zoomStart":2,"zoomStop":2,"threadCount":2,"tileFailureRetryCount":0,"totalFailuresBeforeAborting":2}}`)
	// The page polls every 10 s when idle: have it poll now, as it does
	// when it becomes visible, so it sees the tasks listed ABORTED.
	page.Eval(t, `document.dispatchEvent(new Event('visibilitychange')), ''`)
	var d struct {
		Failures []struct {
			ID     int64  `json:"id"`
			Reason string `json:"reason"`
		} `json:"failures"`
	}
	testenv.Eventually(t, 20*time.Second, "both tasks to end and their failures to be recorded", func() bool {
		for _, id := range ids(rows) {
			if tk, err := a.Local.Tasks.Get(t.Context(), id); err != nil || tk.Status.Active() {
				return false
			}
		}
		r := a.Do(t, http.MethodGet, "/rest/failures.json", "")
		return json.Unmarshal([]byte(r.Body), &d) == nil && len(d.Failures) == 2
	})
	// The page asked when it saw them abort, maybe before both were
	// recorded: its button asks again.
	page.Do(t, "refresh failures", chromedp.Click(chromedp.CSS(`#failures-refresh`)))
	// The two tasks failed alike: one entry, counted twice, the reason
	// shortened (the whole message a disclosure away when it differs).
	for _, f := range d.Failures {
		if !slices.Contains(ids(rows), f.ID) || !strings.Contains(f.Reason, "reached its budget of 2") {
			t.Errorf("failure %+v: want one of tasks %v, its job's budget exhausted", f, ids(rows))
		}
		sel := fmt.Sprintf(`#failure-list li[data-tasks~="%d"]`, f.ID)
		waitEval(t, page, `document.querySelector('`+sel+`')`, 20*time.Second)
		if got := page.Eval(t, `document.querySelector('`+sel+`').dataset.count`); got != "2" {
			t.Errorf("task %d's failure counted %s times, want 2 (both tasks)", f.ID, got)
		}
		got := page.Eval(t, `document.querySelector('`+sel+` .reason').textContent`)
		if !strings.Contains(got, "reached its budget of 2") || strings.Contains(got, "REDACTED") {
			t.Errorf("task %d's reason on the page %q, want the budget shortened from %q", f.ID, got, f.Reason)
		}
		full := page.Eval(t, `document.querySelector('`+sel+` .full')?.textContent ?? ''`)
		if full != "" && full != d.Failures[0].Reason && full != d.Failures[1].Reason {
			t.Errorf("task %d's whole message %q, want one of the failures' (%+v)", f.ID, full, d.Failures)
		}
	}
	// The finished request says why, once for its two tasks.
	why := fmt.Sprintf(`tbody.request[data-job="%d"] tr.why:not([hidden]) .reason`, rows[0][3])
	waitEval(t, page, `document.querySelector('`+why+`')`, 10*time.Second)
	if got := page.Eval(t, `document.querySelector('`+why+`').textContent`); !strings.HasPrefix(got, "Why: 2 tasks: ") || !strings.Contains(got, "reached its budget of 2") {
		t.Errorf("the request's reason %q", got)
	}
	// A page opened on another page and coming back lists them too.
	other := openConsole(t, a, "#seed")
	other.Eval(t, `location.hash = '#tasks', ''`)
	for _, f := range d.Failures {
		waitEval(t, other, fmt.Sprintf(`document.querySelector('#failure-list li[data-tasks~="%d"] .reason')`, f.ID), 10*time.Second)
	}
	noConsoleErrors(t, page)
}

// TestConsoleParameterChoices: the seed form offers a layer's parameter
// filters as the overview lists them (a list filter's values to choose
// from, a regex filter's free text checked against it), and the request
// it estimates and submits carries the chosen values.
func TestConsoleParameterChoices(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "a console page in Chromium (it reads and writes through the REST interface, which the REST suite checks on both backends)")
	a := apptest.Start(t, apptest.Options{})
	page := openConsole(t, a, "#seed")
	page.Eval(t, `(s => { s.value = 'topp:states'; s.dispatchEvent(new Event('change')); return ''; })(document.querySelector('#seed-form select'))`)
	waitEval(t, page, `document.querySelector('select[data-param="STYLES"]') && document.querySelector('input[data-param="CQL_FILTER"]')`, 10*time.Second)
	var opts []string
	evalJSON(t, page, `Array.from(document.querySelectorAll('select[data-param="STYLES"] option')).map(o => o.value)`, &opts)
	if !slices.Equal(opts, []string{"", "pophatch", "polygon"}) {
		t.Errorf("STYLES choices %q, want the default and the filter's values", opts)
	}
	if got := page.Eval(t, `document.querySelector('#param-fields').hidden ? 'hidden' : 'shown'`); got != "shown" {
		t.Errorf("parameter fields %s", got)
	}
	page.Eval(t, `(s => { s.value = 'polygon'; s.dispatchEvent(new Event('change')); return ''; })(document.querySelector('select[data-param="STYLES"]'))`)
	// A value the regex refuses is marked, and the server's 400 shows.
	page.Do(t, "type a refused filter", chromedp.SendKeys(`input[data-param="CQL_FILTER"]`, "NAME;x"))
	waitEval(t, page, `document.querySelector('input[data-param="CQL_FILTER"]').getAttribute('aria-invalid') === 'true'`, 5*time.Second)
	waitEval(t, page, `document.querySelector('#estimate .error')`, 10*time.Second)
	page.Eval(t, `document.querySelector('input[data-param="CQL_FILTER"]').value = ''`)
	page.Do(t, "retype", chromedp.SendKeys(`input[data-param="CQL_FILTER"]`, "NAME='x'"))
	waitEval(t, page, `!document.querySelector('input[data-param="CQL_FILTER"]').hasAttribute('aria-invalid')`, 5*time.Second)
	waitEval(t, page, `document.querySelector('#estimate').dataset.tiles && !document.querySelector('#estimate').hasAttribute('aria-busy') && JSON.stringify(window.consoleSeed.lastEstimateRequest.seedRequest.parameters) === JSON.stringify({entry: [{string: ['STYLES', 'polygon']}, {string: ['CQL_FILTER', "NAME='x'"]}]})`, 10*time.Second)
	var req json.RawMessage
	evalJSON(t, page, `window.consoleSeed.lastEstimateRequest`, &req)
	var est struct {
		Tiles int64 `json:"tiles"`
	}
	r := a.Do(t, http.MethodPost, "/rest/estimate/topp:states.json", string(req), "Content-Type", "application/json")
	if err := json.Unmarshal([]byte(r.Body), &est); err != nil || r.Status != 200 {
		t.Fatalf("estimate of the page's request: %d %q", r.Status, r.Body)
	}
	if got := page.Eval(t, `document.querySelector('#estimate').dataset.tiles`); got != fmt.Sprint(est.Tiles) {
		t.Errorf("page estimate %s tiles, server %d", got, est.Tiles)
	}
	page.Do(t, "submit", chromedp.Click(chromedp.CSS(`#seed-submit`)))
	var job task.Job
	testenv.Eventually(t, 20*time.Second, "the submitted job", func() bool {
		var err error
		job, err = a.Local.Tasks.Job(t.Context(), 1)
		return err == nil
	})
	if job.Layer != "topp:states" || job.Range().Parameters["STYLES"] != "polygon" || job.Range().Parameters["CQL_FILTER"] != "NAME='x'" || len(job.Range().Parameters) != 2 {
		t.Errorf("submitted job %s with parameters %v, want topp:states with STYLES=polygon and CQL_FILTER=NAME='x'", job.Layer, job.Range().Parameters)
	}
	a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	noConsoleErrors(t, page)
}

// TestConsoleBaseMapReadsOnlyStored: the seed map draws a layer's stored
// tiles and nothing else. The layer renders on miss from a WMS, yet
// opening and zooming the map makes no GetMap and stores no tile: every
// tile read answers 200 exactly when its tile is stored, 504 otherwise
// (X-Tilecache-Stored-Only, or Cache-Control: only-if-cached). The same
// read without them renders, so the check could fail.
func TestConsoleBaseMapReadsOnlyStored(t *testing.T) {
	t.Parallel()
	// On both backends: the tiles shown are read from the tile store (S3 on AWS).
	wms := newWMSProxy(t, nil)
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + fmt.Sprintf(onDemandLayers, wms.URL, "http://127.0.0.1:1")})
	seedReq(t, a, "od:world", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`)
	waitLive(t, a, 0, 60*time.Second)
	stored := a.TileKeys(t, "od:world/")
	getMaps := wms.getMaps.Load()
	if len(stored) != 10 || getMaps == 0 {
		t.Fatalf("seeded %d tiles with %d GetMaps, want levels 0-1's 10", len(stored), getMaps)
	}
	// Logged in as a person is, not by a header on every request: the
	// stored-only reads are an account's, and the browser must answer
	// their challenge with the credentials it holds for the console.
	login := strings.Replace(a.URL, "http://", "http://"+url.UserPassword(apptest.User, apptest.Password).String()+"@", 1)
	page := browsertest.Open(t, login+"/console/#seed", 120*time.Second)
	page.WaitFor(t, `body[data-ready="1"]`)
	page.Eval(t, `(s => { s.value = 'od:world'; s.dispatchEvent(new Event('change')); return ''; })(document.querySelector('#seed-form select'))`)
	settled := `window.consoleBase.asked > 0 && window.consoleBase.asked === window.consoleBase.found + window.consoleBase.missing + window.consoleBase.failed`
	waitEval(t, page, settled+` && window.consoleBase.found > 0`, 20*time.Second)
	// Closer in: levels 2 and 3 hold no tile.
	for _, z := range []int{2, 3} {
		page.Eval(t, fmt.Sprintf(`(v => { v.setZoom(%d); v.setCenter([10, 10]); return ''; })(window.consoleSeed.map.getView())`, z))
		waitEval(t, page, settled+` && window.consoleBase.missing > 0`, 20*time.Second)
	}
	// Every tile the map asks for at level 3 asked and answered.
	seedMapRendered(t, page, 10*time.Second)
	waitEval(t, page, settled, 10*time.Second)
	var st struct{ Asked, Found, Missing, Failed int }
	evalJSON(t, page, `window.consoleBase`, &st)
	t.Logf("base map: %+v", st)
	if st.Failed != 0 || st.Found == 0 || st.Missing == 0 {
		t.Errorf("base map reads %+v: want stored ones found, missing ones missing, none failed", st)
	}
	have := map[string]bool{}
	for _, k := range stored {
		have[k] = true
	}
	var missingURL string
	reads := 0
	for _, r := range page.Requests() {
		u, err := url.Parse(r.URL)
		if err != nil || !strings.HasPrefix(u.Path, "/tiles/od:world/") {
			continue
		}
		reads++
		seg := strings.Split(strings.TrimPrefix(u.Path, "/tiles/"), "/") // layer grid format z x y.ext
		key := strings.Join(append(seg[:3:3], append([]string{"default"}, seg[3:]...)...), "/")
		switch {
		case r.Status == http.StatusUnauthorized:
			continue // the challenge the browser answers with its credentials
		case have[key] && r.Status != http.StatusOK:
			t.Errorf("%s: stored, answered %d", u.Path, r.Status)
		case !have[key] && r.Status != http.StatusGatewayTimeout:
			t.Errorf("%s: not stored, answered %d, want 504", u.Path, r.Status)
		case !have[key]:
			missingURL = u.Path
		}
	}
	// A tile asked again may come from the browser's cache, unseen here.
	if reads == 0 || reads > st.Asked {
		t.Errorf("%d tile requests seen, the page counted %d", reads, st.Asked)
	}
	if n := wms.getMaps.Load(); n != getMaps {
		t.Errorf("the map made %d GetMaps, want none", n-getMaps)
	}
	if got := a.TileKeys(t, "od:world/"); !slices.Equal(got, stored) {
		t.Errorf("the map stored tiles: %d keys now, %d before", len(got), len(stored))
	}
	if missingURL == "" {
		t.Fatal("no missing tile was read")
	}
	// Other clients ask the same with the standard directive, with an
	// account; anonymously they are challenged and learn nothing.
	for _, withAccount := range []bool{true, false} {
		req, _ := http.NewRequest(http.MethodGet, a.URL+missingURL, nil)
		req.Header.Set("Cache-Control", "max-age=0, only-if-cached")
		want := http.StatusUnauthorized
		if withAccount {
			req.SetBasicAuth(apptest.User, apptest.Password)
			want = http.StatusGatewayTimeout
		}
		if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != want || wms.getMaps.Load() != getMaps {
			t.Errorf("GET %s only-if-cached (account %v): %v %v, %d GetMaps; want %d and none", missingURL, withAccount, res.Status, err, wms.getMaps.Load()-getMaps, want)
		} else {
			res.Body.Close()
		}
	}
	// The control: asked plainly, the same missing tile goes to the
	// upstream (and renders, unless the loaded machine's upstream fails).
	status, _, _ := getTile(t, a.URL, missingURL)
	t.Logf("plain GET of %s: %d, %d GetMaps", missingURL, status, wms.getMaps.Load()-getMaps)
	if wms.getMaps.Load() == getMaps {
		t.Errorf("plain GET of %s: %d without a GetMap; want a render", missingURL, status)
	}
	noConsoleErrors(t, page)
}
