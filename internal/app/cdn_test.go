package app_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// requestPath is the URL path a client asks the CDN for a key (without
// the key prefix): each segment escaped as a browser does.
func requestPath(key string) string {
	seg := strings.Split(key, "/")
	for i := range seg {
		seg[i] = url.PathEscape(seg[i])
	}
	return "/" + strings.Join(seg, "/")
}

// cdnStep runs one operation that changes tiles, sends the invalidations
// and returns the distinct paths of those it caused, sorted. An operation
// longer than the purger's period is invalidated in several batches, each
// of the levels changed since the previous one.
func cdnStep(t *testing.T, a *apptest.App, c *apptest.CDN, op func()) []string {
	t.Helper()
	before := len(c.Invalidations(t))
	op()
	a.Local.Purger.Flush(t.Context())
	var paths []string
	for _, p := range c.Invalidations(t)[before:] {
		paths = append(paths, p...)
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// tilePaths drops the paths of documents (index, TMS, TileJSON, the demo
// page), which the program's start and submissions write, keeping those of
// tiles.
func tilePaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".xml") && !strings.HasSuffix(p, ".html") {
			out = append(out, p)
		}
	}
	return out
}

// wantCovered checks that every changed tile is covered by a path, that
// no path reaches a tile that did not change at a level that did not
// change or in another tile set (levels are the unit: a path covers a
// changed level or one column of it), and that there are at most as many
// paths as levels changed.
func wantCovered(t *testing.T, step string, paths, changed, all []string) {
	t.Helper()
	if len(changed) == 0 {
		t.Fatalf("%s: no tile changed; the step tests nothing", step)
	}
	levels := map[string]bool{} // "layer/grid/format/params/z/"
	for _, k := range changed {
		levels[k[:strings.LastIndex(k[:strings.LastIndex(k, "/")], "/")+1]] = true
		if !slices.ContainsFunc(paths, func(p string) bool { return apptest.Covers(p, requestPath(k)) }) {
			t.Errorf("%s: tile %s changed but no path covers it (paths %q)", step, k, paths)
		}
	}
	for _, k := range all {
		level := k[:strings.LastIndex(k[:strings.LastIndex(k, "/")], "/")+1]
		if levels[level] {
			continue
		}
		for _, p := range paths {
			if apptest.Covers(p, requestPath(k)) {
				t.Errorf("%s: path %s covers tile %s of a level that did not change", step, p, k)
			}
		}
	}
	if len(paths) > len(levels) {
		t.Errorf("%s: got %d paths %q for %d levels changed, want at most one per level", step, len(paths), paths, len(levels))
	}
}

