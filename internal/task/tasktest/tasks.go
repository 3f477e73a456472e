package tasktest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

func testCreateTakesConsecutiveIDs(t *testing.T, h Harness) {
	s := h.NewStore(t)
	j1, ts1 := mustCreate(t, s, 3)
	j2, ts2 := mustCreate(t, s, 2)
	if j1.ID != 1 || j2.ID != 4 {
		t.Fatalf("got job ids %d, %d, want 1, 4", j1.ID, j2.ID)
	}
	for i, tk := range append(ts1, ts2...) {
		if tk.ID != int64(i+1) {
			t.Errorf("task %d: got id %d, want %d", i, tk.ID, i+1)
		}
		if tk.Status != task.Pending || tk.Cursor != tk.Start || tk.Done != 0 {
			t.Errorf("task %d: got %+v, want PENDING at its lane start", tk.ID, tk)
		}
	}
	got, err := s.Job(t.Context(), j2.ID)
	if err != nil || got.ID != 4 || got.Layer != "topp:states" || got.Tiles != 30 || got.Render().RetryCount != -1 {
		t.Fatalf("Job(4): got %+v, %v", got, err)
	}
	tk, err := s.Get(t.Context(), 5)
	if err != nil || tk.JobID != 4 || tk.Start != 2 || tk.End != 4 || tk.Total != 10 {
		t.Fatalf("Get(5): got %+v, %v", tk, err)
	}
}

func testCreateWithoutLanesFails(t *testing.T, h Harness) {
	s := h.NewStore(t)
	if _, _, err := s.Create(t.Context(), job(), nil, t0); err == nil {
		t.Fatal("got nil error, want one")
	}
	_, ts := mustCreate(t, s, 1)
	if ts[0].ID != 1 {
		t.Fatalf("a failed Create consumed ids: got first id %d, want 1", ts[0].ID)
	}
}

func testMissing(t *testing.T, h Harness) {
	s := h.NewStore(t)
	_, err := s.Get(t.Context(), 42)
	wantKind(t, err, apperr.NotFound)
	_, err = s.Job(t.Context(), 42)
	wantKind(t, err, apperr.NotFound)
}

func testConcurrentCreatesNeverShareIDs(t *testing.T, h Harness) {
	s := h.NewStore(t)
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			_, ts, err := s.Create(t.Context(), job(), lanes(3), t0)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for i, tk := range ts {
				if seen[tk.ID] {
					t.Errorf("id %d handed out twice", tk.ID)
				}
				if i > 0 && tk.ID != ts[i-1].ID+1 {
					t.Errorf("ids of one request not consecutive: %d after %d", tk.ID, ts[i-1].ID)
				}
				seen[tk.ID] = true
			}
		})
	}
	wg.Wait()
	if len(seen) != 24 {
		t.Fatalf("got %d ids, want 24", len(seen))
	}
}

func testPromoteRespectsPoolOldestFirst(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 5)
	p := mustPromote(t, s, 2)
	if len(p) != 2 || p[0].ID != 1 || p[1].ID != 2 || p[0].Status != task.Running {
		t.Fatalf("got promoted %+v, want tasks 1 and 2 RUNNING", p)
	}
	if p := mustPromote(t, s, 2); len(p) != 0 {
		t.Fatalf("pool full: got %d promoted, want 0", len(p))
	}
	// Free one thread: finish task 1 through its lane.
	if _, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 2, Tiles: 10}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Finish(t.Context(), 1, task.Done, t0); err != nil {
		t.Fatal(err)
	}
	p = mustPromote(t, s, 2)
	if len(p) != 1 || p[0].ID != 3 {
		t.Fatalf("got promoted %+v, want task 3", p)
	}
	// A kill of a running task frees its thread too.
	if _, err := s.Kill(t.Context(), 2, task.Running, t0); err != nil {
		t.Fatal(err)
	}
	p = mustPromote(t, s, 2)
	if len(p) != 1 || p[0].ID != 4 {
		t.Fatalf("got promoted %+v, want task 4", p)
	}
	// A larger pool takes the rest.
	if p := mustPromote(t, s, 10); len(p) != 1 || p[0].ID != 5 {
		t.Fatalf("got promoted %+v, want task 5", p)
	}
}

