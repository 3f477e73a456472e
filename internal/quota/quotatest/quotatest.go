// Package quotatest is the conformance suite every quota.UsageStore must
// pass (the embedded bbolt store and the DynamoDB store): one function per
// behaviour, each given the Harness, listed in Tests.
package quotatest

import (
	"sync"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// Harness is what every test of the suite runs against.
type Harness struct {
	NewStore func(t *testing.T) quota.UsageStore
}

// Test is one behaviour of the suite.
type Test struct {
	Name string
	Run  func(t *testing.T, h Harness)
}

// Tests lists the suite's behaviours, in the order Run runs them.
var Tests = []Test{
	{"Empty", testEmpty},
	{"DeltasAddUpPerPageAndLayer", testDeltasAddUpPerPageAndLayer},
	{"ManyPagesInOneCall", testManyPagesInOneCall},
	{"ConcurrentDeltasAreAllCounted", testConcurrentDeltasAreAllCounted},
	{"AccessStatistics", testAccessStatistics},
	{"DeletePage", testDeletePage},
	{"RemoveLayer", testRemoveLayer},
	{"RecountIsFencedByVersion", testRecountIsFencedByVersion},
	{"RecountOfManyPages", testRecountOfManyPages},
	{"StateAndCleanUpClaims", testStateAndCleanUpClaims},
	{"ExpirationOrderMatchesSort", func(t *testing.T, h Harness) { runOrder(t, h.NewStore) }},
	{"LevelPagesByPrefix", func(t *testing.T, h Harness) { runLevel(t, h.NewStore) }},
	{"CleanUpDeletesAsTheSortOfEveryPage", func(t *testing.T, h Harness) { runCleanUp(t, h.NewStore) }},
	{"LayerNamesAreOpaque", testLayerNamesAreOpaque},
}

// Run runs the suite, each behaviour a subtest of its name; newStore must
// return a fresh, empty store per call.
func Run(t *testing.T, newStore func(t *testing.T) quota.UsageStore) {
	h := Harness{NewStore: newStore}
	for _, tc := range Tests {
		t.Run(tc.Name, func(t *testing.T) { tc.Run(t, h) })
	}
}

// t0 is the suite's clock: every test takes times relative to it.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func set(layer string) tilestore.SetName {
	return tilestore.SetName{Layer: layer, GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
}

func page(layer string, z int, x, y int64) quota.PageKey {
	return quota.PageKey{Set: set(layer), Z: z, X: x, Y: y}
}

func delta(k quota.PageKey, tiles, bytes int64) quota.PageDelta {
	return quota.PageDelta{Page: k, Tiles: tiles, Bytes: bytes}
}

func layers(t *testing.T, s quota.UsageStore) map[string]quota.LayerUsage {
	t.Helper()
	ls, err := s.Layers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]quota.LayerUsage{}
	for i, l := range ls {
		if i > 0 && ls[i-1].Layer >= l.Layer {
			t.Errorf("Layers not ordered by name: %q after %q", l.Layer, ls[i-1].Layer)
		}
		out[l.Layer] = l
	}
	return out
}

func pages(t *testing.T, s quota.UsageStore, layer string) map[quota.PageKey]quota.Page {
	t.Helper()
	ps, err := s.Pages(t.Context(), layer)
	if err != nil {
		t.Fatal(err)
	}
	out := map[quota.PageKey]quota.Page{}
	for i, p := range ps {
		if i > 0 && ps[i-1].Key.ID() >= p.Key.ID() {
			t.Errorf("Pages not ordered by id: %s after %s", p.Key.ID(), ps[i-1].Key.ID())
		}
		out[p.Key] = p
	}
	return out
}

func mustApply(t *testing.T, s quota.UsageStore, now time.Time, ds ...quota.PageDelta) {
	t.Helper()
	if err := s.ApplyDeltas(t.Context(), ds, now); err != nil {
		t.Fatal(err)
	}
}

func wantTotals(t *testing.T, s quota.UsageStore, layer string, tiles, bytes int64) quota.LayerUsage {
	t.Helper()
	l := layers(t, s)[layer]
	if l.Tiles != tiles || l.Bytes != bytes {
		t.Fatalf("layer %s: got %d tiles, %d bytes; want %d, %d", layer, l.Tiles, l.Bytes, tiles, bytes)
	}
	return l
}

