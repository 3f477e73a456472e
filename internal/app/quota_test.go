package app_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/quota"
	"tilecache/internal/quota/quotatest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// quotaLayers are the layers of the disk-quota tests.
const quotaLayers = `
layers:
  - name: quota:world
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png, image/jpeg]
    metatiling: [4, 4]
    cacheControl: public, max-age=60
    parameterFilters:
      - key: STYLES
        default: ""
        values: [a, b]
    source: {type: testpattern}
  - name: other:world
    id: other-world
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
  - name: quota:slow
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern, delay: 25ms}
`

// layerIDs maps the test layers to their ids in the tile store.
var layerIDs = map[string]string{"lookup:world": "lookup:world", "quota:world": "quota:world", "other:world": "other-world", "quota:slow": "quota:slow"}

// startQuota starts an app with the quota test layers; a short settle time
// (StaleAfter) lets recounts happen soon after tasks finish.
func startQuota(t *testing.T, dir string) *apptest.App {
	t.Helper()
	return apptest.Start(t, apptest.Options{Layers: quotaLayers, DataDir: dir, SeedThreads: 4, StaleAfter: 2 * time.Second})
}

// startQuotaAt is startQuota on a new data directory with the clean-up
// schedule on clock: it runs at start and on configuration changes, and
// otherwise when the test fires it.
func startQuotaAt(t *testing.T, clock *quotatest.ScheduleClock) *apptest.App {
	t.Helper()
	return apptest.Start(t, apptest.Options{Layers: quotaLayers, SeedThreads: 4, StaleAfter: 2 * time.Second, CleanUpClock: clock})
}

type usageLayer struct {
	Layer          string `json:"layer"`
	UsedBytes      int64  `json:"usedBytes"`
	UsedTiles      int64  `json:"usedTiles"`
	RecountPending bool   `json:"recountPending"`
}

type usageReport struct {
	Enabled        bool         `json:"enabled"`
	DiskBlockSize  int64        `json:"diskBlockSize"`
	UsedBytes      int64        `json:"usedBytes"`
	UsedTiles      int64        `json:"usedTiles"`
	LastCleanUp    *string      `json:"lastCleanUp"`
	RecountPending bool         `json:"recountPending"`
	Layers         []usageLayer `json:"layers"`
}

func (r usageReport) layer(name string) usageLayer {
	for _, l := range r.Layers {
		if l.Layer == name {
			return l
		}
	}
	return usageLayer{Layer: name}
}

func getUsage(t testing.TB, a *apptest.App) usageReport {
	t.Helper()
	res := a.Do(t, "GET", "/rest/diskquota/usage.json", "")
	if res.Status != 200 {
		t.Fatalf("GET usage: got %d %q", res.Status, res.Body)
	}
	var doc struct {
		U usageReport `json:"diskQuotaUsage"`
	}
	if err := json.Unmarshal([]byte(res.Body), &doc); err != nil {
		t.Fatalf("decode usage %q: %v", res.Body, err)
	}
	return doc.U
}

