package seed_test

// Unit tests of lane execution against the embedded adapters (bbolt task
// store, in-memory queue, file tile store) with a source written here, in
// testing/synctest bubbles: time is virtual, so rules about seconds and
// minutes run in milliseconds. The same rules are shown end to end against
// real HTTP upstreams in internal/app.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/queue"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/seed"
	"tilecache/internal/source"
	"tilecache/internal/state/bolt"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/filestore"
)

const laneLayers = `
layers:
  - name: lane:test
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern}
`

// fakeSource renders through a function and records every call.
type fakeSource struct {
	render func(ctx context.Context, req source.Request) ([]source.Tile, error)
	mu     sync.Mutex
	calls  []call
}

type call struct {
	at   time.Time
	tile string
}

func (s *fakeSource) Render(ctx context.Context, req source.Request) ([]source.Tile, error) {
	s.mu.Lock()
	s.calls = append(s.calls, call{at: time.Now(), tile: fmt.Sprintf("%d/%d/%d", req.Z, req.Tiles.MinX, req.Tiles.MinY)})
	s.mu.Unlock()
	return s.render(ctx, req)
}

func (s *fakeSource) snapshot() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

// tilesOf answers every tile of the request with a few bytes.
func tilesOf(req source.Request) []source.Tile {
	var out []source.Tile
	for x, y := range req.Tiles.All() {
		out = append(out, source.Tile{X: x, Y: y, Data: []byte(fmt.Sprintf("tile %d/%d/%d", req.Z, x, y))})
	}
	return out
}

// sleepCtx waits d or until ctx ends, as an upstream request does.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type harness struct {
	e     *seed.Engine
	tasks *states
	q     *memqueue.Queue
	tiles *filestore.Store
	src   *fakeSource
	log   *strings.Builder
}

// newHarness must be called inside the bubble.
func newHarness(t *testing.T, src *fakeSource, opts seed.Options) *harness {
	t.Helper()
	ts, fs, cat := openStores(t, laneLayers)
	q := memqueue.New()
	opts.Usage = ts
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	e := seed.New(cat, map[string]source.Source{"lane:test": src}, ts, q, fs, opts, log)
	return &harness{e: e, tasks: ts, q: q, tiles: fs, src: src, log: &logs}
}

// openStores opens a task store and a tile store in a new directory (closed
// when the test ends) and parses the layer file layers.
// states is the state adapters the engine's tests use, over one bbolt
// file: tasks, usage, the claims of render on miss and the configuration
// (embedded as configStore: a field called Config would hide its method).
type states struct {
	*bolt.Tasks
	*bolt.Usage
	*bolt.Claims
	*configStore
	db *bolt.DB
}

type configStore = bolt.Config

func (s *states) Close() error { return s.db.Close() }

func openStores(t *testing.T, layers string) (*states, *filestore.Store, *layer.Catalogue) {
	t.Helper()
	cat, err := layer.Parse([]byte(layers), "test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	ts := &states{db.Tasks(), db.Usage(), db.Claims(), db.Config(), db}
	t.Cleanup(func() { ts.Close() })
	fs, err := filestore.New(filepath.Join(dir, "tiles"))
	if err != nil {
		t.Fatal(err)
	}
	return ts, fs, cat
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (h *harness) submit(t *testing.T, zoomStop, threads, retries, waitMS, maxFailures int) []task.Task {
	t.Helper()
	ts, err := h.e.Control.Submit(t.Context(), gwc.SeedRequest{Layer: "lane:test", GridSetID: "EPSG:4326", HasGridSetID: true,
		ZoomStart: ptr(0), ZoomStop: ptr(zoomStop), Format: "image/png", Type: "seed", ThreadCount: ptr(threads),
		RetryCount: ptr(retries), RetryWaitMS: ptr(waitMS), MaxFailures: ptr(maxFailures)})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// take receives the next lane message without working it.
func (h *harness) take(t *testing.T) queue.Delivery {
	t.Helper()
	ds, err := h.q.Receive(t.Context(), 1, time.Second, time.Hour)
	if err != nil || len(ds) != 1 {
		t.Fatalf("receive a lane message: got %d, %v", len(ds), err)
	}
	return ds[0]
}

func (h *harness) task(t *testing.T, id int64) task.Task {
	t.Helper()
	tk, err := h.tasks.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func (h *harness) storedTiles(t *testing.T) int {
	t.Helper()
	n := 0
	err := h.tiles.List(context.Background(), "lane:test/", func(o tilestore.Object) error {
		if strings.HasSuffix(o.Key, ".png") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLaneKillStopsUpstreamWithinASecond: a lane in a tile retry's backoff
// (and in the source's own waits) stops calling its source within
// KillCheckEvery of a kill.
func TestLaneKillStopsUpstreamWithinASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			if err := sleepCtx(ctx, 300*time.Millisecond); err != nil {
				return nil, err
			}
			return nil, errors.New("503 overloaded")
		}}
		h := newHarness(t, src, seed.Options{})
		h.submit(t, 2, 1, 50, 5000, 1000)
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); h.e.Worker.RunWorkers(ctx, 1) }()
		time.Sleep(12 * time.Second) // two tries and a backoff in
		if _, _, err := h.e.Control.Kill(t.Context(), "", seed.KillAll); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		time.Sleep(time.Minute) // the retries would go on for minutes
		stop()
		<-done
		calls := src.snapshot()
		if len(calls) < 2 {
			t.Fatalf("the source was called %d times before the kill, want ≥ 2", len(calls))
		}
		if last := calls[len(calls)-1].at; last.After(killed.Add(time.Second)) {
			t.Errorf("the source was called %v after the kill, want nothing after 1 s", last.Sub(killed))
		}
	})
}

