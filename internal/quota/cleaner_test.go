package quota_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/state/bolt"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/filestore"
)

func TestBlocks(t *testing.T) {
	tests := []struct{ size, bs, want int64 }{
		{0, 4096, 0}, {1, 4096, 4096}, {4096, 4096, 4096}, {4097, 4096, 8192}, {10, 1, 10}, {10, 0, 10}, {2500, 1000, 3000},
	}
	for _, tt := range tests {
		if got := quota.Blocks(tt.size, tt.bs); got != tt.want {
			t.Errorf("Blocks(%d, %d): got %d, want %d", tt.size, tt.bs, got, tt.want)
		}
	}
}

func TestPages(t *testing.T) {
	set := tilestore.SetName{Layer: "topp:states", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
	k := quota.PageOf(set, 7, 130, 63)
	if k.X != 2 || k.Y != 0 || k.Z != 7 {
		t.Fatalf("got %+v, want page 2/0 of level 7", k)
	}
	if got, want := k.ID(), "topp:states|EPSG:4326|png|default|7|2|0"; got != want {
		t.Errorf("ID: got %q, want %q", got, want)
	}
	x0, y0, x1, y1 := k.TileRange()
	if x0 != 128 || y0 != 0 || x1 != 191 || y1 != 63 {
		t.Errorf("TileRange: got %d,%d..%d,%d", x0, y0, x1, y1)
	}
	d := make(quota.Deltas)
	d.Add(k, 1, 4096)
	d.Add(quota.PageOf(set, 7, 129, 1), 1, 4096)
	d.Add(quota.PageOf(set, 0, 0, 0), 0, 0)
	if got := d.List(); len(got) != 1 || got[0].Tiles != 2 || got[0].Bytes != 8192 || len(d) != 2 {
		t.Errorf("Deltas: got %+v (%d pages touched), want one change of 2 tiles", got, len(d))
	}
}

func TestOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	page := func(x int64, created, access time.Duration, hits int64) quota.Page {
		p := quota.Page{Key: quota.PageKey{Z: 1, X: x}, Created: t0.Add(created), Hits: hits}
		if access > 0 {
			p.LastAccess = t0.Add(access)
		}
		return p
	}
	pages := []quota.Page{
		page(0, 0, 10*time.Minute, 30), // 30 hits over 10 min: ~2.7/min
		page(1, 0, 0, 0),               // never read, created at t0
		page(2, 0, time.Minute, 1),     // 0.5/min
		page(3, 5*time.Minute, 0, 0),   // never read, created later
		page(4, 0, 20*time.Minute, 2),  // ~0.1/min, read last
	}
	xs := func(ps []quota.Page) []int64 {
		var out []int64
		for _, p := range ps {
			out = append(out, p.Key.X)
		}
		return out
	}
	lru := slices.Clone(pages)
	quota.Order(lru, quota.PolicyLRU)
	if got, want := xs(lru), []int64{1, 2, 3, 0, 4}; !slices.Equal(got, want) {
		t.Errorf("LRU: got %v, want %v", got, want)
	}
	lfu := slices.Clone(pages)
	quota.Order(lfu, quota.PolicyLFU)
	if got, want := xs(lfu), []int64{1, 3, 4, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("LFU: got %v, want %v", got, want)
	}
}

// fixture is a cleaner over real embedded stores and a fake clock.
type fixture struct {
	store   *bolt.Usage
	tiles   *filestore.Store
	cleaner *quota.Cleaner
	mu      sync.Mutex
	now     time.Time
	active  map[string]bool
}

func (f *fixture) ActiveLayers(context.Context, time.Time) (map[string]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return copyMap(f.active), nil
}

func copyMap(m map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, `
layers:
  - name: a
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`)
}