func testEmpty(t *testing.T, h Harness) {
	s := h.NewStore(t)
	if ls := layers(t, s); len(ls) != 0 {
		t.Fatalf("got layers %v, want none", ls)
	}
	if ps := pages(t, s, "a"); len(ps) != 0 {
		t.Fatalf("got pages %v, want none", ps)
	}
	st, err := s.UsageState(t.Context())
	if err != nil || st != (quota.State{}) {
		t.Fatalf("got state %+v, %v; want the zero state", st, err)
	}
	if _, found, err := s.DeletePage(t.Context(), page("a", 0, 0, 0)); err != nil || found {
		t.Fatalf("DeletePage of nothing: got found %v, %v", found, err)
	}
}

func testDeltasAddUpPerPageAndLayer(t *testing.T, h Harness) {
	s := h.NewStore(t)
	p1, p2, q1 := page("a", 3, 0, 0), page("a", 3, 1, 0), page("b", 0, 0, 0)
	mustApply(t, s, t0, delta(p1, 2, 8192), delta(p2, 1, 4096), delta(q1, 1, 4096))
	mustApply(t, s, t0.Add(time.Minute), delta(p1, 1, 4096), delta(p2, -1, -4096))
	ps := pages(t, s, "a")
	if len(ps) != 1 {
		t.Fatalf("got pages %v, want only %s (the other emptied)", ps, p1.ID())
	}
	if got := ps[p1]; got.Tiles != 3 || got.Bytes != 12288 || !got.Created.Equal(t0) || got.Hits != 0 || !got.LastAccess.IsZero() {
		t.Fatalf("page %s: got %+v, want 3 tiles, 12288 bytes, created %v", p1.ID(), got, t0)
	}
	wantTotals(t, s, "a", 3, 12288)
	wantTotals(t, s, "b", 1, 4096)
	if got := pages(t, s, "b")[q1]; got.Key != q1 {
		t.Fatalf("page of b: got %+v", got)
	}
	// A page emptied and filled again is created anew.
	t2 := t0.Add(2 * time.Minute)
	mustApply(t, s, t2, delta(p2, 1, 100))
	if got := pages(t, s, "a")[p2]; got.Tiles != 1 || got.Bytes != 100 {
		t.Fatalf("refilled page: got %+v", got)
	}
}

func testManyPagesInOneCall(t *testing.T, h Harness) {
	s := h.NewStore(t)
	var ds []quota.PageDelta
	for i := range 250 {
		ds = append(ds, delta(page("a", 10, int64(i), 0), 1, 10))
	}
	mustApply(t, s, t0, ds...)
	if got := len(pages(t, s, "a")); got != 250 {
		t.Fatalf("got %d pages, want 250", got)
	}
	wantTotals(t, s, "a", 250, 2500)
}