func testClaims(t *testing.T, h Harness) {
	c, ok := h.NewStore(t).(interface {
		Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error)
		Unclaim(ctx context.Context, key, owner string) error
	})
	if !ok {
		t.Skip("the store keeps no claims")
	}
	ttl := 30 * time.Second
	claim := func(key, owner string, at time.Time, want bool) {
		t.Helper()
		if got, err := c.Claim(t.Context(), key, owner, ttl, at); err != nil || got != want {
			t.Fatalf("Claim(%s, %s, +%v): got %v, %v; want %v", key, owner, at.Sub(t0), got, err, want)
		}
	}
	claim("m/1", "a", t0, true)
	claim("m/1", "b", t0.Add(time.Second), false)              // held
	claim("m/2", "b", t0.Add(time.Second), true)               // another key
	claim("m/1", "a", t0.Add(2*time.Second), true)             // the holder renews
	if err := c.Unclaim(t.Context(), "m/1", "b"); err != nil { // not b's: nothing
		t.Fatal(err)
	}
	claim("m/1", "b", t0.Add(3*time.Second), false)
	if err := c.Unclaim(t.Context(), "m/1", "a"); err != nil {
		t.Fatal(err)
	}
	claim("m/1", "b", t0.Add(3*time.Second), true)             // released
	claim("m/2", "c", t0.Add(ttl+2*time.Second), true)         // b's expired
	if err := c.Unclaim(t.Context(), "m/9", "a"); err != nil { // never claimed
		t.Fatal(err)
	}
	// Of many claimants at once, one wins.
	var wg sync.WaitGroup
	var wins atomic.Int64
	for i := range 6 {
		wg.Go(func() {
			if ok, err := c.Claim(t.Context(), "m/3", fmt.Sprint("w", i), ttl, t0); err != nil {
				t.Error(err)
			} else if ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claimants won, want 1", wins.Load())
	}
}

func testClaimNotes(t *testing.T, h Harness) {
	c, ok := h.NewStore(t).(interface {
		Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error)
		Settle(ctx context.Context, key, owner, note string, until time.Time) error
		Note(ctx context.Context, key, note string, until time.Time) error
		Peek(ctx context.Context, key string, now time.Time) (owner, note string, until time.Time, err error)
	})
	if !ok {
		t.Skip("the store keeps no claim notes")
	}
	ttl := 30 * time.Second
	peek := func(key string, at time.Time, wantOwner, wantNote string, wantUntil time.Time) {
		t.Helper()
		o, n, u, err := c.Peek(t.Context(), key, at)
		if err != nil || o != wantOwner || n != wantNote || !u.Equal(wantUntil) {
			t.Fatalf("Peek(%s, +%v): got %q, %q, %v, %v; want %q, %q, %v", key, at.Sub(t0), o, n, u, err, wantOwner, wantNote, wantUntil)
		}
	}
	peek("n/1", t0, "", "", time.Time{}) // never claimed
	if ok, err := c.Claim(t.Context(), "n/1", "a", ttl, t0); err != nil || !ok {
		t.Fatalf("Claim: got %v, %v; want true", ok, err)
	}
	peek("n/1", t0.Add(time.Second), "a", "", t0.Add(ttl))
	// Only the holder settles.
	if err := c.Settle(t.Context(), "n/1", "b", "not b's", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	peek("n/1", t0.Add(time.Second), "a", "", t0.Add(ttl))
	if err := c.Settle(t.Context(), "n/1", "a", "blank", t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	peek("n/1", t0.Add(time.Second), "", "blank", t0.Add(5*time.Minute))
	// A live note refuses every claimant, its writer included; a lapsed one none.
	for _, who := range []string{"a", "b"} {
		if ok, err := c.Claim(t.Context(), "n/1", who, ttl, t0.Add(time.Minute)); err != nil || ok {
			t.Fatalf("Claim(%s) under a note: got %v, %v; want false", who, ok, err)
		}
	}
	peek("n/1", t0.Add(5*time.Minute), "", "", time.Time{})
	if ok, err := c.Claim(t.Context(), "n/1", "b", ttl, t0.Add(5*time.Minute)); err != nil || !ok {
		t.Fatalf("Claim after the note lapsed: got %v, %v; want true", ok, err)
	}
	// Note overwrites whatever is there, claim or note.
	if err := c.Note(t.Context(), "n/1", "epoch 7", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	peek("n/1", t0.Add(6*time.Minute), "", "epoch 7", t0.Add(time.Hour))
	if err := c.Note(t.Context(), "n/1", "epoch 8", t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	peek("n/1", t0.Add(6*time.Minute), "", "epoch 8", t0.Add(2*time.Hour))
}

func testPromoteHoldsLaneCaps(t *testing.T, h Harness) {
	s := h.NewStore(t)
	other := job()
	other.Layer = "other"
	mustCreate(t, s, 3)                                                      // tasks 1-3 of topp:states
	if _, _, err := s.Create(t.Context(), other, lanes(2), t0); err != nil { // tasks 4-5
		t.Fatal(err)
	}
	caps := func(l string) int {
		if l == "topp:states" {
			return 2
		}
		return 0
	}
	ids := func(ts []task.Task) (out []int64) {
		for _, tk := range ts {
			out = append(out, tk.ID)
		}
		return out
	}
	// The capped layer's third task waits; the next layer's go ahead.
	p, err := s.Promote(t.Context(), 10, caps, t0)
	if err != nil || !slices.Equal(ids(p), []int64{1, 2, 4, 5}) {
		t.Fatalf("got %v, %v; want tasks 1, 2, 4, 5", ids(p), err)
	}
	if p, err := s.Promote(t.Context(), 10, caps, t0); err != nil || len(p) != 0 {
		t.Fatalf("at the cap: got %v, %v; want none", ids(p), err)
	}
	// A lane of the layer ends: its next task starts.
	if _, err := s.Kill(t.Context(), 2, task.Running, t0); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Promote(t.Context(), 10, caps, t0); err != nil || !slices.Equal(ids(p), []int64{3}) {
		t.Fatalf("after a kill: got %v, %v; want task 3", ids(p), err)
	}
}

func testCheckpointIsConditional(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 2)
	_, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5}, t0)
	wantKind(t, err, apperr.Conflict) // still PENDING
	mustPromote(t, s, 2)
	t1 := t0.Add(time.Second)
	got, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5}, t1)
	if err != nil || got.Cursor != 1 || got.Done != 5 || !got.Heartbeat.Equal(t1) {
		t.Fatalf("got %+v, %v; want cursor 1, done 5, heartbeat %v", got, err, t1)
	}
	// The same checkpoint again (a duplicated message) must not count twice.
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5}, t1)
	wantKind(t, err, apperr.Conflict)
	if got, _ := s.Get(t.Context(), 1); got.Done != 5 || got.Cursor != 1 {
		t.Fatalf("after duplicate: got done %d cursor %d, want 5 and 1", got.Done, got.Cursor)
	}
	// Beyond the lane or over the total is refused.
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 3, Tiles: 1}, t1)
	wantKind(t, err, apperr.Invalid)
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 6}, t1)
	wantKind(t, err, apperr.Invalid)
	// A heartbeat-only checkpoint keeps the cursor.
	if got, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 1}, t1); err != nil || got.Cursor != 1 {
		t.Fatalf("heartbeat: got %+v, %v", got, err)
	}
}

