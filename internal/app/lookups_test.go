package app_test

import (
	"encoding/json"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/tilestore/s3store"
)

const lookupLayers = `
layers:
  - name: lookup:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    source: {type: testpattern}
`

// TestSizeLookupsAsEstimated seeds again, reseeds and truncates tiles on S3 (MinIO)
// with usage counted and checks the requests they make against what the
// dry-run estimate promises: which tiles are missing, and the sizes (and
// MD5s) of the tiles they replace and delete, are learnt from listings (of whole small levels, of the columns
// of larger ones, each lane its own columns once), not from one HEAD per
// tile, and the usage stays exact.
func TestSizeLookupsAsEstimated(t *testing.T) {
	t.Parallel()
	// Slices longer than any of the requests may take (their waits end at
	// 90 s, stretched by TILECACHE_TEST_WAIT_SCALE): a lane continued in a
	// new slice lists again what it still visits (its listings live in one
	// invocation), so a slice cut on a loaded machine made more LISTs.
	a := apptest.Start(t, apptest.Options{Layers: lookupLayers, Backend: "aws", SeedThreads: 4, StaleAfter: 2 * time.Second, Slice: 30 * time.Minute})
	store, ok := a.Local.Tiles.(*s3store.Store)
	if !ok {
		t.Fatalf("tile store is %T, want the S3 store", a.Local.Tiles)
	}
	const bs = 96
	putQuota(t, a, `"diskBlockSize":96`)
	waitSettled(t, a)
	run := func(body string) {
		t.Helper()
		waitFinished(t, a, ids(seedReq(t, a, "lookup:world", `{"seedRequest":`+body+`}`)), 90*time.Second)
	}
	// About 1,200 tiles. z6 of EPSG:4326 has 8,192 tiles in the coverage:
	// a lane listing it whole makes up to 9 LISTs, so a lane working in
	// fewer columns lists those instead (the truncate below).
	run(`{"bounds":{"coords":{"double":[-40,-30,40,30]}},"zoomStart":0,"zoomStop":6,"threadCount":2}`)
	wantNoDrift(t, a, "seed", "lookup:world", bs)

	for _, step := range []struct{ name, body string }{
		{"seed of stored tiles", `{"bounds":{"coords":{"double":[-40,-30,40,30]}},"zoomStart":0,"zoomStop":6,"threadCount":2}`},
		{"reseed", `{"bounds":{"coords":{"double":[-40,-30,40,30]}},"zoomStart":0,"zoomStop":6,"type":"reseed","threadCount":3}`},
		{"truncate", `{"bounds":{"coords":{"double":[-5,-30,3,30]}},"zoomStart":1,"zoomStop":6,"type":"truncate"}`},
	} {
		res := a.Do(t, "POST", "/rest/estimate/lookup:world.json", `{"seedRequest":`+step.body+`}`)
		if res.Status != 200 {
			t.Fatalf("%s estimate: got %d %q", step.name, res.Status, res.Body)
		}
		var est struct {
			Tiles   int64 `json:"tiles"`
			Puts    int64 `json:"s3Puts"`
			Deletes int64 `json:"s3Deletes"`
			Lists   int64 `json:"s3Lists"`
			Reads   int64 `json:"s3Reads"`
		}
		if err := json.Unmarshal([]byte(res.Body), &est); err != nil {
			t.Fatalf("%s estimate %q: %v", step.name, res.Body, err)
		}
		before := store.Requests()
		run(step.body)
		got := store.Requests().Sub(before)
		t.Logf("%s of %d tile positions: estimated %d LIST, %d HEAD; made %d LIST, %d HEAD, %d PUT, %d DELETE",
			step.name, est.Tiles, est.Lists, est.Reads, got.List, got.Head, got.Put, got.Delete)
		// The estimate counts a page per 1,000 tiles of the coverage a
		// listing may find; besides the lanes' lookups, a request reads
		// or writes a few documents of the tile set (at most 2 LISTs and
		// 4 HEADs or PUTs).
		if got.List < 1 || got.List > est.Lists+2 {
			t.Errorf("%s: %d LIST requests, estimated at most %d", step.name, got.List, est.Lists)
		}
		if got.Head > est.Reads+4 {
			t.Errorf("%s: %d HEAD requests, estimated %d", step.name, got.Head, est.Reads)
		}
		// The reseed renders every tile as it is stored: it writes none
		// of them (at most the documents), within the estimate's upper
		// bound of one PUT per tile.
		if step.name == "reseed" && (got.Put > 4 || est.Puts != est.Tiles) {
			t.Errorf("reseed of unchanged tiles: %d PUT requests, want at most 4; estimated %d, want the upper bound %d", got.Put, est.Puts, est.Tiles)
		}
		// A seed of tiles all stored learns so from the same listings and
		// renders nothing.
		if step.name == "seed of stored tiles" && got.Put > 4 {
			t.Errorf("seed of stored tiles: %d PUT requests, want at most 4", got.Put)
		}
		wantNoDrift(t, a, step.name, "lookup:world", bs)
	}
}