func testConcurrentDeltasAreAllCounted(t *testing.T, h Harness) {
	s := h.NewStore(t)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := range 5 {
				if err := s.ApplyDeltas(t.Context(), []quota.PageDelta{
					delta(page("a", 2, 0, 0), 1, 1), delta(page("a", 2, int64(w), int64(i)), 1, 2),
				}, t0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	wantTotals(t, s, "a", 60, 90)
	if got := pages(t, s, "a")[page("a", 2, 0, 0)]; got.Tiles != 31 {
		t.Fatalf("shared page: got %d tiles, want 31", got.Tiles)
	}
}

func testAccessStatistics(t *testing.T, h Harness) {
	s := h.NewStore(t)
	p1, p2 := page("a", 1, 0, 0), page("a", 1, 1, 0)
	mustApply(t, s, t0, delta(p1, 1, 10), delta(p2, 1, 10))
	t1, t2 := t0.Add(time.Minute), t0.Add(2*time.Minute)
	if err := s.RecordAccess(t.Context(), []quota.Access{
		{Page: p1, Hits: 3, Last: t2}, {Page: page("a", 9, 9, 9), Hits: 1, Last: t2}, {Page: page("zz", 0, 0, 0), Hits: 1, Last: t2},
	}); err != nil {
		t.Fatal(err)
	}
	// An older flush (another process's) adds hits but never moves the
	// last access back.
	if err := s.RecordAccess(t.Context(), []quota.Access{{Page: p1, Hits: 2, Last: t1}, {Page: p2, Hits: 1, Last: t1}}); err != nil {
		t.Fatal(err)
	}
	ps := pages(t, s, "a")
	if got := ps[p1]; got.Hits != 5 || !got.LastAccess.Equal(t2) || got.Tiles != 1 {
		t.Fatalf("page 1: got %+v, want 5 hits, last access %v", got, t2)
	}
	if got := ps[p2]; got.Hits != 1 || !got.LastAccess.Equal(t1) {
		t.Fatalf("page 2: got %+v, want 1 hit at %v", got, t1)
	}
	if len(ps) != 2 || len(pages(t, s, "zz")) != 0 {
		t.Fatalf("an access created a page: %v", ps)
	}
	wantTotals(t, s, "a", 2, 20)
}

func testDeletePage(t *testing.T, h Harness) {
	s := h.NewStore(t)
	p1, p2 := page("a", 1, 0, 0), page("a", 1, 1, 0)
	mustApply(t, s, t0, delta(p1, 2, 20), delta(p2, 1, 10))
	before := wantTotals(t, s, "a", 3, 30)
	got, found, err := s.DeletePage(t.Context(), p1)
	if err != nil || !found || got.Tiles != 2 || got.Bytes != 20 || got.Key != p1 {
		t.Fatalf("DeletePage: got %+v, %v, %v", got, found, err)
	}
	after := wantTotals(t, s, "a", 1, 10)
	if after.Version == before.Version {
		t.Error("DeletePage did not change the layer's version")
	}
	if _, found, err := s.DeletePage(t.Context(), p1); err != nil || found {
		t.Fatalf("second DeletePage: got found %v, %v", found, err)
	}
	wantTotals(t, s, "a", 1, 10)
}

func testRemoveLayer(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustApply(t, s, t0, delta(page("a", 1, 0, 0), 2, 20), delta(page("a", 5, 3, 0), 1, 10), delta(page("b", 1, 0, 0), 1, 10))
	if err := s.RemoveLayer(t.Context(), "a", false); err != nil {
		t.Fatal(err)
	}
	if ps := pages(t, s, "a"); len(ps) != 0 {
		t.Fatalf("pages left: %v", ps)
	}
	if l := wantTotals(t, s, "a", 0, 0); l.Dirty {
		t.Error("layer dirty after RemoveLayer(dirty=false)")
	}
	wantTotals(t, s, "b", 1, 10)
	// A recount flagged before the removal (a lane taken over, say)
	// is moot once every tile is gone: the flag goes with the counts.
	if err := s.MarkDirty(t.Context(), []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveLayer(t.Context(), "a", false); err != nil {
		t.Fatal(err)
	}
	if l := wantTotals(t, s, "a", 0, 0); l.Dirty {
		t.Error("layer marked dirty before RemoveLayer(dirty=false) still dirty after it")
	}
	if err := s.RemoveLayer(t.Context(), "b", true); err != nil {
		t.Fatal(err)
	}
	if l := wantTotals(t, s, "b", 0, 0); !l.Dirty {
		t.Error("layer not dirty after RemoveLayer(dirty=true)")
	}
	// Counting continues from zero.
	mustApply(t, s, t0, delta(page("a", 1, 0, 0), 1, 10))
	wantTotals(t, s, "a", 1, 10)
}

func testRecountIsFencedByVersion(t *testing.T, h Harness) {
	s := h.NewStore(t)
	keep, gone, fresh := page("a", 1, 0, 0), page("a", 1, 1, 0), page("a", 4, 2, 1)
	mustApply(t, s, t0, delta(keep, 5, 50), delta(gone, 1, 10))
	if err := s.RecordAccess(t.Context(), []quota.Access{{Page: keep, Hits: 7, Last: t0.Add(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkDirty(t.Context(), []string{"a"}); err != nil {
		t.Fatal(err)
	}
	l := layers(t, s)["a"]
	if !l.Dirty {
		t.Fatalf("got %+v, want dirty", l)
	}
	counts := []quota.PageDelta{delta(keep, 4, 40), delta(fresh, 2, 30)}
	// A change after the recount began makes it fail.
	mustApply(t, s, t0, delta(gone, 0, 1))
	err := s.ReplaceLayer(t.Context(), "a", l.Version, counts, t0.Add(time.Hour))
	if got := apperr.KindOf(err); err == nil || got != apperr.Conflict {
		t.Fatalf("stale recount: got %v, want a Conflict", err)
	}
	l = layers(t, s)["a"]
	if !l.Dirty {
		t.Fatal("a failed recount cleared the dirty flag")
	}
	t1 := t0.Add(time.Hour)
	if err := s.ReplaceLayer(t.Context(), "a", l.Version, counts, t1); err != nil {
		t.Fatal(err)
	}
	l2 := wantTotals(t, s, "a", 6, 70)
	if l2.Dirty || l2.Version == l.Version {
		t.Fatalf("after the recount: got %+v, want clean with a new version", l2)
	}
	ps := pages(t, s, "a")
	if len(ps) != 2 {
		t.Fatalf("got pages %v, want 2", ps)
	}
	if got := ps[keep]; got.Tiles != 4 || got.Bytes != 40 || got.Hits != 7 || !got.Created.Equal(t0) || !got.LastAccess.Equal(t0.Add(time.Minute)) {
		t.Fatalf("kept page: got %+v, want its new counts and its old statistics", got)
	}
	if got := ps[fresh]; got.Tiles != 2 || got.Bytes != 30 || !got.Created.Equal(t1) {
		t.Fatalf("new page: got %+v, want created at %v", got, t1)
	}
	// A recount of a layer never seen before creates it.
	if err := s.ReplaceLayer(t.Context(), "new", 0, []quota.PageDelta{delta(page("new", 0, 0, 0), 1, 1)}, t1); err != nil {
		t.Fatal(err)
	}
	wantTotals(t, s, "new", 1, 1)
}

func testRecountOfManyPages(t *testing.T, h Harness) {
	s := h.NewStore(t)
	var old, counts []quota.PageDelta
	for i := range 230 {
		old = append(old, delta(page("a", 9, int64(i), 0), 1, 1))
		counts = append(counts, delta(page("a", 9, int64(i)+100, 0), 2, 3))
	}
	mustApply(t, s, t0, old...)
	l := layers(t, s)["a"]
	if err := s.ReplaceLayer(t.Context(), "a", l.Version, counts, t0); err != nil {
		t.Fatal(err)
	}
	wantTotals(t, s, "a", 460, 690)
	ps := pages(t, s, "a")
	if len(ps) != 230 {
		t.Fatalf("got %d pages, want 230", len(ps))
	}
	for i := range 100 {
		if _, ok := ps[page("a", 9, int64(i), 0)]; ok {
			t.Fatalf("page %d survived the recount", i)
		}
	}
}

func testStateAndCleanUpClaims(t *testing.T, h Harness) {
	s := h.NewStore(t)
	if err := s.Rebase(t.Context(), 512, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	st, err := s.UsageState(t.Context())
	if err != nil || !st.Counted || st.BlockSize != 512 {
		t.Fatalf("after Rebase: got %+v, %v", st, err)
	}
	ls := layers(t, s)
	if !ls["a"].Dirty || !ls["b"].Dirty {
		t.Fatalf("Rebase did not mark the layers dirty: %+v", ls)
	}
	claim := func(now time.Time, interval, lease time.Duration) bool {
		t.Helper()
		ok, err := s.ClaimCleanUp(t.Context(), now, interval, lease)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !claim(t0, 10*time.Second, time.Minute) {
		t.Fatal("first claim refused")
	}
	if st, _ := s.UsageState(t.Context()); !st.LastCleanUp.Equal(t0) || !st.LeaseUntil.Equal(t0.Add(time.Minute)) || st.BlockSize != 512 {
		t.Fatalf("after the claim: got %+v", st)
	}
	if claim(t0.Add(20*time.Second), 10*time.Second, time.Minute) {
		t.Fatal("claimed while the lease is held")
	}
	if err := s.ReleaseCleanUp(t.Context(), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if claim(t0.Add(20*time.Second), 10*time.Second, time.Minute) {
		t.Fatal("a release by another claim freed the lease")
	}
	if err := s.ReleaseCleanUp(t.Context(), t0); err != nil {
		t.Fatal(err)
	}
	if claim(t0.Add(5*time.Second), 10*time.Second, time.Minute) {
		t.Fatal("claimed before the interval passed")
	}
	t1 := t0.Add(10 * time.Second)
	if !claim(t1, 10*time.Second, time.Minute) {
		t.Fatal("claim refused once the interval passed")
	}
	// An expired lease does not block.
	if !claim(t1.Add(2*time.Minute), 0, time.Minute) {
		t.Fatal("an expired lease blocked a claim")
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 6 {
		wg.Go(func() {
			ok, err := s.ClaimCleanUp(t.Context(), t1.Add(time.Hour+time.Duration(i)), time.Minute, time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d concurrent claims won, want 1", wins)
	}
}

func testLayerNamesAreOpaque(t *testing.T, h Harness) {
	s := h.NewStore(t)
	names := []string{"topp:states", "a b", "x|y", "ns/layer", "é#1"}
	for i, n := range names {
		mustApply(t, s, t0, delta(page(n, i, 0, 0), int64(i+1), 1))
	}
	ls := layers(t, s)
	for i, n := range names {
		if ls[n].Tiles != int64(i+1) {
			t.Errorf("layer %q: got %+v", n, ls[n])
		}
		if ps := pages(t, s, n); len(ps) != 1 {
			t.Errorf("layer %q: got pages %v", n, ps)
		}
	}
}