func testKeyCursorOfADeletedLayersTruncation(t *testing.T, h Harness) {
	s := h.NewStore(t)
	hdr := job().Header
	hdr.Layer = "gone:layer"
	j := task.NewLayerDeletion(hdr, "tiles/gone:layer/")
	created, _, err := s.Create(t.Context(), j, []task.Lane{{Start: 0, End: 100, Tiles: 100}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Job(t.Context(), created.ID); err != nil || got.Prefix() != j.Prefix() {
		t.Fatalf("job: got prefix %q, %v; want %q", got.Prefix(), err, j.Prefix())
	}
	mustPromote(t, s, 1)
	got, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: created.ID, From: 0, To: 10, Tiles: 10, After: "tiles/gone:layer/a/9.png"}, t0)
	if err != nil || got.After != "tiles/gone:layer/a/9.png" {
		t.Fatalf("got %+v, %v; want the key cursor set", got, err)
	}
	// A checkpoint without After (a heartbeat, the sweep's) keeps it.
	if _, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: created.ID, From: 10, To: 10}, t0); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(t.Context(), created.ID); err != nil || got.After != "tiles/gone:layer/a/9.png" || got.Cursor != 10 {
		t.Fatalf("after a heartbeat: got %+v, %v", got, err)
	}
	// A refused checkpoint moves neither cursor.
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: created.ID, From: 0, To: 20, Tiles: 10, After: "tiles/gone:layer/b"}, t0)
	wantKind(t, err, apperr.Conflict)
	if got, _ := s.Get(t.Context(), created.ID); got.After != "tiles/gone:layer/a/9.png" {
		t.Fatalf("after a refused checkpoint: key cursor %q", got.After)
	}
}