// newFixtureWith is newFixture with the layer file layers.
func newFixtureWith(t *testing.T, layers string) *fixture {
	t.Helper()
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := db.Usage()
	tiles, err := filestore.New(filepath.Join(dir, "tiles"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := layer.Parse([]byte(layers), "test")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{store: store, tiles: tiles, now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), active: map[string]bool{}}
	f.cleaner = quota.NewCleaner(store, store, tiles, cat, f, quota.CleanerOptions{
		Settle: time.Second, Now: func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now },
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return f
}

func (f *fixture) configure(t *testing.T, p quota.Patch) {
	t.Helper()
	if _, err := f.store.UpdateQuotaConfig(t.Context(), func(c quota.Config) (quota.Config, error) { return c.Apply(p) }); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) lastCleanUp(t *testing.T) time.Time {
	t.Helper()
	st, err := f.store.UsageState(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st.LastCleanUp
}

// put stores a 5,000-byte object at each key.
func (f *fixture) put(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := f.tiles.Put(t.Context(), k, make([]byte, 5000), tilestore.Meta{ContentType: "image/png"}); err != nil {
			t.Fatal(err)
		}
	}
}

// maintain runs the cleaner's maintenance and returns every layer's usage.
func (f *fixture) maintain(t *testing.T) []quota.LayerUsage {
	t.Helper()
	if err := f.cleaner.Maintain(t.Context()); err != nil {
		t.Fatal(err)
	}
	ls, err := f.store.Layers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func ptr[T any](v T) *T { return &v }

// TestRunDueFollowsTheInterval: RunDue cleans up only when enabled and the
// interval since the last clean-up passed, by the configuration in force
// at the time of the call.
func TestRunDueFollowsTheInterval(t *testing.T) {
	f := newFixture(t)
	t0 := f.now
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	if err := f.cleaner.RunDue(t.Context(), at(0)); err != nil {
		t.Fatal(err)
	}
	if got := f.lastCleanUp(t); !got.IsZero() {
		t.Fatalf("disabled: got a clean-up at %v", got)
	}
	f.configure(t, quota.Patch{Enabled: ptr(true), CleanUpFrequency: ptr(int64(10)), CleanUpUnits: ptr("SECONDS")})
	steps := []struct {
		at   time.Duration
		want time.Duration // the last clean-up after RunDue at at
	}{{0, 0}, {5 * time.Second, 0}, {10 * time.Second, 10 * time.Second}, {19 * time.Second, 10 * time.Second}, {21 * time.Second, 21 * time.Second}}
	for _, s := range steps {
		if err := f.cleaner.RunDue(t.Context(), at(s.at)); err != nil {
			t.Fatal(err)
		}
		if got := f.lastCleanUp(t); !got.Equal(at(s.want)) {
			t.Fatalf("RunDue at +%v: last clean-up at %v, want +%v", s.at, got.Sub(t0), s.want)
		}
	}
	// A new frequency applies to the next call.
	f.configure(t, quota.Patch{CleanUpFrequency: ptr(int64(1)), CleanUpUnits: ptr("HOURS")})
	if err := f.cleaner.RunDue(t.Context(), at(40*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := f.lastCleanUp(t); !got.Equal(at(21 * time.Second)) {
		t.Fatalf("hourly: ran again at %v", got.Sub(t0))
	}
	f.configure(t, quota.Patch{CleanUpFrequency: ptr(int64(15)), CleanUpUnits: ptr("SECONDS")})
	if err := f.cleaner.RunDue(t.Context(), at(40*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := f.lastCleanUp(t); !got.Equal(at(40 * time.Second)) {
		t.Fatalf("every 15 s: last clean-up at +%v, want +40s", got.Sub(t0))
	}
}

// TestRunScheduleWaitsUntilDue: RunSchedule runs RunDue at once, then
// waits (CleanerOptions.After) until the next clean-up is due, at most a
// minute (for the maintenance), and at once again after Rearm, by the
// configuration then in force.
func TestRunScheduleWaitsUntilDue(t *testing.T) {
	f := newFixture(t)
	t0 := f.now
	type wait struct {
		d    time.Duration
		fire chan time.Time
	}
	waits := make(chan wait)
	f.cleaner.SetClock(nil, func(d time.Duration) <-chan time.Time {
		w := wait{d, make(chan time.Time)}
		waits <- w
		return w.fire
	})
	f.configure(t, quota.Patch{Enabled: ptr(true), CleanUpFrequency: ptr(int64(10)), CleanUpUnits: ptr("SECONDS")})
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() { defer close(stopped); f.cleaner.RunSchedule(ctx) }()
	defer func() { cancel(); <-stopped }()
	next := func(want time.Duration, lastAt time.Duration) wait {
		t.Helper()
		w := <-waits // RunDue ran
		if w.d != want {
			t.Fatalf("RunSchedule waits %v, want %v", w.d, want)
		}
		if got := f.lastCleanUp(t); !got.Equal(t0.Add(lastAt)) {
			t.Fatalf("last clean-up at +%v, want +%v", got.Sub(t0), lastAt)
		}
		return w
	}
	w := next(10*time.Second, 0) // the first clean-up, at once
	f.mu.Lock()
	f.now = t0.Add(10 * time.Second)
	f.mu.Unlock()
	w.fire <- f.now
	next(10*time.Second, 10*time.Second)
	// Hourly: Rearm runs RunDue at once, which does not clean up, and the
	// next run is the maintenance's, a minute on.
	f.configure(t, quota.Patch{CleanUpFrequency: ptr(int64(1)), CleanUpUnits: ptr("HOURS")})
	f.cleaner.Rearm()
	next(time.Minute, 10*time.Second)
}

// TestRecountWaitsForRest: a dirty layer is recounted from a listing only
// once none of its tasks worked for the settle time, and the recount skips
// side objects.
func TestRecountWaitsForRest(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	set := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, LayerID: "a", Ext: "png"}
	f.put(t, set.Key(3, 1, 1), set.Key(3, 70, 1), tilestore.ParametersKey("", "a", "abc"))
	f.active["a"] = true
	if err := f.cleaner.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	ls, _ := f.store.Layers(ctx)
	if len(ls) != 1 || !ls[0].Dirty || ls[0].Tiles != 0 {
		t.Fatalf("while the layer works: got %+v, want it dirty and not recounted", ls)
	}
	f.active["a"] = false
	if err := f.cleaner.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	ls, _ = f.store.Layers(ctx)
	if len(ls) != 1 || ls[0].Dirty || ls[0].Tiles != 2 || ls[0].Bytes != 2*8192 {
		t.Fatalf("at rest: got %+v, want 2 tiles of 8192 bytes, clean", ls)
	}
	ps, _ := f.store.Pages(ctx, "a")
	if len(ps) != 2 {
		t.Fatalf("got pages %+v, want 2", ps)
	}
	// A changed block size recounts everything.
	f.configure(t, quota.Patch{DiskBlockSize: ptr(int64(1000))})
	if err := f.cleaner.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	ls, _ = f.store.Layers(ctx)
	if ls[0].Bytes != 2*5000 || ls[0].Dirty {
		t.Fatalf("after the block size changed: got %+v, want 10000 bytes", ls)
	}
}

// TestReportNeverNegative: usage that went below zero (a clean-up and a
// writer of one page overlapping) reports 0, with a recount pending and the
// layer marked for it.
func TestReportNeverNegative(t *testing.T) {
	f := newFixture(t)
	page := quota.PageKey{Set: tilestore.SetName{Layer: "a", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Z: 3}
	if err := f.store.ApplyDeltas(t.Context(), []quota.PageDelta{{Page: page, Tiles: -2, Bytes: -8192}}, f.now); err != nil {
		t.Fatal(err)
	}
	r, err := f.cleaner.Report(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range r.Layers {
		if l.Layer == "a" && (l.UsedBytes != 0 || l.UsedTiles != 0 || !l.RecountPending) {
			t.Errorf("layer a: got %+v, want 0 bytes, 0 tiles, recount pending", l)
		}
	}
	if r.UsedBytes < 0 || r.UsedTiles < 0 {
		t.Errorf("totals: got %d bytes, %d tiles, want none negative", r.UsedBytes, r.UsedTiles)
	}
	ls, err := f.store.Layers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Layer == "a" && !l.Dirty {
			t.Errorf("layer a is not marked for a recount in the store")
		}
	}
}

// TestCleanUpWaitsForPendingRecount: a layer over its quota by a count it
// knows to be off (marked for a recount) is not cleaned up by that count;
// once its tasks are done the maintenance recounts it, and the clean-up
// goes by the true usage.
func TestCleanUpWaitsForPendingRecount(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	set := tilestore.TileSet{SetName: tilestore.SetName{GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, LayerID: "a", Ext: "png"}
	keys := []string{set.Key(8, 1, 1), set.Key(8, 70, 1), set.Key(8, 150, 1)}
	f.put(t, keys...)
	// Usage counts ten times what is stored (a lane's uncheckpointed work
	// counted twice, say), and is marked for a recount.
	if err := f.cleaner.Maintain(ctx); err != nil { // usage counted from here on
		t.Fatal(err)
	}
	page := quota.PageKey{Set: tilestore.SetName{Layer: "a", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Z: 8}
	if err := f.store.ApplyDeltas(ctx, []quota.PageDelta{{Page: page, Tiles: 27, Bytes: 27 * 8192}}, f.now); err != nil {
		t.Fatal(err)
	}
	if err := f.store.MarkDirty(ctx, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	f.active["a"] = true
	f.configure(t, quota.Patch{Enabled: ptr(true), LayerQuotas: &[]quota.LayerQuota{{Layer: "a", Policy: quota.PolicyLRU, Quota: 5 * 8192}}})
	if err := f.cleaner.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if _, found, _ := f.tiles.Stat(ctx, k); !found {
			t.Fatalf("%s was deleted by a count awaiting its recount", k)
		}
	}
	// The tasks are done: the maintenance recounts (3 tiles, under the
	// quota) and the clean-up deletes nothing.
	f.active["a"] = false
	f.mu.Lock()
	f.now = f.now.Add(time.Hour)
	f.mu.Unlock()
	if err := f.cleaner.RunDue(ctx, f.now); err != nil {
		t.Fatal(err)
	}
	ls, _ := f.store.Layers(ctx)
	if len(ls) != 1 || ls[0].Dirty || ls[0].Tiles != 3 {
		t.Fatalf("after the maintenance: got %+v, want 3 tiles, clean", ls)
	}
	for _, k := range keys {
		if _, found, _ := f.tiles.Stat(ctx, k); !found {
			t.Fatalf("%s was deleted although the layer is within its quota", k)
		}
	}
	// Truly over the quota now: the clean-up deletes.
	f.configure(t, quota.Patch{LayerQuotas: &[]quota.LayerQuota{{Layer: "a", Policy: quota.PolicyLRU, Quota: 8192}}})
	if err := f.cleaner.Run(ctx); err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, k := range keys {
		if _, found, _ := f.tiles.Stat(ctx, k); found {
			left++
		}
	}
	if left > 1 {
		t.Fatalf("%d tiles left, want at most 1 (quota of one 8192-byte block)", left)
	}
}
