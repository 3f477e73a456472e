package app_test

// No holes, no overreach: a seed fills every missing tile of its request,
// whatever left a metatile partly stored, without writing again the tiles
// that are there; a truncate deletes exactly its range's tiles. Run on
// each backend (make test runs the app tests embedded and on the local
// AWS stack).

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// holesLayers are layers of their own, so that the stored-tiles counter
// of /metrics counts this test's writes alone.
const holesLayers = `
layers:
  - name: holes:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
  - name: holes:three
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [3, 3]
    source: {type: testpattern}
  - name: holes:stale
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    expireCache: 3
    source: {type: testpattern}
  - name: holes:miss
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    source: {type: testpattern}
`

// holes is a test app with its layers, and the count of tiles stored so
// far per layer.
type holes struct {
	t *testing.T
	a *apptest.App
}

// stored returns how many tiles layer has PUT so far.
func (h holes) stored(layer string) int64 {
	return int64(scrape(h.t, h.a)["tilecache_tiles_stored_total{layer="+layer+"}"])
}

// run POSTs a seed request and waits for its tasks to be DONE.
func (h holes) run(layer, body string) []task.Task {
	h.t.Helper()
	tasks := waitFinished(h.t, h.a, ids(seedReq(h.t, h.a, layer, body)), 60*time.Second)
	for _, tk := range tasks {
		if tk.Status != task.Done {
			h.t.Fatalf("task %d: %s, want DONE", tk.ID, tk.Status)
		}
	}
	return tasks
}

// step runs a request and checks the stored keys of layer after it, and
// that it PUT exactly the keys that were missing: none twice, none that
// was there.
func (h holes) step(name, layer, body string, want []string) {
	h.t.Helper()
	before := keys(h.t, h.a, layer+"/")
	puts := h.stored(layer)
	s3, onS3 := h.a.Local.Tiles.(*s3store.Store)
	var reqs s3store.RequestCounts
	if onS3 {
		reqs = s3.Requests()
	}
	h.run(layer, body)
	got := keys(h.t, h.a, layer+"/")
	if onS3 {
		d := s3.Requests().Sub(reqs)
		h.t.Logf("%s: %d tiles stored, %d PUT; S3 requests: %d LIST, %d HEAD, %d PUT, %d DELETE", name, len(got), h.stored(layer)-puts, d.List, d.Head, d.Put, d.Delete)
	}
	if !slices.Equal(got, want) {
		h.t.Fatalf("%s: stored %d tiles, want %d:\ngot  %v\nwant %v", name, len(got), len(want), got, want)
	}
	var added int64
	for _, k := range got {
		if !slices.Contains(before, k) {
			added++
		}
	}
	if n := h.stored(layer) - puts; n != added {
		h.t.Fatalf("%s: %d tiles PUT, want the %d that were missing", name, n, added)
	}
}

// tileKeys returns the sorted keys of the tiles of r (z, x0..x1, y0..y1)
// of a layer's EPSG:4326 PNG tile set, less those drop says.
func tileKeys(layer string, z, x0, x1, y0, y1 int, drop func(x, y int) bool) []string {
	var out []string
	for x := x0; x <= x1; x++ {
		for y := y0; y <= y1; y++ {
			if drop == nil || !drop(x, y) {
				out = append(out, fmt.Sprintf("%s/EPSG:4326/png/default/%d/%d/%d.png", layer, z, x, y))
			}
		}
	}
	slices.Sort(out)
	return out
}

func startHoles(t *testing.T) holes {
	t.Helper()
	return holes{t: t, a: apptest.Start(t, apptest.Options{Layers: holesLayers, SeedThreads: 2})}
}

// z3Box is the 4×4 metatile of EPSG:4326 z3 at columns 8-11, rows 4-7.
const z3Box = `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":3,"zoomStop":3,"format":"image/png","bounds":{"coords":{"double":[0,0,89,89]}}}}`