func testLeaseFencesCheckpoints(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 2)
	ttl := 10 * time.Second
	_, err := s.Acquire(t.Context(), 1, "a", ttl, t0)
	wantKind(t, err, apperr.Conflict) // still PENDING
	_, err = s.Acquire(t.Context(), 99, "a", ttl, t0)
	wantKind(t, err, apperr.NotFound)
	mustPromote(t, s, 2)
	got, err := s.Acquire(t.Context(), 1, "a", ttl, t0)
	if err != nil || got.Owner != "a" || !got.Heartbeat.Equal(t0) || got.Cursor != 0 {
		t.Fatalf("acquire: got %+v, %v; want owner a, heartbeat %v", got, err, t0)
	}
	// A live holder keeps it; concurrent claimants all fail.
	t1 := t0.Add(ttl - time.Second)
	_, err = s.Acquire(t.Context(), 1, "b", ttl, t1)
	wantKind(t, err, apperr.Conflict)
	// Only the holder checkpoints, and keeps the lease.
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5, Owner: "b"}, t1)
	wantKind(t, err, apperr.Conflict)
	got, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5, Owner: "a"}, t1)
	if err != nil || got.Owner != "a" || got.Cursor != 1 {
		t.Fatalf("holder's checkpoint: got %+v, %v", got, err)
	}
	// Once its heartbeat is older than the TTL, another worker takes
	// the lane, and the old holder's checkpoints are refused.
	t2 := t1.Add(ttl)
	got, err = s.Acquire(t.Context(), 1, "b", ttl, t2)
	if err != nil || got.Owner != "b" || got.Cursor != 1 || got.Done != 5 {
		t.Fatalf("takeover: got %+v, %v", got, err)
	}
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 5, Owner: "a"}, t2)
	wantKind(t, err, apperr.Conflict)
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 5, Owner: "a",
		Usage: []quota.PageDelta{{Page: quota.PageKey{Set: tilestore.SetName{Layer: "topp:states", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Z: 1}, Tiles: 5, Bytes: 5 * 4096}}}, t2)
	wantKind(t, err, apperr.Conflict)
	// Released with a checkpoint: the next worker takes it at once.
	got, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 1, Owner: "b", Release: true}, t2)
	if err != nil || got.Owner != "" {
		t.Fatalf("release: got %+v, %v", got, err)
	}
	if got, err := s.Acquire(t.Context(), 1, "c", ttl, t2); err != nil || got.Owner != "c" {
		t.Fatalf("after the release: got %+v, %v", got, err)
	}
	// A checkpoint without owner (the sweep's) revokes the lease.
	if got, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 1}, t2); err != nil || got.Owner != "" {
		t.Fatalf("revoke: got %+v, %v", got, err)
	}
	if got, _ := s.Get(t.Context(), 1); got.Owner != "" || got.Done != 5 {
		t.Fatalf("after the revoke: got %+v", got)
	}
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 5, Owner: "c"}, t2)
	wantKind(t, err, apperr.Conflict)
	// Of many claimants at once, one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []string
	for _, o := range []string{"d", "e", "f", "g", "h", "i"} {
		wg.Go(func() {
			_, err := s.Acquire(t.Context(), 2, o, ttl, t2)
			if err == nil {
				mu.Lock()
				winners = append(winners, o)
				mu.Unlock()
			} else if !apperr.Is(err, apperr.Conflict) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, _ := s.Get(t.Context(), 2); len(winners) != 1 || got.Owner != winners[0] {
		t.Fatalf("got winners %v and owner %q, want one", winners, got.Owner)
	}
}

func testAcquireRetriedByItsHolder(t *testing.T, h Harness) {
	// The answer of an Acquire can be lost after the store applied it:
	// the holder's retry succeeds, anyone else's is still refused.
	s := h.NewStore(t)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	ttl := 10 * time.Second
	if _, err := s.Acquire(t.Context(), 1, "a", ttl, t0); err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(time.Second)
	got, err := s.Acquire(t.Context(), 1, "a", ttl, t1)
	if err != nil || got.Owner != "a" || !got.Heartbeat.Equal(t1) {
		t.Fatalf("the holder's retry: got %+v, %v; want owner a, heartbeat %v", got, err, t1)
	}
	_, err = s.Acquire(t.Context(), 1, "b", ttl, t1)
	wantKind(t, err, apperr.Conflict)
}

func testRetriedCheckpointSucceedsOnce(t *testing.T, h Harness) {
	// A checkpoint applied whose answer was lost, sent again with its
	// token, succeeds and changes nothing; without the token, or with
	// another, it is the conflict it always was.
	s := h.NewStore(t)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	if _, err := s.Acquire(t.Context(), 1, "a", time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	cp := task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5, Owner: "a", Token: "tok-1"}
	first, err := s.Checkpoint(t.Context(), cp, t0)
	if err != nil || first.Cursor != 1 || first.Done != 5 {
		t.Fatalf("checkpoint: got %+v, %v", first, err)
	}
	again, err := s.Checkpoint(t.Context(), cp, t0.Add(time.Second))
	if err != nil || again.Cursor != 1 || again.Done != 5 || again.Owner != "a" {
		t.Fatalf("the same checkpoint again: got %+v, %v; want success at cursor 1, done 5", again, err)
	}
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5, Owner: "a", Token: "tok-other"}, t0)
	wantKind(t, err, apperr.Conflict)
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5, Owner: "a"}, t0)
	wantKind(t, err, apperr.Conflict)
	// A release gives the lease up: its retry succeeds all the same.
	rel := task.Checkpoint{ID: 1, From: 1, To: 2, Tiles: 5, Owner: "a", Release: true, Token: "tok-2"}
	if _, err := s.Checkpoint(t.Context(), rel, t0); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Checkpoint(t.Context(), rel, t0); err != nil || got.Cursor != 2 || got.Done != 10 || got.Owner != "" {
		t.Fatalf("the release again: got %+v, %v; want success at cursor 2, done 10, no owner", got, err)
	}
	if got, _ := s.Get(t.Context(), 1); got.Cursor != 2 || got.Done != 10 {
		t.Fatalf("after the retries: got %+v, want cursor 2, done 10", got)
	}
}

