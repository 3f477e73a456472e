package app_test

// A layer deleted with its tiles (DELETE /rest/layers/{name}?truncate=true):
// the answer comes at once; a TRUNCATE row of the deleted name is listed
// while a background task deletes every key under the layer's id page by
// page; the name is refused meanwhile (seed, render on miss, re-creation),
// by a second process too; a restart resumes from the task's key cursor;
// the truncation can be killed and started again; at the end no key is
// left and the usage report no longer lists the layer.

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// goneLayer is a store-managed layer rendering on miss from the built-in
// test pattern.
const goneLayer = `  - name: run:gone
    managedBy: store
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [2, 2]
    renderOnMiss: {enabled: true}
    source: {type: testpattern}
`

// goneDoc re-creates run:gone through the REST interface.
const goneDoc = `<wmsLayer>
  <name>run:gone</name>
  <mimeFormats><string>image/png</string></mimeFormats>
  <gridSubsets><gridSubset><gridSetName>EPSG:4326</gridSetName><zoomStop>2</zoomStop></gridSubset></gridSubsets>
  <wmsUrl><string>http://127.0.0.1:1/wms</string></wmsUrl>
  <wmsLayers>roads</wmsLayers>
</wmsLayer>`

// deletionEnv: pages of 10 keys, so that a truncation of a few thousand
// keys takes hundreds of checkpoints; lane messages visible again soon
// after a stop.
var deletionEnv = map[string]string{"TILECACHE_TRUNCATE_PAGE": "10", "TILECACHE_LANE_VISIBILITY": "3s"}

// goneExtra is how many objects seedGone adds: at pages of 10 keys, 3,000
// keep an embedded truncation going for hundreds of pages; on AWS each page
// also costs a checkpoint in DynamoDB (50-100 ms on an idle machine, three
// times that in a full test run), so 300 keep it going for about fifty
// pages, several seconds: far longer than the few requests between the
// DELETE and the stop or the kill, and every page after those only makes
// the test longer.
func goneExtra(a *apptest.App) int {
	if backendOf(a) == "aws" {
		return 300
	}
	return 3000
}

// seedGone seeds run:gone z0–3 and stores n more objects under its id
// (tiles of an earlier deployment, say), and returns every key under it.
func seedGone(t *testing.T, a *apptest.App, n int) []string {
	t.Helper()
	rows := seedReq(t, a, "run:gone", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":3,"format":"image/png"}}`)
	waitFinished(t, a, ids(rows), 2*time.Minute)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				a.Put(t, fmt.Sprintf("run:gone/EPSG:4326/png/default/9/%d/%d.png", i/64, i%64), []byte("x"), tilestore.Meta{ContentType: "image/png"})
			}
		})
	}
	wg.Wait()
	all := a.Keys(t, "run:gone/")
	if len(all) < n+100 {
		t.Fatalf("%d keys under run:gone/, want the seed's and %d more", len(all), n)
	}
	return all
}

var truncationTask = regexp.MustCompile(`being truncated by task (\d+)`)