// TestSeedFillsAMetatileAGeometryPartlyStored: a seed by a small polygon
// stores its one tile; a box seed of the whole metatile then stores the
// other 15 (it skipped the metatile, its first tile being there).
func TestSeedFillsAMetatileAGeometryPartlyStored(t *testing.T) {
	t.Parallel()
	h := startHoles(t)
	h.step("polygon seed", "holes:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":3,"zoomStop":3,"format":"image/png",
		"geometry":{"type":"Polygon","coordinates":[[[1,1],[10,1],[10,10],[1,10],[1,1]]]}}}`,
		tileKeys("holes:world", 3, 8, 8, 4, 4, nil))
	h.step("box seed", "holes:world", z3Box, tileKeys("holes:world", 3, 8, 11, 4, 7, nil))
	// Nothing missing: nothing rendered again.
	h.step("box seed again", "holes:world", z3Box, tileKeys("holes:world", 3, 8, 11, 4, 7, nil))
	wantNoDrift(t, h.a, "after the box seeds", "holes:world", waitSettled(t, h.a).DiskBlockSize)
}

// TestTruncateTakesExactlyItsBoxThenSeedRefills: a truncate of a box of
// 2×2 tiles deletes those 4 tiles (not their metatile's 16) and its task
// processes the metatile's positions; a seed then PUTs the 4 again.
func TestTruncateTakesExactlyItsBoxThenSeedRefills(t *testing.T) {
	t.Parallel()
	h := startHoles(t)
	all := tileKeys("holes:world", 3, 8, 11, 4, 7, nil)
	h.step("seed", "holes:world", z3Box, all)
	tasks := h.run("holes:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":3,"zoomStop":3,"format":"image/png","type":"truncate",
		"bounds":{"coords":{"double":[1,1,44,44]}}}}`)
	if len(tasks) != 1 || tasks[0].Total != 16 || tasks[0].Done != 16 {
		t.Fatalf("truncate tasks %+v, want one of the metatile's 16 positions", tasks)
	}
	box := func(x, y int) bool { return x <= 9 && y <= 5 } // tiles 8-9 × 4-5
	if got, want := keys(t, h.a, "holes:world/"), tileKeys("holes:world", 3, 8, 11, 4, 7, box); !slices.Equal(got, want) {
		t.Fatalf("after the truncate: %d tiles, want the %d outside the box:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	h.step("seed after the truncate", "holes:world", z3Box, all)
	// The usage counted along the way is the store's, tile by tile.
	r := waitSettled(t, h.a)
	wantNoDrift(t, h.a, "after the refill", "holes:world", r.DiskBlockSize)
	if l := r.layer("holes:world"); l.UsedTiles != 16 {
		t.Errorf("usage counts %d tiles, want 16", l.UsedTiles)
	}
}

// TestTileListSeedFillsAPartlyStoredMetatile: a seed of an XYZ tile list
// whose metatile is partly stored stores the missing tiles of it.
func TestTileListSeedFillsAPartlyStoredMetatile(t *testing.T) {
	t.Parallel()
	h := startHoles(t)
	h.step("polygon seed", "holes:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":3,"zoomStop":3,"format":"image/png",
		"geometry":{"type":"Polygon","coordinates":[[[1,1],[30,1],[30,10],[1,10],[1,1]]]}}}`,
		tileKeys("holes:world", 3, 8, 9, 4, 4, nil))
	// TMS 3/10/6 is XYZ 3/10/1 (8 rows): a tile of the same metatile.
	before := keys(t, h.a, "holes:world/")
	puts := h.stored("holes:world")
	res := h.a.Do(t, "POST", "/rest/seed/holes:world.json?gridSetId=EPSG:4326&format=image/png&xyz=true", "3/10/1\n", "Content-Type", "text/x-tile-list")
	if res.Status != 200 {
		t.Fatalf("tile list seed: %d %s", res.Status, res.Body)
	}
	waitFinished(t, h.a, ids(decodeRows(t, res.Body)), 30*time.Second)
	// A tile list names whole metatiles: the metatile's 16 tiles are stored.
	want := tileKeys("holes:world", 3, 8, 11, 4, 7, nil)
	if got := keys(t, h.a, "holes:world/"); !slices.Equal(got, want) {
		t.Fatalf("after the tile list seed: %d tiles, want %d:\ngot  %v", len(got), len(want), got)
	}
	if n := h.stored("holes:world") - puts; n != int64(len(want)-len(before)) {
		t.Fatalf("%d tiles PUT, want the %d that were missing", n, len(want)-len(before))
	}
}

// TestSeedFillsMetatilesCutByAnExpiredPage: the quota expires pages of
// 64×64 tiles, which cut 3×3 metatiles; the tiles of one page removed
// behind the seed's back (as an expiry leaves them), a seed of the same
// box stores exactly them again.
func TestSeedFillsMetatilesCutByAnExpiredPage(t *testing.T) {
	t.Parallel()
	h := startHoles(t)
	// z7 of EPSG:4326: 256×128 tiles of 1.40625°; columns and rows 60-68
	// are nine 3×3 metatiles across the page boundary at 64.
	const deg = 180.0 / 128
	body := fmt.Sprintf(`{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":7,"zoomStop":7,"format":"image/png",
		"bounds":{"coords":{"double":[%g,%g,%g,%g]}}}}`, -180+60*deg+0.1, -90+60*deg+0.1, -180+69*deg-0.1, -90+69*deg-0.1)
	all := tileKeys("holes:three", 7, 60, 68, 60, 68, nil)
	h.step("seed", "holes:three", body, all)
	var expired []string // page 0,0: columns and rows below 64
	for _, k := range tileKeys("holes:three", 7, 60, 63, 60, 63, nil) {
		expired = append(expired, h.a.Prefix+k)
	}
	if _, err := h.a.Local.Tiles.Delete(t.Context(), expired); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, h.a, "holes:three/"); len(got) != len(all)-16 {
		t.Fatalf("after the expiry: %d tiles, want %d", len(got), len(all)-16)
	}
	h.step("seed after the expiry", "holes:three", body, all)
}

// TestRenderOnMissKeepsTheStoredTilesOfItsMetatile: a tile missing from a
// partly stored metatile renders on a miss, and only the missing tiles are
// PUT.
func TestRenderOnMissKeepsTheStoredTilesOfItsMetatile(t *testing.T) {
	t.Parallel()
	h := startHoles(t)
	h.step("polygon seed", "holes:miss", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":3,"zoomStop":3,"format":"image/png",
		"geometry":{"type":"Polygon","coordinates":[[[1,1],[30,1],[30,30],[1,30],[1,1]]]}}}`,
		tileKeys("holes:miss", 3, 8, 9, 4, 5, nil))
	puts := h.stored("holes:miss")
	if status, _, body := getTile(t, h.a.URL, "/tiles/holes:miss/EPSG:4326/png/3/11/7.png"); status != 200 {
		t.Fatalf("miss: got %d %.200q", status, body)
	}
	want := tileKeys("holes:miss", 3, 8, 11, 4, 7, nil)
	if got := keys(t, h.a, "holes:miss/"); !slices.Equal(got, want) {
		t.Fatalf("after the miss: %d tiles, want %d:\ngot  %v", len(got), len(want), got)
	}
	if n := h.stored("holes:miss") - puts; n != 12 {
		t.Fatalf("%d tiles PUT on the miss, want the 12 that were missing", n)
	}
}