func testConcurrentCheckpointsOneWins(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 6 {
		wg.Go(func() {
			_, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 2, Tiles: 10}, t0)
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
	if got, _ := s.Get(t.Context(), 1); wins != 1 || got.Done != 10 {
		t.Fatalf("got %d winners and done %d, want 1 and 10", wins, got.Done)
	}
}

func testFinishConditions(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 2)
	_, err := s.Finish(t.Context(), 1, task.Done, t0)
	wantKind(t, err, apperr.Conflict) // PENDING
	mustPromote(t, s, 2)
	_, err = s.Finish(t.Context(), 1, task.Done, t0)
	wantKind(t, err, apperr.Conflict) // cursor not at the end
	if _, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 2, Tiles: 10}, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.Finish(t.Context(), 1, task.Done, t0)
	if err != nil || got.Status != task.Done || !got.Finished.Equal(t0) {
		t.Fatalf("got %+v, %v; want DONE", got, err)
	}
	_, err = s.Finish(t.Context(), 1, task.Aborted, t0)
	wantKind(t, err, apperr.Conflict)
	got, err = s.Finish(t.Context(), 2, task.Aborted, t0)
	if err != nil || got.Status != task.Aborted || got.Killed {
		t.Fatalf("got %+v, %v; want ABORTED, not killed", got, err)
	}
}