// deleteGone deletes run:gone with its tiles and returns the truncation's
// task id.
func deleteGone(t *testing.T, a *apptest.App) int64 {
	t.Helper()
	start := time.Now()
	res := a.Do(t, "DELETE", "/rest/layers/run:gone.xml?truncate=true", "")
	took := time.Since(start)
	m := truncationTask.FindStringSubmatch(res.Body)
	if res.Status != http.StatusOK || !strings.Contains(res.Body, "<action>deleted</action>") || m == nil {
		t.Fatalf("DELETE ?truncate=true: %d %s", res.Status, res.Body)
	}
	t.Logf("DELETE ?truncate=true answered in %v", took.Round(time.Millisecond))
	if took > 5*time.Second*testenv.WaitScale() { // a whole truncation takes tens of seconds
		t.Errorf("DELETE ?truncate=true took %v: the truncation is not the request's", took)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// rowOf returns task id's row in a task list.
func rowOf(rows []row, id int64) (row, bool) {
	i := slices.IndexFunc(rows, func(r row) bool { return r[3] == id })
	if i < 0 {
		return row{}, false
	}
	return rows[i], true
}

// refusedWhileMarked checks that app x refuses the name while the mark
// exists: a seed (400 Unknown layer) and a render on miss (404, nothing
// stored).
func refusedWhileMarked(t *testing.T, x *apptest.App, who string) {
	t.Helper()
	// The miss first: a seed's refusal brings the process's catalogue up
	// to date.
	if status, _, body := getTile(t, x.URL, "/tiles/run:gone/EPSG:4326/png/5/40/20.png"); status != http.StatusNotFound {
		t.Errorf("%s: a render on miss of the deleted layer: %d %.200s, want 404", who, status, body)
	}
	res := x.Do(t, "POST", "/rest/seed/run:gone.json", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"format":"image/png"}}`)
	if res.Status != http.StatusBadRequest || !strings.Contains(res.Body, "Unknown layer: run:gone") {
		t.Errorf("%s: a seed of the deleted layer: %d %s, want 400 Unknown layer", who, res.Status, res.Body)
	}
}

// waitTruncated waits until the deletion mark of run:gone is gone (its
// list answers Unknown layer again).
func waitTruncated(t *testing.T, a *apptest.App, timeout time.Duration) {
	t.Helper()
	testenv.EventuallyEvery(t, timeout, 100*time.Millisecond, "the deleted layer's truncation to end", func() bool {
		return a.Do(t, "GET", "/rest/seed/run:gone.json", "").Status == http.StatusBadRequest
	})
}

// usedBy returns the tiles and bytes the usage report counts for a layer.
func usedBy(t *testing.T, a *apptest.App, name string) (tiles, bytes int64) {
	t.Helper()
	u := getUsage(t, a).layer(name)
	return u.UsedTiles, u.UsedBytes
}

func TestLayerDeletedInTheBackground(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := apptest.Options{Layers: apptest.Layers + goneLayer, DataDir: dir, SeedThreads: 2, Env: deletionEnv}
	a := apptest.Start(t, opts)
	before := seedGone(t, a, goneExtra(a))
	if tiles, _ := usedBy(t, a, "run:gone"); tiles == 0 {
		t.Fatalf("the usage report counts no tile of the seeded layer")
	}
	// On the AWS backend, a second process that would not read the
	// configuration again for an hour.
	var b *apptest.App
	if backendOf(a) == "aws" {
		env := map[string]string{"TILECACHE_LAYERS_REFRESH": "1h"}
		for k, v := range deletionEnv {
			env[k] = v
		}
		b = apptest.Start(t, apptest.Options{Layers: opts.Layers, DataDir: dir, Backend: "aws", SeedThreads: 2, Env: env})
		if res := b.Do(t, "GET", "/rest/seed/run:gone.json", ""); res.Status != http.StatusOK {
			t.Fatalf("process B does not know the layer: %d %s", res.Status, res.Body)
		}
	}

	id := deleteGone(t, a)
	refusedWhileMarked(t, a, "the deleting process")
	if b != nil {
		refusedWhileMarked(t, b, "a process an hour behind")
	}
	res := a.Do(t, "PUT", "/rest/layers/run:gone.xml", goneDoc, "Content-Type", "text/xml")
	if res.Status != http.StatusConflict || !strings.Contains(res.Body, "still being truncated by task "+strconv.FormatInt(id, 10)) {
		t.Errorf("re-creating the layer meanwhile: %d %s, want 409 naming task %d", res.Status, res.Body, id)
	}
	// A TRUNCATE row of the deleted name, in both lists, making progress.
	var progress row
	testenv.Eventually(t, 20*time.Second, "the truncation to make progress", func() bool {
		r, ok := rowOf(listRows(t, a, "/rest/seed.json"), id)
		if !ok {
			t.Fatalf("task %d not listed in /rest/seed.json", id)
		}
		progress = r
		return r[0] > 0
	})
	if r, ok := rowOf(listRows(t, a, "/rest/seed/run:gone.json"), id); !ok || r[4] != 1 || r[0]+r[2] != r[1] {
		t.Fatalf("the deleted layer's list: row %v (%v), want task %d RUNNING", r, ok, id)
	}
	t.Logf("truncation row before the stop: %v", progress)

	// Stopped mid-way, and started again on the same data: the first key
	// (deleted by the first page) is put back before the restart; a
	// truncation that resumes from its key cursor never lists it again.
	a.Stop()
	if b != nil {
		b.Stop()
	}
	left := a.Keys(t, "run:gone/")
	if len(left) == 0 || len(left) == len(before) {
		t.Fatalf("%d of %d keys left at the stop: want the truncation stopped mid-way", len(left), len(before))
	}
	first := before[0]
	if slices.Contains(left, first) {
		t.Fatalf("the first key %s is still stored after the first pages", first)
	}
	a.Put(t, first, []byte("behind the cursor"), tilestore.Meta{ContentType: "image/png"})
	// On AWS the stopped lane comes back by its message's redelivery or
	// by the sweep of stale lanes (the emulated queue may hold a message
	// received by a stopped process's long poll for its default
	// visibility): a short staleness keeps the test short.
	restart := opts
	restart.StaleAfter = 5 * time.Second
	a = apptest.Start(t, restart)
	waitTruncated(t, a, 2*time.Minute)
	if got := a.Keys(t, "run:gone/"); !slices.Equal(got, []string{first}) {
		n := len(got)
		if n > 5 {
			got = got[:5]
		}
		t.Errorf("after the truncation: %d keys left %v, want only %s (put back behind the cursor)", n, got, first)
	}
	if tiles, bytes := usedBy(t, a, "run:gone"); tiles != 0 || bytes != 0 {
		t.Errorf("the usage report counts %d tiles, %d bytes of the deleted layer, want none", tiles, bytes)
	}
	testenv.Eventually(t, 10*time.Second, "the truncation's row to end", func() bool {
		r, ok := rowOf(listRows(t, a, "/rest/seed.json"), id)
		return !ok || r[4] == 2 && r[0] == r[1]
	})
	// The usage report lists the layer no more (unless a recount of it is
	// pending, which it reports).
	for _, l := range getUsage(t, a).Layers {
		if l.Layer == "run:gone" && !l.RecountPending {
			t.Errorf("the usage report still lists the deleted layer: %+v", l)
		}
	}
	// The name is free again.
	if res := a.Do(t, "PUT", "/rest/layers/run:gone.xml", goneDoc, "Content-Type", "text/xml"); res.Status != http.StatusOK {
		t.Errorf("re-creating the layer after the truncation: %d %s", res.Status, res.Body)
	}
}

// TestDeletedLayerTruncationKilled: the truncation of a deleted layer is
// killed like any task; its mark stays (the name is still refused, the
// 409 says so), and DELETE ?truncate=true of the name starts it again.
func TestDeletedLayerTruncationKilled(t *testing.T) {
	t.Parallel()
	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + goneLayer, SeedThreads: 2, Env: deletionEnv, Log: &log})
	before := seedGone(t, a, goneExtra(a))
	id := deleteGone(t, a)
	res := a.Do(t, "POST", "/rest/seed/run:gone", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	if res.Status != http.StatusOK || !strings.Contains(res.Body, fmt.Sprintf("[%d: run:gone, TRUNCATE, ", id)) {
		t.Fatalf("kill: %d %s", res.Status, res.Body)
	}
	testenv.Eventually(t, 5*time.Second, "the killed truncation to leave the list", func() bool {
		r, ok := rowOf(listRows(t, a, "/rest/seed.json"), id)
		return !ok || r[4] == -1
	})
	// A killed lane stops at its next checkpoint (it may finish the page
	// it was deleting, as a seed lane its metatile), and says so; from
	// then on, through the requests below, no key goes.
	stopped := fmt.Sprintf("task=%d ", id)
	testenv.Eventually(t, 5*time.Second, "the killed truncation's lane to stop", func() bool {
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, "truncation of a deleted layer stopped") && strings.Contains(line, stopped) {
				return true
			}
		}
		return false
	})
	n1 := len(a.Keys(t, "run:gone/"))
	refusedWhileMarked(t, a, "after the kill")
	res = a.Do(t, "PUT", "/rest/layers/run:gone.xml", goneDoc, "Content-Type", "text/xml")
	if res.Status != http.StatusConflict || !strings.Contains(res.Body, "not running") {
		t.Errorf("re-creating the layer after the kill: %d %s, want 409 saying the truncation is not running", res.Status, res.Body)
	}
	if n2 := len(a.Keys(t, "run:gone/")); n2 == 0 || n1 != n2 {
		t.Fatalf("after the kill: %d then %d of %d keys left, want the truncation stopped", n1, n2, len(before))
	}
	id2 := deleteGone(t, a)
	if id2 == id {
		t.Fatalf("the truncation started again as task %d, the killed one's id", id2)
	}
	waitTruncated(t, a, 2*time.Minute)
	if n := len(a.Keys(t, "run:gone/")); n != 0 {
		t.Errorf("%d keys left after the truncation started again", n)
	}
}