// TestSeedRefreshesStaleTilesOnly: with expireCache 3 s, a seed stores
// again the tiles older than that, unchanged or not (their age starts
// again), and leaves those stored since alone.
func TestSeedRefreshesStaleTilesOnly(t *testing.T) {
	t.Parallel()
	h := startHoles(t)
	all := tileKeys("holes:stale", 3, 8, 11, 4, 7, nil)
	h.step("seed", "holes:stale", z3Box, all)
	// Every tile stale: older than expireCache by the store's clock.
	testenv.Eventually(t, 10*time.Second, "the tiles to be stale", func() bool {
		stale := true
		if err := h.a.Local.Tiles.List(t.Context(), h.a.Prefix+"holes:stale/", func(o tilestore.Object) error {
			stale = stale && time.Since(o.Modified) > 3*time.Second
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return stale
	})
	// One tile of the metatile missing, and one stored fresh again by a
	// polygon seed: the box seed then renders the metatile and PUTs the
	// 15 others (14 stale and the missing one), not the fresh one.
	if _, err := h.a.Local.Tiles.Delete(t.Context(), []string{h.a.Prefix + "holes:stale/EPSG:4326/png/default/3/11/7.png"}); err != nil {
		t.Fatal(err)
	}
	puts := h.stored("holes:stale")
	h.run("holes:stale", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":3,"zoomStop":3,"format":"image/png",
		"geometry":{"type":"Polygon","coordinates":[[[1,1],[10,1],[10,10],[1,10],[1,1]]]}}}`)
	if n := h.stored("holes:stale") - puts; n != 1 {
		t.Fatalf("polygon seed of a stale tile: %d PUT, want 1", n)
	}
	puts = h.stored("holes:stale")
	h.run("holes:stale", z3Box)
	if got := keys(t, h.a, "holes:stale/"); !slices.Equal(got, all) {
		t.Fatalf("after the box seed: %d tiles, want %d", len(got), len(all))
	}
	if n := h.stored("holes:stale") - puts; n != 15 {
		t.Fatalf("box seed: %d PUT, want the 14 stale tiles and the missing one", n)
	}
}