func testKillExpectsStatus(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 2)
	mustPromote(t, s, 1)
	_, err := s.Kill(t.Context(), 1, task.Pending, t0)
	wantKind(t, err, apperr.Conflict)
	before, err := s.Kill(t.Context(), 1, task.Running, t0)
	if err != nil || before.Status != task.Running {
		t.Fatalf("got %+v, %v; want the RUNNING task before the kill", before, err)
	}
	after, _ := s.Get(t.Context(), 1)
	if after.Status != task.Aborted || !after.Killed {
		t.Fatalf("after kill: got %+v, want ABORTED and killed", after)
	}
	_, err = s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 5}, t0)
	wantKind(t, err, apperr.Conflict)
	if _, err := s.Kill(t.Context(), 2, task.Pending, t0); err != nil {
		t.Fatal(err)
	}
	if p := mustPromote(t, s, 5); len(p) != 0 {
		t.Fatalf("a killed pending task was promoted: %+v", p)
	}
	_, err = s.Kill(t.Context(), 2, task.Pending, t0)
	wantKind(t, err, apperr.Conflict)
}

func testListActiveAndRecent(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 3)
	mustPromote(t, s, 1)
	if _, err := s.Kill(t.Context(), 2, task.Pending, t0.Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	all, err := s.List(t.Context(), t0)
	if err != nil || len(all) != 3 || all[0].ID != 1 || all[1].ID != 2 || all[2].ID != 3 {
		t.Fatalf("List(since t0): got %+v, %v; want tasks 1,2,3 by id", all, err)
	}
	active, err := s.List(t.Context(), t0.Add(11*time.Second))
	if err != nil || len(active) != 2 || active[0].ID != 1 || active[1].ID != 3 {
		t.Fatalf("List(later): got %+v, %v; want tasks 1 and 3", active, err)
	}
	empty := h.NewStore(t)
	if got, err := empty.List(t.Context(), t0); err != nil || len(got) != 0 {
		t.Fatalf("empty store: got %+v, %v", got, err)
	}
}