// TestLaneRenderOutlivingBudgetIsATileFailure: with an invocation deadline
// (a Lambda's), a render that hangs is cut at the deadline less half the
// safety margin and counted as a tile failure; the message is finished
// with (acked), the lane moved past the metatile and continues in a new
// message, instead of being redelivered onto the same metatile forever.
func TestLaneRenderOutlivingBudgetIsATileFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cause error
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			<-ctx.Done() // an upstream that never answers
			cause = context.Cause(ctx)
			return nil, ctx.Err()
		}}
		h := newHarness(t, src, seed.Options{SafetyMargin: 10 * time.Second})
		tasks := h.submit(t, 1, 1, 3, 1000, 100)
		d := h.take(t)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		start := time.Now()
		if err := h.e.Worker.Work(ctx, d.Message, d.Attempt); err != nil {
			t.Fatalf("Work: %v, want nil (the message is finished with)", err)
		}
		if took := time.Since(start); took != 55*time.Second {
			t.Errorf("the lane returned after %v, want 55 s (60 s less half the 10 s margin)", took)
		}
		if !errors.Is(cause, seed.ErrRenderBudget) {
			t.Errorf("the render was cancelled with %v, want the render budget", cause)
		}
		tk := h.task(t, tasks[0].ID)
		if tk.Status != task.Running || tk.Cursor != 1 || tk.Owner != "" {
			t.Errorf("task after the slice: %+v, want RUNNING at metatile 1 with its lease given up", tk)
		}
		if n, _ := h.tasks.AddFailures(t.Context(), tk.JobID, 0); n != 4 {
			t.Errorf("job failures: got %d, want 4 (1 + 3 retries)", n)
		}
		if ready, _ := h.q.Len(); ready != 1 {
			t.Errorf("got %d continuation messages, want 1", ready)
		}
		if !strings.Contains(h.log.String(), "outlived the time left") {
			t.Errorf("the log does not name the budget:\n%s", h.log.String())
		}
	})
}

