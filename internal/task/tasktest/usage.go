package tasktest

// The usage tests check that usage deltas carried by checkpoints are
// applied exactly once, atomically with the checkpoint, for stores that
// also keep disk usage (quota.UsageStore); they skip for others.

import (
	"sync"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// usageStore returns a fresh store and its quota.UsageStore; it skips for
// stores that keep no disk usage.
func usageStore(t *testing.T, h Harness) (task.Store, quota.UsageStore) {
	t.Helper()
	s := h.NewStore(t)
	us, ok := s.(quota.UsageStore)
	if !ok {
		t.Skip("the store keeps no disk usage")
	}
	return s, us
}

// usageSet is the tile set of the usage tests' pages.
var usageSet = tilestore.SetName{Layer: "topp:states", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}

// deltas returns usage deltas of tiles and bytes on each of pages pages.
func deltas(pages int, tiles, bytes int64) []quota.PageDelta {
	out := make([]quota.PageDelta, pages)
	for i := range out {
		out[i] = quota.PageDelta{Page: quota.PageKey{Set: usageSet, Z: 8, X: int64(i), Y: 1}, Tiles: tiles, Bytes: bytes}
	}
	return out
}

// totals returns the usage of usageSet's layer.
func totals(t *testing.T, us quota.UsageStore) quota.LayerUsage {
	t.Helper()
	ls, err := us.Layers(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		if l.Layer == usageSet.Layer {
			return l
		}
	}
	return quota.LayerUsage{Layer: usageSet.Layer}
}

// wantTotals fails unless the layer's usage, and its pages added up, are
// tiles and bytes.
func wantTotals(t *testing.T, us quota.UsageStore, tiles, bytes int64) quota.LayerUsage {
	t.Helper()
	l := totals(t, us)
	if l.Tiles != tiles || l.Bytes != bytes {
		t.Fatalf("got usage %d tiles, %d bytes; want %d, %d", l.Tiles, l.Bytes, tiles, bytes)
	}
	ps, err := us.Pages(t.Context(), usageSet.Layer)
	if err != nil {
		t.Fatal(err)
	}
	var pt, pb int64
	for _, p := range ps {
		pt += p.Tiles
		pb += p.Bytes
	}
	if pt != tiles || pb != bytes {
		t.Fatalf("pages add up to %d tiles, %d bytes; want %d, %d", pt, pb, tiles, bytes)
	}
	return l
}

func testCheckpointCarriesUsageOnce(t *testing.T, h Harness) {
	s, us := usageStore(t, h)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	cp := task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 4, Usage: deltas(3, 16, 65536)}
	got, err := s.Checkpoint(t.Context(), cp, t0)
	if err != nil || got.Cursor != 1 || got.Done != 4 || got.Status != task.Running || !got.Heartbeat.Equal(t0) {
		t.Fatalf("got %+v, %v; want cursor 1, done 4", got, err)
	}
	wantTotals(t, us, 48, 3*65536)
	// A replayed chunk (a redelivered lane message) fails its condition
	// and counts nothing.
	_, err = s.Checkpoint(t.Context(), cp, t0)
	wantKind(t, err, apperr.Conflict)
	wantTotals(t, us, 48, 3*65536)
	// Invalid checkpoints apply nothing either.
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 3, Tiles: 1, Usage: deltas(1, 1, 1)}, t0)
	wantKind(t, err, apperr.Invalid)
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 1, Usage: deltas(task.MaxCheckpointPages+1, 1, 1)}, t0)
	wantKind(t, err, apperr.Invalid)
	wantTotals(t, us, 48, 3*65536)
	// The most pages a checkpoint may carry.
	if _, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 6, Usage: deltas(task.MaxCheckpointPages, -1, -4096)}, t0); err != nil {
		t.Fatal(err)
	}
	wantTotals(t, us, 48-task.MaxCheckpointPages, 3*65536-task.MaxCheckpointPages*4096)
}

func testRetriedCheckpointCountsUsageOnce(t *testing.T, h Harness) {
	s, us := usageStore(t, h)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	cp := task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 4, Usage: deltas(3, 16, 65536), Token: "tok-u"}
	for i := range 3 {
		got, err := s.Checkpoint(t.Context(), cp, t0)
		if err != nil || got.Cursor != 1 || got.Done != 4 {
			t.Fatalf("attempt %d: got %+v, %v; want success at cursor 1, done 4", i+1, got, err)
		}
	}
	wantTotals(t, us, 48, 3*65536)
}

func testKilledLaneAppliesItsUsageDirectly(t *testing.T, h Harness) {
	s, us := usageStore(t, h)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	if _, err := s.Kill(t.Context(), 1, task.Running, t0); err != nil {
		t.Fatal(err)
	}
	// The lane's next checkpoint fails: the task is ABORTED ...
	_, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 4, Usage: deltas(2, 16, 4096)}, t0)
	wantKind(t, err, apperr.Conflict)
	wantTotals(t, us, 0, 0)
	if tk, _ := s.Get(t.Context(), 1); tk.Status != task.Aborted {
		t.Fatalf("got %+v, want ABORTED", tk)
	}
	// ... but its tiles are stored and nobody will redo them, so the
	// worker applies the deltas directly.
	if err := us.ApplyDeltas(t.Context(), deltas(2, 16, 4096), t0); err != nil {
		t.Fatal(err)
	}
	wantTotals(t, us, 32, 8192)
}

func testTakenOverLaneDropsItsUsage(t *testing.T, h Harness) {
	s, us := usageStore(t, h)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	// Another worker took the lane over and checkpointed first.
	if _, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 4, Usage: deltas(1, 16, 4096)}, t0); err != nil {
		t.Fatal(err)
	}
	// The old worker's checkpoint of the same metatiles fails; its
	// deltas are dropped (the lane is marked for a recount instead).
	_, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 4, Usage: deltas(1, 16, 4096)}, t0)
	wantKind(t, err, apperr.Conflict)
	before := wantTotals(t, us, 16, 4096)
	if tk, _ := s.Get(t.Context(), 1); tk.Status != task.Running || tk.Cursor != 1 {
		t.Fatalf("got %+v, want RUNNING at 1 (a takeover, not a kill)", tk)
	}
	if err := us.MarkDirty(t.Context(), []string{usageSet.Layer}); err != nil {
		t.Fatal(err)
	}
	if l := wantTotals(t, us, 16, 4096); !l.Dirty || l.Version == before.Version {
		t.Fatalf("got %+v, want dirty with a new version", l)
	}
}

func testConcurrentCheckpointsWithUsageCountOnce(t *testing.T, h Harness) {
	s, us := usageStore(t, h)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 5 {
		wg.Go(func() {
			_, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 2, Tiles: 10, Usage: deltas(4, 10, 40960)}, t0)
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !apperr.Is(err, apperr.Conflict) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("got %d winners, want 1", wins)
	}
	wantTotals(t, us, 40, 4*40960)
}