func putQuota(t testing.TB, a *apptest.App, fields string) {
	t.Helper()
	res := a.Do(t, "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{`+fields+`}}`)
	if res.Status != 200 {
		t.Fatalf("PUT diskquota %s: got %d %q", fields, res.Status, res.Body)
	}
}

// waitSettled waits until usage is counted and no recount is pending.
func waitSettled(t testing.TB, a *apptest.App) usageReport {
	t.Helper()
	var r usageReport
	testenv.Eventually(t, 60*time.Second, "usage to be counted with no recount pending", func() bool {
		r = getUsage(t, a)
		return !r.RecountPending
	})
	return r
}

type pageCount struct{ Tiles, Bytes int64 }

// truth counts the tiles a layer really has in the tile store, per page,
// in blocks of bs bytes: what usage must equal.
func truth(t testing.TB, a *apptest.App, layer string, bs int64) map[quota.PageKey]pageCount {
	t.Helper()
	id, ok := layerIDs[layer]
	if !ok {
		id = layer
	}
	prefix := a.Prefix + id + "/"
	out := map[quota.PageKey]pageCount{}
	err := a.Local.Tiles.List(t.Context(), prefix, func(o tilestore.Object) error {
		parts := strings.Split(strings.TrimPrefix(o.Key, prefix), "/")
		if len(parts) != 6 {
			return nil // the parameters side object
		}
		var z int
		var x, y int64
		if _, err := fmt.Sscanf(parts[3]+" "+parts[4]+" "+strings.Split(parts[5], ".")[0], "%d %d %d", &z, &x, &y); err != nil {
			return err
		}
		k := quota.PageOf(tilestore.SetName{Layer: layer, GridSetID: parts[0], FormatID: parts[1], ParametersID: parts[2]}, z, x, y)
		c := out[k]
		c.Tiles++
		c.Bytes += quota.Blocks(o.Size, bs)
		out[k] = c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// recorded returns a layer's pages as the usage store has them.
func recorded(t testing.TB, a *apptest.App, layer string) map[quota.PageKey]quota.Page {
	t.Helper()
	ps, err := a.Local.Usage.Pages(t.Context(), layer)
	if err != nil {
		t.Fatal(err)
	}
	out := map[quota.PageKey]quota.Page{}
	for _, p := range ps {
		out[p.Key] = p
	}
	return out
}

// wantNoDrift checks that a layer's usage, page by page and in the
// report, equals what the tile store holds.
func wantNoDrift(t testing.TB, a *apptest.App, step, layer string, bs int64) {
	t.Helper()
	want := truth(t, a, layer, bs)
	got := recorded(t, a, layer)
	var wantTiles, wantBytes int64
	for k, c := range want {
		wantTiles += c.Tiles
		wantBytes += c.Bytes
		if p := got[k]; p.Tiles != c.Tiles || p.Bytes != c.Bytes {
			t.Errorf("%s: page %s: recorded %d tiles, %d bytes; stored %d tiles, %d bytes", step, k.ID(), p.Tiles, p.Bytes, c.Tiles, c.Bytes)
		}
	}
	for k, p := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: page %s recorded with %d tiles, %d bytes; none stored", step, k.ID(), p.Tiles, p.Bytes)
		}
	}
	if l := getUsage(t, a).layer(layer); l.UsedBytes != wantBytes || l.UsedTiles != wantTiles {
		t.Errorf("%s: layer %s: report says %d bytes, %d tiles; stored %d bytes, %d tiles (drift %d bytes)",
			step, layer, l.UsedBytes, l.UsedTiles, wantBytes, wantTiles, l.UsedBytes-wantBytes)
	}
}

// TestUsageHasNoDrift checks that usage equals the block-rounded sizes of
// the stored tiles after seed, reseed, truncate, mass truncate and a
// process stopped mid-seed and restarted — without a recount for all but
// the last (and after a stale object written behind the cache's back, with
// one requested).
func TestUsageHasNoDrift(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := startQuota(t, dir)
	const bs = 96 // a small odd block size: rounding shows and sizes differ
	putQuota(t, a, `"diskBlockSize":96`)
	if r := waitSettled(t, a); r.DiskBlockSize != bs {
		t.Fatalf("got block size %d, want %d", r.DiskBlockSize, bs)
	}
	check := func(step string, layers ...string) {
		t.Helper()
		r := getUsage(t, a)
		for _, l := range layers {
			if r.layer(l).RecountPending {
				t.Errorf("%s: layer %s needs a recount; counting should have been exact", step, l)
			}
			wantNoDrift(t, a, step, l, bs)
		}
	}
	run := func(layer, body string) {
		t.Helper()
		waitFinished(t, a, ids(seedReq(t, a, layer, `{"seedRequest":`+body+`}`)), 60*time.Second)
	}

	run("quota:world", `{"zoomStart":0,"zoomStop":4,"threadCount":3}`)
	run("quota:world", `{"zoomStart":0,"zoomStop":2,"parameters":{"entry":{"string":["STYLES","a"]}}}`)
	check("seed", "quota:world")
	if r := getUsage(t, a); r.layer("quota:world").UsedTiles != 682+42 {
		t.Fatalf("after seeding got %d tiles, want %d", r.layer("quota:world").UsedTiles, 682+42)
	}

	// Objects changed behind the cache's back are only seen by a recount.
	for _, k := range []string{"3/1/1.png", "4/9/2.png", "4/30/15.png"} {
		a.Put(t, "quota:world/EPSG:4326/png/default/"+k, []byte("stale"), tilestore.Meta{ContentType: "image/png"})
	}
	testenv.Eventually(t, 30*time.Second, "a requested recount", func() bool {
		done, err := a.Local.Cleaner.Recount(t.Context(), []string{"quota:world"})
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(done, "quota:world")
	})
	check("recount", "quota:world")

	run("quota:world", `{"zoomStart":3,"zoomStop":4,"type":"reseed","threadCount":2}`) // replaces the stale objects
	check("reseed", "quota:world")
	run("quota:world", `{"bounds":{"coords":{"double":[10,5,100,60]}},"zoomStart":2,"zoomStop":4,"type":"truncate"}`)
	run("quota:world", `{"zoomStart":0,"zoomStop":1,"type":"truncate","parameters":{"entry":{"string":["STYLES","a"]}}}`)
	check("truncate", "quota:world")
	run("quota:world", `{"zoomStart":0,"zoomStop":3,"format":"image/jpeg"}`)
	run("quota:world", `{"zoomStart":3,"zoomStop":5,"bounds":{"coords":{"double":[-50,-50,-40,-40]}}}`) // seed over existing tiles
	run("other:world", `{"zoomStart":0,"zoomStop":3,"threadCount":2}`)
	check("more seeds", "quota:world", "other:world")
	res := a.Do(t, "POST", "/rest/masstruncate", "<truncateLayer><layerName>other:world</layerName></truncateLayer>", "Content-Type", "text/xml")
	if res.Status != 200 {
		t.Fatalf("mass truncate: got %d %q", res.Status, res.Body)
	}
	check("mass truncate", "quota:world", "other:world")
	if l := getUsage(t, a).layer("other:world"); l.UsedTiles != 0 || l.UsedBytes != 0 {
		t.Errorf("after mass truncate: got %+v, want nothing used", l)
	}

	// A killed lane counts the tiles it stored since its last checkpoint
	// directly: no recount needed.
	progress := func(of []row, n int64) {
		t.Helper()
		want := ids(of)
		testenv.Eventually(t, 20*time.Second, "progress on both lanes", func() bool {
			seen := 0
			for _, r := range listRows(t, a, "/rest/seed.json") {
				if slices.Contains(want, r[3]) {
					if r[0] < n || r[4] != 1 {
						return false
					}
					seen++
				}
			}
			return seen == len(want)
		})
	}
	rows := seedReq(t, a, "quota:slow", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":2}}`)
	progress(rows, 10)
	kill(t, a, "/rest/seed", "running")
	waitFinished(t, a, ids(rows), 10*time.Second)
	// The lanes noticed the kill: once a killed task's lane no longer
	// works, it has counted its last tiles.
	testenv.Eventually(t, 10*time.Second, "the killed lanes to stop", func() bool {
		return !slices.ContainsFunc(ids(rows), a.Local.Engine.Worker.Working)
	})
	check("kill", "quota:slow")

	// A process stopped mid-seed loses the counts of its uncheckpointed
	// tiles; the layer is recounted once its tasks finished.
	rows = seedReq(t, a, "quota:slow", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":2}}`)
	progress(rows, 20)
	a.Stop()
	a = startQuota(t, dir)
	// Usually quota:slow is marked for a recount now (a lane stopped with
	// uncounted tiles); it need not be when both lanes were between
	// messages.
	t.Logf("after the restart: quota:slow recount pending: %v", getUsage(t, a).layer("quota:slow").RecountPending)
	waitFinished(t, a, ids(rows), 60*time.Second)
	waitSettled(t, a)
	for _, l := range []string{"quota:world", "other:world", "quota:slow"} {
		wantNoDrift(t, a, "restart", l, bs)
	}
	r := getUsage(t, a)
	var sum int64
	for _, l := range r.Layers {
		sum += l.UsedBytes
	}
	if r.UsedBytes != sum || r.layer("quota:slow").UsedTiles != 170 {
		t.Errorf("report %+v: want the layers to add up and quota:slow to hold 170 tiles", r)
	}
}

// boxPages seeds level 7 of a layer around (lon, 0), where four pages
// meet, and returns those four pages (16 tiles each) by id, with the path
// of one tile of each for the tile endpoint.
func boxPages(t *testing.T, a *apptest.App, layer string, lon float64) ([]quota.PageKey, map[quota.PageKey]string) {
	t.Helper()
	body := fmt.Sprintf(`{"seedRequest":{"zoomStart":7,"zoomStop":7,"bounds":{"coords":{"double":[%g,-5,%g,5]}}}}`, lon-5, lon+5)
	waitFinished(t, a, ids(seedReq(t, a, layer, body)), 30*time.Second)
	pages := slices.SortedFunc(maps.Keys(recorded(t, a, layer)), func(a, b quota.PageKey) int { return strings.Compare(a.ID(), b.ID()) })
	if len(pages) != 4 {
		t.Fatalf("layer %s: got %d pages, want 4", layer, len(pages))
	}
	tiles := map[quota.PageKey]string{}
	for _, k := range keys(t, a, layerIDs[layer]+"/EPSG:4326/png/default/7/") {
		var x, y int64
		if _, err := fmt.Sscanf(k[strings.LastIndex(k, "/7/")+3:], "%d/%d.png", &x, &y); err != nil {
			t.Fatal(err)
		}
		p := quota.PageOf(pages[0].Set, 7, x, y)
		if _, ok := tiles[p]; !ok {
			tiles[p] = fmt.Sprintf("/tiles/%s/EPSG:4326/png/7/%d/%d.png", layer, x, y)
		}
	}
	if len(tiles) != 4 {
		t.Fatalf("layer %s: tiles in %d pages, want 4", layer, len(tiles))
	}
	return pages, tiles
}

// read reads a tile through the tile endpoint n times, one read after
// another: each read is stamped when it is served, after the last one's
// answer, and the usage store keeps nanoseconds, so reads of pages in turn
// leave their pages' last accesses in that order (wantReadInOrder checks).
func read(t *testing.T, a *apptest.App, path string, n int) {
	t.Helper()
	for range n {
		res := a.DoAuth(t, "", "", "GET", path, "")
		if res.Status != 200 {
			t.Fatalf("GET %s: got %d %q", path, res.Status, res.Body)
		}
	}
}

// wantReadInOrder checks, once the reads are flushed, that the pages of a
// layer were last read in the order given, each strictly after the one
// before: what an expiration by last access is checked against.
func wantReadInOrder(t *testing.T, a *apptest.App, layer string, pages ...quota.PageKey) {
	t.Helper()
	rec := recorded(t, a, layer)
	for i := 1; i < len(pages); i++ {
		if prev, cur := rec[pages[i-1]].LastAccess, rec[pages[i]].LastAccess; !cur.After(prev) {
			t.Fatalf("layer %s: page %s last read at %v, not after page %s (%v), which was read before it",
				layer, pages[i].ID(), cur, pages[i-1].ID(), prev)
		}
	}
}

func bytesOf(t *testing.T, a *apptest.App, layer string, pages ...quota.PageKey) int64 {
	t.Helper()
	rec := recorded(t, a, layer)
	var n int64
	for _, p := range pages {
		n += rec[p].Bytes
	}
	return n
}

// wantPagesLeft waits for the clean-up and checks that exactly the pages
// keep remain of a layer, in the usage store and in the tile store.
func wantPagesLeft(t *testing.T, a *apptest.App, layer string, keep []quota.PageKey) {
	t.Helper()
	var got []quota.PageKey
	testenv.Eventually(t, 30*time.Second, "the clean-up of "+layer, func() bool {
		got = slices.Collect(maps.Keys(recorded(t, a, layer)))
		return len(got) == len(keep)
	})
	for _, k := range keep {
		if !slices.Contains(got, k) {
			t.Errorf("layer %s: page %s was deleted; want the pages %v kept", layer, k.ID(), keep)
		}
	}
	stored := truth(t, a, layer, 1)
	if len(stored) != len(keep) {
		t.Errorf("layer %s: tiles of %d pages stored, want %d", layer, len(stored), len(keep))
	}
	for _, k := range keep {
		if stored[k].Tiles != 16 {
			t.Errorf("layer %s: page %s holds %d tiles, want 16", layer, k.ID(), stored[k].Tiles)
		}
	}
}

func layerQuotaJSON(layer, policy string, bytes int64) string {
	return fmt.Sprintf(`{"layer":%q,"expirationPolicyName":%q,"quota":{"value":"%d","units":"B"}}`, layer, policy, bytes)
}

func TestCleanUpLRUDeletesLeastRecentlyUsedPages(t *testing.T) {
	t.Parallel()
	a := startQuota(t, "")
	waitSettled(t, a)
	pages, tiles := boxPages(t, a, "quota:world", -90)
	// Read one tile of each page, oldest access first.
	order := []quota.PageKey{pages[2], pages[0], pages[3], pages[1]}
	for _, p := range order {
		read(t, a, tiles[p], 1)
	}
	if err := a.Local.Recorder.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantReadInOrder(t, a, "quota:world", order...)
	limit := bytesOf(t, a, "quota:world", order[2], order[3]) + bytesOf(t, a, "quota:world", order[1])/2
	putQuota(t, a, `"enabled":true,"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"SECONDS","layerQuotas":[`+
		layerQuotaJSON("quota:world", "LRU", limit)+`]`)
	wantPagesLeft(t, a, "quota:world", order[2:])
	r := getUsage(t, a)
	if l := r.layer("quota:world"); l.UsedBytes > limit || r.LastCleanUp == nil {
		t.Errorf("after the clean-up: got %+v (last clean-up %v), want at most %d bytes", l, r.LastCleanUp, limit)
	}
	wantNoDrift(t, a, "clean-up", "quota:world", 4096)
}

func TestCleanUpLFUDeletesLeastFrequentlyUsedPages(t *testing.T) {
	t.Parallel()
	a := startQuota(t, "")
	waitSettled(t, a)
	pages, tiles := boxPages(t, a, "quota:world", 90)
	// The least frequently used page is read last, so LRU would keep it.
	hits := map[quota.PageKey]int{pages[0]: 3, pages[1]: 5, pages[2]: 2, pages[3]: 1}
	for _, p := range []quota.PageKey{pages[1], pages[0], pages[2], pages[3]} {
		read(t, a, tiles[p], hits[p])
	}
	if err := a.Local.Recorder.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec := recorded(t, a, "quota:world")
	for p, n := range hits {
		if rec[p].Hits != int64(n) {
			t.Errorf("page %s: got %d hits, want %d", p.ID(), rec[p].Hits, n)
		}
	}
	// LFU order: pages[3], pages[2], pages[0], pages[1]: the first two go.
	limit := bytesOf(t, a, "quota:world", pages[0], pages[1]) + bytesOf(t, a, "quota:world", pages[2])/2
	putQuota(t, a, `"enabled":true,"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"SECONDS","layerQuotas":[`+
		layerQuotaJSON("quota:world", "LFU", limit)+`]`)
	wantPagesLeft(t, a, "quota:world", []quota.PageKey{pages[0], pages[1]})
	wantNoDrift(t, a, "clean-up", "quota:world", 4096)
}

// TestLayerAndGlobalQuotasBothEnforced: quota:world has a layer quota (LFU)
// and other:world is left to the global quota (LRU), which counts both
// layers' usage but, as in GeoWebCache, expires only pages of layers
// without a quota of their own.
func TestLayerAndGlobalQuotasBothEnforced(t *testing.T) {
	t.Parallel()
	a := startQuota(t, "")
	waitSettled(t, a)
	qp, qt := boxPages(t, a, "quota:world", -90)
	op, ot := boxPages(t, a, "other:world", 90)
	// quota:world: pages[1] and pages[3] are read twice, the others once.
	for i, p := range qp {
		read(t, a, qt[p], 1+i%2)
	}
	// other:world: read in the order 3, 1, 0, 2; the newest survives.
	for _, i := range []int{3, 1, 0, 2} {
		read(t, a, ot[op[i]], 1)
	}
	if err := a.Local.Recorder.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantReadInOrder(t, a, "quota:world", qp...)
	wantReadInOrder(t, a, "other:world", op[3], op[1], op[0], op[2])
	layerLimit := bytesOf(t, a, "quota:world", qp[1], qp[3]) + bytesOf(t, a, "quota:world", qp[0])/2
	globalLimit := bytesOf(t, a, "quota:world", qp[1], qp[3]) + bytesOf(t, a, "other:world", op[2]) + bytesOf(t, a, "other:world", op[0])/2
	putQuota(t, a, fmt.Sprintf(`"enabled":true,"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"SECONDS","globalExpirationPolicyName":"LRU",`+
		`"globalQuota":{"value":"%d","units":"B"},"layerQuotas":[%s]`, globalLimit, layerQuotaJSON("quota:world", "LFU", layerLimit)))
	wantPagesLeft(t, a, "quota:world", []quota.PageKey{qp[1], qp[3]})
	wantPagesLeft(t, a, "other:world", []quota.PageKey{op[2]})
	if r := getUsage(t, a); r.UsedBytes > globalLimit || r.layer("quota:world").UsedBytes > layerLimit {
		t.Errorf("after the clean-up: got %+v, want at most %d in all and %d for quota:world", r, globalLimit, layerLimit)
	}
	wantNoDrift(t, a, "clean-up", "quota:world", 4096)
	wantNoDrift(t, a, "clean-up", "other:world", 4096)
}

func TestCleanUpDisabledDeletesNothing(t *testing.T) {
	t.Parallel()
	clock := quotatest.NewScheduleClock()
	a := startQuotaAt(t, clock)
	waitSettled(t, a)
	boxPages(t, a, "quota:world", -90)
	before := keys(t, a, "quota:world/")
	putQuota(t, a, `"enabled":false,"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"SECONDS","globalQuota":{"value":"0","units":"B"},"layerQuotas":[`+
		layerQuotaJSON("quota:world", "LRU", 0)+`]`)
	if err := a.Local.Cleaner.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Local.Cleaner.RunDue(t.Context(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// And the schedule's own runs, an hour and two hours on.
	clock.Fire(t, time.Hour)
	clock.Fire(t, time.Hour)
	if got := keys(t, a, "quota:world/"); !slices.Equal(got, before) {
		t.Fatalf("disabled quota deleted tiles: %d before, %d after", len(before), len(got))
	}
	if r := getUsage(t, a); r.LastCleanUp != nil || r.layer("quota:world").UsedTiles != 64 {
		t.Fatalf("got %+v, want no clean-up and 64 tiles", r)
	}
}

// TestFrequencyChangeReschedules: a PUT of a new cacheCleanUpFrequency
// changes when the next clean-up runs, at once. The schedule's clock is
// the test's: its runs between PUTs are those the test fires.
func TestFrequencyChangeReschedules(t *testing.T) {
	t.Parallel()
	clock := quotatest.NewScheduleClock()
	a := startQuotaAt(t, clock)
	last := func() string {
		r := getUsage(t, a)
		if r.LastCleanUp == nil {
			return ""
		}
		return *r.LastCleanUp
	}
	// Enabled, hourly: the first clean-up runs at once (there was none).
	putQuota(t, a, `"enabled":true,"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"HOURS"`)
	var first string
	testenv.Eventually(t, 10*time.Second, "the first clean-up", func() bool { first = last(); return first != "" })
	// Runs of the schedule 19, 38 and 57 minutes on: no clean-up, and the
	// next run within a minute (for the maintenance).
	for i := range 3 {
		wait := clock.Fire(t, 19*time.Minute)
		if got := last(); got != first {
			t.Fatalf("hourly clean-up ran again %d minutes later: %s, then %s", 19*(i+1), first, got)
		}
		if wait > time.Minute {
			t.Fatalf("the schedule waits %v after a run, want at most a minute", wait)
		}
	}
	// Every second: the next one runs at the PUT (more than a second since
	// the last), with no run of the schedule fired.
	putQuota(t, a, `"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"SECONDS"`)
	var second string
	testenv.Eventually(t, 5*time.Second, "a clean-up on the new schedule", func() bool { second = last(); return second != first })
	// And its next run, a second later, cleans up again.
	clock.Fire(t, time.Second)
	if got := last(); got == second {
		t.Fatalf("no clean-up a second after the last on a schedule of every second (last %s)", second)
	}
	// Back to hourly: no more clean-ups, through the schedule's runs of the
	// next 57 minutes.
	putQuota(t, a, `"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"HOURS"`)
	settled := last()
	for range 3 {
		clock.Fire(t, 19*time.Minute)
		if got := last(); got != settled {
			t.Fatalf("clean-ups went on after the frequency became hourly: %s, then %s", settled, got)
		}
	}
}

// TestUsageSettlesAfterKills: seeds and reseeds killed while their lanes
// write leave the usage equal to what is stored once the lanes have
// stopped — page by page, with no recount asked — rather than drifting
// (a killed lane may finish the metatile it holds, and that write counts
// as any other).
func TestUsageSettlesAfterKills(t *testing.T) {
	t.Parallel()
	a := startQuota(t, t.TempDir())
	const bs = 96
	putQuota(t, a, `"diskBlockSize":96`)
	waitSettled(t, a)
	for _, body := range []string{
		`{"zoomStart":0,"zoomStop":8,"threadCount":4}`,
		`{"zoomStart":0,"zoomStop":8,"threadCount":3,"type":"reseed"}`,
	} {
		before := len(a.TileKeys(t, "quota:slow/"))
		rows := seedReq(t, a, "quota:slow", `{"seedRequest":`+body+`}`)
		testenv.Eventually(t, 30*time.Second, "the lanes to write", func() bool {
			done := int64(0)
			for _, r := range listRows(t, a, "/rest/seed/quota:slow.json") {
				done += r[0]
			}
			return done >= int64(before)+150 // past the tiles stored before
		})
		if r := a.Do(t, "POST", "/rest/seed/quota:slow", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded"); r.Status != 200 {
			t.Fatalf("kill: %d %s", r.Status, r.Body)
		}
		waitFinished(t, a, ids(rows), 30*time.Second)
		stored := len(a.TileKeys(t, "quota:slow/"))
		t.Logf("%s: %d tiles stored before, %d after the kill", body, before, stored)
		testenv.Eventually(t, 30*time.Second, "the usage to settle to the stored tiles", func() bool {
			l := getUsage(t, a).layer("quota:slow")
			var tiles, bytes int64
			for _, c := range truth(t, a, "quota:slow", bs) {
				tiles += c.Tiles
				bytes += c.Bytes
			}
			return l.UsedTiles == tiles && l.UsedBytes == bytes
		})
		if getUsage(t, a).layer("quota:slow").RecountPending {
			t.Errorf("%s: a recount is pending after the kill; counting should have been exact", body)
		}
		wantNoDrift(t, a, "killed "+body, "quota:slow", bs)
	}
}