// TestLaneOneWorkerPerLane: a lane whose renders take longer than the
// staleness window keeps its lease; a duplicate message, a redelivery and
// the sweep meanwhile never start a second worker on it, so every
// metatile is rendered once.
func TestLaneOneWorkerPerLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			if err := sleepCtx(ctx, 40*time.Second); err != nil {
				return nil, err
			}
			return tilesOf(req), nil
		}}
		h := newHarness(t, src, seed.Options{StaleAfter: 30 * time.Second})
		tasks := h.submit(t, 1, 1, 0, 0, 0)
		d := h.take(t)
		var wg sync.WaitGroup
		errs := make([]error, 3)
		wg.Go(func() { errs[0] = h.e.Worker.Work(t.Context(), d.Message, 1) })
		time.Sleep(50 * time.Second)
		wg.Go(func() { errs[1] = h.e.Worker.Work(t.Context(), d.Message, 1) }) // a duplicate
		time.Sleep(50 * time.Second)
		wg.Go(func() { errs[2] = h.e.Worker.Work(t.Context(), d.Message, 2) }) // a redelivery
		for range 6 {
			time.Sleep(15 * time.Second)
			if err := h.e.Pool.Sweep(t.Context()); err != nil {
				t.Error(err)
			}
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
		}
		// The sweep re-enqueued nothing: drain what is there and work it.
		for {
			ds, _ := h.q.Receive(t.Context(), 1, 0, time.Hour)
			if len(ds) == 0 {
				break
			}
			if err := h.e.Worker.Work(t.Context(), ds[0].Message, ds[0].Attempt); err != nil {
				t.Error(err)
			}
		}
		if tk := h.task(t, tasks[0].ID); tk.Status != task.Done || tk.Done != 10 {
			t.Errorf("task: %+v, want DONE with 10 tiles", tk)
		}
		seen := map[string]int{}
		for _, c := range src.snapshot() {
			seen[c.tile]++
		}
		if len(seen) != 10 {
			t.Errorf("rendered %v, want the 10 tiles of z0-1", seen)
		}
		for tile, n := range seen {
			if n != 1 {
				t.Errorf("%s rendered %d times, want once", tile, n)
			}
		}
	})
}

// TestLaneLostLeaseStopsTheWorker: when the lease is revoked (the sweep,
// after the worker failed to renew it) and another worker takes the lane,
// the first one's render is cancelled within a second and its checkpoints
// are refused; the second finishes the lane.
func TestLaneLostLeaseStopsTheWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var cancelled []error
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			if err := sleepCtx(ctx, 10*time.Second); err != nil {
				mu.Lock()
				cancelled = append(cancelled, context.Cause(ctx))
				mu.Unlock()
				return nil, err
			}
			return tilesOf(req), nil
		}}
		h := newHarness(t, src, seed.Options{})
		tasks := h.submit(t, 1, 1, 0, 0, 0)
		d := h.take(t)
		first := make(chan error, 1)
		go func() { first <- h.e.Worker.Work(t.Context(), d.Message, 1) }()
		time.Sleep(5 * time.Second)
		// The lease is revoked (what the sweep does to a lane whose
		// heartbeat went stale) and a second worker takes the lane.
		cur := h.task(t, tasks[0].ID)
		if _, err := h.tasks.Checkpoint(t.Context(), task.Checkpoint{ID: cur.ID, From: cur.Cursor, To: cur.Cursor}, time.Now()); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		second := make(chan error, 1)
		go func() { second <- h.e.Worker.Work(t.Context(), queue.Message{TaskID: cur.ID, Cursor: cur.Cursor}, 2) }()
		if err := <-first; err != nil {
			t.Errorf("first worker: %v, want nil (it stops: the lane is someone else's)", err)
		}
		stopped := time.Now()
		if err := <-second; err != nil {
			t.Errorf("second worker: %v", err)
		}
		if stopped.Sub(revoked) > time.Second {
			t.Errorf("the first worker stopped %v after losing its lease, want ≤ 1 s", stopped.Sub(revoked))
		}
		mu.Lock()
		if len(cancelled) != 1 || !errors.Is(cancelled[0], seed.ErrLeaseLost) {
			t.Errorf("renders cancelled with %v, want one, by the lost lease", cancelled)
		}
		mu.Unlock()
		if tk := h.task(t, tasks[0].ID); tk.Status != task.Done || tk.Done != 10 {
			t.Errorf("task: %+v, want DONE with 10 tiles", tk)
		}
		if n := h.storedTiles(t); n != 10 {
			t.Errorf("stored %d tiles, want 10", n)
		}
	})
}

// TestLaneKilledCountsWhatItStored: a lane killed between checkpoints
// applies the usage of the tiles it stored directly (no recount needed),
// including a metatile whose render finished just as the kill came.
func TestLaneKilledCountsWhatItStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			if err := sleepCtx(ctx, 700*time.Millisecond); err != nil {
				return nil, err
			}
			return tilesOf(req), nil
		}}
		h := newHarness(t, src, seed.Options{CheckpointEvery: time.Hour})
		h.submit(t, 4, 1, 0, 0, 0)
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); h.e.Worker.RunWorkers(ctx, 1) }()
		time.Sleep(5*time.Second + 350*time.Millisecond)
		if _, _, err := h.e.Control.Kill(t.Context(), "", seed.KillAll); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		stop()
		<-done
		stored := h.storedTiles(t)
		if stored < 5 {
			t.Fatalf("stored %d tiles before the kill, want several", stored)
		}
		ls, err := h.tasks.Layers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) != 1 || ls[0].Tiles != int64(stored) || ls[0].Dirty {
			t.Errorf("usage %+v, want %d tiles counted exactly (no recount)", ls, stored)
		}
	})
}