func testFailuresAreSharedPerJob(t *testing.T, h Harness) {
	s := h.NewStore(t)
	j, _ := mustCreate(t, s, 2)
	for i, want := range []int64{1, 3, 4} {
		n := []int64{1, 2, 1}[i]
		got, err := s.AddFailures(t.Context(), j.ID, n)
		if err != nil || got != want {
			t.Fatalf("AddFailures #%d: got %d, %v; want %d", i, got, err, want)
		}
	}
	if got, _ := s.AddFailures(t.Context(), j.ID+100, 1); got != 1 {
		t.Fatalf("another job: got %d, want 1", got)
	}
}

func testRowLayout(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 1)
	mustPromote(t, s, 1)
	tk, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 4}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tk.Row(), [5]int64{4, 10, 6, 1, 1}; got != want {
		t.Fatalf("got row %v, want %v", got, want)
	}
}

// testKilledAtRecordsAKilledLanesProgress: a killed lane's last count is
// recorded (raised only, at most the lane's total); a task not killed is
// a conflict.
func testKilledAtRecordsAKilledLanesProgress(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, 2)
	mustPromote(t, s, 2)
	if _, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: 1, From: 0, To: 1, Tiles: 4}, t0); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.KilledAt(t.Context(), 1, 6), apperr.Conflict) // RUNNING
	wantKind(t, s.KilledAt(t.Context(), 99, 6), apperr.NotFound)
	if _, err := s.Kill(t.Context(), 1, task.Running, t0); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ done, want int64 }{{6, 6}, {5, 6}, {1000, 10}} {
		if err := s.KilledAt(t.Context(), 1, c.done); err != nil {
			t.Fatalf("KilledAt(%d): %v", c.done, err)
		}
		if tk, _ := s.Get(t.Context(), 1); tk.Done != c.want || tk.Status != task.Aborted || !tk.Killed {
			t.Fatalf("after KilledAt(%d): %+v, want ABORTED, killed, %d done", c.done, tk, c.want)
		}
		if row := (mustGetRow(t, s, 1)); row[0] != c.want || row[2] != 10-c.want {
			t.Fatalf("after KilledAt(%d): row %v", c.done, row)
		}
	}
	// Aborted by its failures, not killed: nothing to record.
	if _, err := s.Finish(t.Context(), 2, task.Aborted, t0); err != nil {
		t.Fatal(err)
	}
	wantKind(t, s.KilledAt(t.Context(), 2, 3), apperr.Conflict)
}

func mustGetRow(t *testing.T, s task.Store, id int64) [5]int64 {
	t.Helper()
	tk, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk.Row()
}

// testExportJobRoundTrips: an export job (its type, archive kind and
// range) reads back from the store as it was created, and its task is
// listed with the export's type.
func testExportJobRoundTrips(t *testing.T, h Harness) {
	s := h.NewStore(t)
	in := task.NewExport(task.Header{Layer: "topp:states", Tiles: 341, Metatiles: 9, SubmittedBy: "alice"},
		task.Range{GridSetID: "EPSG:900913", Format: "image/png", ParametersID: "default", Bounds: [4]float64{-1, -2, 3, 4},
			ZoomStart: 0, ZoomStop: 4, MetaWidth: 4, MetaHeight: 4, Order: "columns"}, "gpkg")
	j, ts, err := s.Create(t.Context(), in, []task.Lane{{Start: 0, End: 9, Tiles: 341}}, t0)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, err := s.Job(t.Context(), j.ID)
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	if got.Type != task.Export || got.Archive() != "gpkg" || !reflect.DeepEqual(got.Range(), in.Range()) || got.Tiles != 341 || got.SubmittedBy != "alice" {
		t.Errorf("read back %+v (archive %q, range %+v), want an export to gpkg of %+v", got, got.Archive(), got.Range(), in.Range())
	}
	listed, err := s.List(t.Context(), t0)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(listed) != 1 || listed[0].ID != ts[0].ID || listed[0].Type != task.Export || listed[0].Total != 341 {
		t.Errorf("listed %+v, want task %d of type EXPORT and 341 tiles", listed, ts[0].ID)
	}
}