// TestCDNInvalidatesWhatChanged runs reseed, truncate, disk-quota clean-up
// and mass truncate against a CloudFront-compatible server and reads back
// the invalidations each caused.
func TestCDNInvalidatesWhatChanged(t *testing.T) {
	t.Parallel()
	c := apptest.NewCDN(t)
	a := apptest.Start(t, apptest.Options{Layers: quotaLayers, StaleAfter: 2 * time.Second,
		// Only cdnStep's Flush sends: a step that outlasts a timed flush
		// would be split in two batches.
		Env: map[string]string{"TILECACHE_CDN_DISTRIBUTION_ID": c.ID, "TILECACHE_CDN_PURGE_INTERVAL": "1h"}})
	const set = "quota:world/EPSG:4326/png/default/"
	submit := func(body string) {
		t.Helper()
		seedReq(t, a, "quota:world", `{"seedRequest":{`+body+`}}`)
		testenv.Eventually(t, 60*time.Second, "the tasks to finish", func() bool { return len(listRows(t, a, "/rest/seed.json")) == 0 })
	}

	// Seeding adds tiles: only the documents of the new tile set change.
	paths := cdnStep(t, a, c, func() { submit(`"zoomStart":0,"zoomStop":4,"threadCount":2`) })
	if got := tilePaths(paths); len(got) != 0 {
		t.Errorf("seed: got tile paths %q, want none (nothing was replaced)", got)
	}
	all := keys(t, a, set)

	t.Run("reseed", func(t *testing.T) {
		// Tiles rendered as they are stored are not written again.
		paths := cdnStep(t, a, c, func() { submit(`"zoomStart":3,"zoomStop":4,"type":"reseed","threadCount":2`) })
		if got := tilePaths(paths); len(got) != 0 {
			t.Errorf("unchanged reseed: got tile paths %q, want none (nothing was replaced)", got)
		}
		changed := []string{set + "3/1/2.png", set + "3/9/5.png", set + "4/20/7.png"}
		for _, k := range changed {
			tamper(t, a, k)
		}
		paths = cdnStep(t, a, c, func() { submit(`"zoomStart":3,"zoomStop":4,"type":"reseed","threadCount":2`) })
		wantCovered(t, "reseed", tilePaths(paths), changed, all)
	})

	t.Run("truncate", func(t *testing.T) {
		// A box inside column 2 of level 4 (11.25° per tile from -180°).
		before := keys(t, a, set)
		paths := cdnStep(t, a, c, func() {
			submit(`"zoomStart":4,"zoomStop":4,"type":"truncate","bounds":{"coords":{"double":[-155,-80,-150,80]}}`)
		})
		changed := missing(before, keys(t, a, set))
		wantCovered(t, "truncate", paths, changed, before)
		// The truncate takes the box's tiles alone (not its metatiles'
		// 4 columns): one column path.
		if want := []string{requestPath(set+"4/2/") + "*"}; !slices.Equal(paths, want) {
			t.Errorf("truncate: got %q, want %q", paths, want)
		}
	})

	t.Run("disk-quota clean-up", func(t *testing.T) {
		waitSettled(t, a)
		before := keys(t, a, set)
		paths := cdnStep(t, a, c, func() {
			putQuota(t, a, `"enabled":true,"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"SECONDS","layerQuotas":[`+
				layerQuotaJSON("quota:world", "LRU", 1)+`]`)
			testenv.Eventually(t, 30*time.Second, "the clean-up to delete every page", func() bool { return len(keys(t, a, set)) == 0 })
		})
		wantCovered(t, "clean-up", tilePaths(paths), before, before)
		putQuota(t, a, `"enabled":false,"layerQuotas":[]`)
	})

	t.Run("mass truncate", func(t *testing.T) {
		submit(`"zoomStart":0,"zoomStop":2`)
		paths := cdnStep(t, a, c, func() {
			res := a.Do(t, "POST", "/rest/masstruncate", "<truncateLayer><layerName>quota:world</layerName></truncateLayer>", "Content-Type", "text/xml")
			if res.Status != 200 {
				t.Fatalf("mass truncate: got %d %q", res.Status, res.Body)
			}
		})
		if !slices.Contains(paths, "/quota:world/*") {
			t.Errorf("mass truncate: got %q, want /quota:world/* among them", paths)
		}
		if got := tilePaths(paths); !slices.Equal(got, []string{"/quota:world/*"}) {
			t.Errorf("mass truncate: got tile paths %q, want only /quota:world/*", got)
		}
	})
}

// tamper changes a stored tile behind the cache's back, keeping its size
// (so that the usage stays exact): what a reseed then finds changed.
func tamper(t *testing.T, a *apptest.App, key string) {
	t.Helper()
	data, meta, found := a.Get(t, key)
	if !found || len(data) == 0 {
		t.Fatalf("tamper: %s is not stored", key)
	}
	data[len(data)-1] ^= 0xff
	a.Put(t, key, data, meta)
}

// missing returns the keys of before that are not in after.
func missing(before, after []string) []string {
	var out []string
	for _, k := range before {
		if !slices.Contains(after, k) {
			out = append(out, k)
		}
	}
	return out
}

// TestCDNRefusingInvalidationsLosesNoTask: a distribution the CDN does not
// know refuses every invalidation; the requests still finish, every tile
// is stored, and the refusal is logged with its paths.
func TestCDNRefusingInvalidationsLosesNoTask(t *testing.T) {
	t.Parallel()
	apptest.NewCDN(t) // the CloudFront-compatible server is up
	var log apptest.LogBuffer
	a := apptest.Start(t, apptest.Options{Layers: quotaLayers, Log: &log,
		Env: map[string]string{"TILECACHE_CDN_DISTRIBUTION_ID": "ENOSUCHDISTRIBUTION"}})
	const set = "quota:world/EPSG:4326/png/default/"
	for _, typ := range []string{"seed", "reseed"} {
		if typ == "reseed" {
			// Two tiles of level 3 in two columns differ from what the
			// source renders: the reseed replaces them, invalidating the
			// level.
			tamper(t, a, set+"3/1/2.png")
			tamper(t, a, set+"3/9/5.png")
		}
		ids := ids(seedReq(t, a, "quota:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"type":"`+typ+`","threadCount":2}}`))
		for _, tk := range waitFinished(t, a, ids, 60*time.Second) {
			if tk.Status.String() != "DONE" {
				t.Errorf("%s task %d: got %s, want DONE", typ, tk.ID, tk.Status)
			}
		}
	}
	if n := len(keys(t, a, set)); n != 2+8+32+128 {
		t.Errorf("got %d tiles, want %d", n, 2+8+32+128)
	}
	a.Local.Purger.Flush(t.Context())
	if !strings.Contains(log.String(), "cdn invalidation refused") || !strings.Contains(log.String(), "/quota:world/EPSG:4326/png/default/3/*") {
		t.Errorf("the refused invalidation is not logged with its paths:\n%s", log.String())
	}
}