// TestLanePanickingSourceFailsItsMetatileOnly: a panic in the source is a
// tile failure, logged with its stack; the lane goes on.
func TestLanePanickingSourceFailsItsMetatileOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			if req.Z == 1 && req.Tiles.MinX == 0 && req.Tiles.MinY == 0 {
				panic("boom: a bug in the source")
			}
			return tilesOf(req), nil
		}}
		h := newHarness(t, src, seed.Options{})
		tasks := h.submit(t, 1, 1, 0, 0, 10)
		d := h.take(t)
		if err := h.e.Worker.Work(t.Context(), d.Message, 1); err != nil {
			t.Fatal(err)
		}
		if tk := h.task(t, tasks[0].ID); tk.Status != task.Done {
			t.Errorf("task: %+v, want DONE", tk)
		}
		if n := h.storedTiles(t); n != 9 {
			t.Errorf("stored %d tiles, want 9 (all but the panicking one)", n)
		}
		if !strings.Contains(h.log.String(), "source panicked") || !strings.Contains(h.log.String(), "lane_test.go") {
			t.Errorf("the panic is not logged with its stack:\n%.3000s", h.log.String())
		}
	})
}

// TestLaneWidensWhenItsSiblingsAreDone: a job's two lanes worked in one
// process, one with cheap metatiles and one with costly ones: once the
// cheap lane is done, the other renders two metatiles at once, so the job
// ends in about half the time its last lane would take alone, and never
// has more renders in flight than it has lanes.
func TestLaneWidensWhenItsSiblingsAreDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inFlight, most atomic.Int64
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			cost := 10 * time.Millisecond // level 3: cheap
			if req.Z < 3 {
				cost = time.Second
			}
			if err := sleepCtx(ctx, cost); err != nil {
				return nil, err
			}
			return tilesOf(req), nil
		}}
		h := newHarness(t, src, seed.Options{})
		// z0-3 of EPSG:4326 in 1x1 metatiles: 170 tiles, 85 a lane. The
		// first lane holds the 42 costly tiles of z0-2.
		tasks := h.submit(t, 3, 2, 0, 0, 0)
		start := time.Now()
		var wg sync.WaitGroup
		for range 2 {
			d := h.take(t)
			wg.Go(func() {
				if err := h.e.Worker.Work(t.Context(), d.Message, 1); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		took := time.Since(start)
		for _, tk := range tasks {
			if got := h.task(t, tk.ID); got.Status != task.Done {
				t.Errorf("task %d: %v, want DONE", tk.ID, got.Status)
			}
		}
		if n := len(src.snapshot()); n != 170 {
			t.Errorf("%d renders, want 170 (each tile once)", n)
		}
		if m := most.Load(); m != 2 {
			t.Errorf("at most %d renders in flight, want 2 (the job's lanes)", m)
		}
		// Alone, the first lane would take 42 s; two at a time, about 21 s.
		if took > 25*time.Second {
			t.Errorf("the job took %v; its last lane did not widen", took)
		}
	})
}

// flakyTiles fails the first fails writes (Put or Delete) of each key, as a
// throttled or reset S3 request that the client gave up on.
type flakyTiles struct {
	tilestore.Store
	fails  int
	mu     sync.Mutex
	seen   map[string]int
	failed int
}

func (f *flakyTiles) fail(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen[key]++
	if f.seen[key] <= f.fails {
		f.failed++
		return true
	}
	return false
}

func (f *flakyTiles) Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error {
	if f.fail(key) {
		return errors.New("SlowDown: please reduce your request rate")
	}
	return f.Store.Put(ctx, key, data, meta)
}

func (f *flakyTiles) Delete(ctx context.Context, keys []string) (int, error) {
	if len(keys) > 0 && f.fail("delete "+keys[0]) {
		return 0, errors.New("connection reset by peer")
	}
	return f.Store.Delete(ctx, keys)
}

