package rest_test

// Contract §6: the kill request and its HTML page.

import (
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

const (
	pageHead  = "<html><head><title>GWC Seed Form</title></head><body>\n"
	pageEmpty = "<p>Terminated tasks:</p><ul></ul>\n<p>Tasks already finished:</p><ul></ul>\n"
	pageTail  = "</body></html>"
)

func wantPage(t testing.TB, res apptest.Response, want string) {
	t.Helper()
	wantOK(t, res, ctHTML)
	if got := trimNL(res.Body); got != want {
		t.Errorf("kill page:\n got %q\nwant %q", got, want)
	}
}

func wantPageContains(t testing.TB, res apptest.Response, parts ...string) {
	t.Helper()
	wantOK(t, res, ctHTML)
	for _, p := range parts {
		if !strings.Contains(res.Body, p) {
			t.Errorf("kill page %q: want it to contain %q", res.Body, p)
		}
	}
}

// TestKillEmpty: a kill with nothing to kill is a 200 page with empty lists.
func TestKillEmpty(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	form := []string{"Content-Type", ctForm}
	running := pageHead + "<p>Requested to terminate running tasks.</p>\n" + pageEmpty
	for _, c := range []struct {
		name, path, body string
		headers          []string
		want             string // exact page (one trailing newline ignored), or "" to check the lists only
	}{
		{"running, all layers", "/rest/seed", "kill_all=running", form, running + pageTail},
		{"1, all layers", "/rest/seed", "kill_all=1", form, running + pageTail},
		{"running, one layer", "/rest/seed/topp:states", "kill_all=running", form, running + `<p><a href="./topp:states">Go back</a></p>` + "\n" + pageTail},
		{"RUNNING, upper case", "/rest/seed/demo:world", "kill_all=RUNNING", form, running + `<p><a href="./demo:world">Go back</a></p>` + "\n" + pageTail},
		{"running in the query string", "/rest/seed?kill_all=running", "", nil, running + pageTail},
		{"beside a malformed form pair", "/rest/seed", "kill_all=running&x=%", form, running + pageTail},
		{"all", "/rest/seed", "kill_all=all", form, ""},
		{"All, one layer", "/rest/seed/demo:world", "kill_all=All", form, ""},
		{"pending", "/rest/seed", "kill_all=pending", form, ""},
		{"pending in the query string", "/rest/seed/slow:world?kill_all=pending", "", nil, ""},
		{"among other form fields", "/rest/seed", "a=1&kill_all=all&b=2", form, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := a.Do(t, "POST", c.path, c.body, c.headers...)
			if c.want != "" {
				wantPage(t, res, c.want)
				return
			}
			wantPageContains(t, res, pageHead, pageEmpty)
			if !strings.HasSuffix(trimNL(res.Body), pageTail) {
				t.Errorf("kill page %q: want it to end with %q", res.Body, pageTail)
			}
		})
	}
	wantNextID(t, a, 1)
}

// TestKillPageLists: terminated tasks with their state at kill time, other
// layers untouched, and finished tasks listed as finished.
func TestKillPageLists(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 1})
	form := []string{"Content-Type", ctForm}
	rows := seedJSON(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":4,"threadCount":3}}`)
	defer killAll(t, a)
	wantIDs(t, rows, 1, 3)

	t.Run("other layer untouched", func(t *testing.T) {
		res := a.Do(t, "POST", "/rest/seed/demo:world", "kill_all=all", form...)
		wantPageContains(t, res, pageHead, pageEmpty+`<p><a href="./demo:world">Go back</a></p>`+"\n"+pageTail)
		got := list(t, a, "/rest/seed/slow:world.json")
		wantIDs(t, got, 1, 3)
	})
	t.Run("pending", func(t *testing.T) {
		res := a.Do(t, "POST", "/rest/seed/slow:world", "kill_all=pending", form...)
		wantPageContains(t, res,
			"<p>Terminated tasks:</p><ul><li>[2: slow:world, SEED, PENDING]</li><li>[3: slow:world, SEED, PENDING]</li></ul>\n",
			`<p><a href="./slow:world">Go back</a></p>`)
		for _, r := range list(t, a, "/rest/seed.json") {
			if r[3] != 1 && (r[4] == 0 || r[4] == 1) {
				t.Errorf("row %v after the kill: got status %d, want task %d gone or -1", r, r[4], r[3])
			}
			if r[3] == 1 && r[4] != 1 {
				t.Errorf("row %v: got status %d, want the running task untouched", r, r[4])
			}
		}
	})
	t.Run("running", func(t *testing.T) {
		res := a.Do(t, "POST", "/rest/seed", "kill_all=running", form...)
		wantPageContains(t, res, "<p>Terminated tasks:</p><ul><li>[1: slow:world, SEED, RUNNING]</li></ul>\n")
		if strings.Contains(res.Body, "Go back") {
			t.Errorf("kill page of all layers %q: got a link back, want none", res.Body)
		}
		for _, r := range list(t, a, "/rest/seed.json") {
			if r[4] == 0 || r[4] == 1 {
				t.Errorf("row %v after killing everything: got status %d, want gone or -1", r, r[4])
			}
		}
	})
}

// TestKillPageFinished: tasks that finished (DONE, ABORTED) but are still
// listed appear under "Tasks already finished" with their type.
func TestKillPageFinished(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`)
	seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"type":"reseed"}}`)
	seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"type":"truncate"}}`)
	seedJSON(t, a, "broken:world", `{"seedRequest":{"zoomStart":2,"zoomStop":2}}`)
	want := map[int64]int64{1: 2, 2: 2, 3: 2, 4: -1}
	testenv.Eventually(t, 3*time.Second, "tasks 1–4 to finish", func() bool {
		got := map[int64]int64{}
		for _, r := range list(t, a, "/rest/seed.json") {
			got[r[3]] = r[4]
		}
		for id, st := range want {
			if got[id] != st {
				return false
			}
		}
		return true
	})
	res := a.Do(t, "POST", "/rest/seed", "kill_all=all", "Content-Type", ctForm)
	wantPageContains(t, res,
		"<p>Terminated tasks:</p><ul></ul>\n",
		"<li>[1: demo:world, SEED, DONE]</li>",
		"<li>[2: demo:world, RESEED, DONE]</li>",
		"<li>[3: demo:world, TRUNCATE, DONE]</li>",
		"<li>[4: broken:world, SEED, ABORTED]</li>",
	)
}

// TestKillPageEscaping: layer names are HTML-escaped in the task entries
// and in the link back.
func TestKillPageEscaping(t *testing.T) {
	extra := `
  - name: "a&b<c>d"
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern, delay: 40ms}
`
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + extra})
	const path = "/rest/seed/a%26b%3Cc%3Ed"
	const escaped = "a&amp;b&lt;c&gt;d"
	rows := seedJSON(t, a, path[len("/rest/seed/"):], `{"seedRequest":{"zoomStart":0,"zoomStop":4}}`)
	defer killAll(t, a)
	wantIDs(t, rows, 1, 1)
	res := a.Do(t, "POST", path, "kill_all=running", "Content-Type", ctForm)
	wantPageContains(t, res,
		"<p>Terminated tasks:</p><ul><li>[1: "+escaped+", SEED, RUNNING]</li></ul>\n",
		`<p><a href="./`+escaped+`">Go back</a></p>`)
	if strings.Contains(res.Body, "<c>") {
		t.Errorf("kill page %q: got the layer name unescaped", res.Body)
	}
}