// TestLaneRetriesFailedWrites: tile writes the store fails twice are sent
// again by the lane; the seed and the truncate finish in one delivery each,
// every tile counted once, no recount needed.
func TestLaneRetriesFailedWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) { return tilesOf(req), nil }}
		ts, fs, cat := openStores(t, laneLayers)
		flaky := &flakyTiles{Store: fs, fails: 2, seen: map[string]int{}}
		q := memqueue.New()
		e := seed.New(cat, map[string]source.Source{"lane:test": src}, ts, q, flaky, seed.Options{Usage: ts}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		h := &harness{e: e, tasks: ts, q: q, tiles: fs, src: src}
		tasks := h.submit(t, 3, 1, 0, 0, 0)
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		go h.e.Worker.RunWorkers(ctx, 1)
		waitDone := func(id int64) {
			t.Helper()
			for h.task(t, id).Status != task.Done {
				time.Sleep(100 * time.Millisecond)
				if h.task(t, id).Status == task.Aborted {
					t.Fatalf("task %d aborted", id)
				}
			}
		}
		waitDone(tasks[0].ID)
		stored := h.storedTiles(t)
		if stored != 2+8+32+128 {
			t.Fatalf("stored %d tiles, want %d", stored, 2+8+32+128)
		}
		ls, err := ts.Layers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(ls) != 1 || ls[0].Tiles != int64(stored) || ls[0].Dirty {
			t.Fatalf("usage %+v, want %d tiles counted exactly (no recount)", ls, stored)
		}
		if flaky.failed < 2*stored {
			t.Fatalf("the store failed %d writes, want at least %d: the test did not inject what it says", flaky.failed, 2*stored)
		}
		trunc, err := h.e.Control.Submit(t.Context(), gwc.SeedRequest{Layer: "lane:test", GridSetID: "EPSG:4326", HasGridSetID: true,
			ZoomStart: ptr(0), ZoomStop: ptr(3), Format: "image/png", Type: "truncate"})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(trunc[0].ID)
		ls, _ = ts.Layers(t.Context())
		if n := h.storedTiles(t); n != 0 || len(ls) != 1 || ls[0].Tiles != 0 || ls[0].Dirty {
			t.Fatalf("after the truncate: %d tiles stored, usage %+v; want none, counted exactly", n, ls)
		}
	})
}

// TestLaneStoppedByTheStoreGivesUpItsLease: a lane whose writes keep
// failing stops (its message comes again) and gives its lease up, so the
// next delivery takes the lane at once and, the work it finds counted or
// marked, does not mark the layer again.
func TestLaneStoppedByTheStoreGivesUpItsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) { return tilesOf(req), nil }}
		ts, fs, cat := openStores(t, laneLayers)
		flaky := &flakyTiles{Store: fs, fails: 4, seen: map[string]int{}}
		q := memqueue.New()
		var logs strings.Builder
		var mu sync.Mutex
		e := seed.New(cat, map[string]source.Source{"lane:test": src}, ts, q, flaky, seed.Options{Usage: ts},
			slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil)))
		h := &harness{e: e, tasks: ts, q: q, tiles: fs, src: src}
		tasks := h.submit(t, 2, 1, 0, 0, 0)
		d := h.take(t)
		if err := e.Worker.Handle(t.Context(), d); err == nil {
			t.Fatal("Handle: got nil, want the storage error (deliver again)")
		}
		if tk := h.task(t, tasks[0].ID); tk.Owner != "" || tk.Status != task.Running {
			t.Fatalf("after the failure: %+v, want RUNNING with no lease holder", tk)
		}
		// The store is back; the message is delivered again at once.
		flaky.mu.Lock()
		flaky.fails = 0
		flaky.mu.Unlock()
		d.Attempt++
		if err := e.Worker.Handle(t.Context(), d); err != nil {
			t.Fatal(err)
		}
		if tk := h.task(t, tasks[0].ID); tk.Status != task.Done {
			t.Fatalf("after the redelivery: %+v, want DONE", tk)
		}
		mu.Lock()
		defer mu.Unlock()
		if n := strings.Count(logs.String(), "taken over from a stopped worker"); n != 0 {
			t.Fatalf("the redelivery took the lane over %d times, want it released:\n%s", n, logs.String())
		}
	})
}
