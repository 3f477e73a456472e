package seed_test

// A seed keeps the definition of its layer it started with: a layer
// changed (through the configuration store) after a request was made does
// not change how that request's lanes render; the next request uses the
// new definition.

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/seed"
	"tilecache/internal/source"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

const storeLayers = `
layers:
  - name: lane:test
    managedBy: store
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern}
`

// workQueue works the queue's lane messages one by one until none is
// left (at most 100).
func workQueue(t *testing.T, e *seed.Engine, q *memqueue.Queue) {
	t.Helper()
	for range 100 {
		ds, err := q.Receive(t.Context(), 1, 50*time.Millisecond, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			return
		}
		if err := e.Worker.Handle(t.Context(), ds[0]); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("more than 100 lane messages")
}

func TestSeedKeepsItsDefinition(t *testing.T) {
	ts, fs, _ := openStores(t, storeLayers)
	log := slog.New(slog.DiscardHandler)
	reg, err := layer.OpenRegistry(t.Context(), []byte(storeLayers), "test", ts, time.Hour, log)
	if err != nil {
		t.Fatal(err)
	}
	// The source records the metatile size of every render, by the
	// definition (layer version) it was built for.
	var mu sync.Mutex
	renders := map[string][]int64{}
	sourceOf := func(l *layer.Layer) (source.Source, error) {
		version := l.Version
		return &fakeSource{render: func(_ context.Context, req source.Request) ([]source.Tile, error) {
			mu.Lock()
			renders[version] = append(renders[version], req.Tiles.Count())
			mu.Unlock()
			return tilesOf(req), nil
		}}, nil
	}
	q := memqueue.New()
	e := seed.New(reg.Catalogue(), nil, ts, q, fs, seed.Options{SourceOf: sourceOf, Usage: ts}, log)
	submit := func() []task.Task {
		t.Helper()
		tasks, err := e.Control.Submit(t.Context(), gwc.SeedRequest{Layer: "lane:test", GridSetID: "EPSG:4326", HasGridSetID: true,
			ZoomStart: ptr(0), ZoomStop: ptr(2), Format: "image/png", Type: "reseed", ThreadCount: ptr(1)})
		if err != nil {
			t.Fatal(err)
		}
		return tasks
	}
	work := func() { t.Helper(); workQueue(t, e, q) }
	first, _ := reg.Catalogue().Layer("lane:test")
	firstTasks := submit()

	// The layer changes to 2×2 metatiles before any lane ran.
	if _, err := reg.Update(t.Context(), func(doc *layer.Config, _ *layer.Catalogue) error {
		_, err := doc.PutLayer("lane:test", []byte("name: lane:test\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nmetatiling: [2, 2]\nsource: {type: testpattern}\n"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	second, _ := reg.Catalogue().Layer("lane:test")
	if second.Version == first.Version || second.MetaWidth != 2 {
		t.Fatalf("the change did not take: %+v", second)
	}
	work()
	tk, err := ts.Get(t.Context(), firstTasks[0].ID)
	if err != nil || tk.Status != task.Done || tk.Done != 42 {
		t.Fatalf("the first request's task: %+v %v, want DONE with 42 tiles", tk, err)
	}
	mu.Lock()
	old, now := renders[first.Version], renders[second.Version]
	mu.Unlock()
	if len(old) != 42 || len(now) != 0 {
		t.Errorf("the first request rendered %d metatiles by the old definition and %d by the new, want 42 one-tile metatiles, 0", len(old), len(now))
	}

	// The next request renders with the new definition: 2×2 metatiles.
	submit()
	work()
	mu.Lock()
	now = renders[second.Version]
	mu.Unlock()
	var tiles int64
	for _, n := range now {
		tiles += n
	}
	if tiles != 42 || len(now) >= 42 {
		t.Errorf("the second request rendered %d tiles in %d metatiles, want 42 tiles in 2×2 metatiles", tiles, len(now))
	}
}

// TestSeedRendersStaleTiles: a seed renders again the tiles older than
// the layer's expireCache for their level, rewrites them (their age
// starts again, unchanged content or not) and keeps the usage exact; fresh
// tiles and levels whose rule is 0 are skipped.
func TestSeedRendersStaleTiles(t *testing.T) {
	const layers = `
layers:
  - name: lane:test
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [1, 1]
    expireCacheList:
      - {minZoom: 0, expiration: 3600}
      - {minZoom: 1, expiration: 0}
      - {minZoom: 2, expiration: 3600}
    source: {type: testpattern}
`
	ts, fs, cat := openStores(t, layers)
	var mu sync.Mutex
	var rendered []int
	src := &fakeSource{render: func(_ context.Context, req source.Request) ([]source.Tile, error) {
		mu.Lock()
		rendered = append(rendered, req.Z)
		mu.Unlock()
		return tilesOf(req), nil
	}}
	q := memqueue.New()
	e := seed.New(cat, map[string]source.Source{"lane:test": src}, ts, q, fs, seed.Options{Usage: ts}, slog.New(slog.DiscardHandler))
	seedOnce := func() {
		t.Helper()
		if _, err := e.Control.Submit(t.Context(), gwc.SeedRequest{Layer: "lane:test", GridSetID: "EPSG:4326", HasGridSetID: true,
			ZoomStart: ptr(0), ZoomStop: ptr(2), Format: "image/png", Type: "seed", ThreadCount: ptr(1)}); err != nil {
			t.Fatal(err)
		}
		workQueue(t, e, q)
	}
	usage := func() (int64, int64) {
		t.Helper()
		ls, err := ts.Layers(t.Context())
		if err != nil || len(ls) != 1 {
			t.Fatalf("usage: %+v, %v", ls, err)
		}
		return ls[0].Tiles, ls[0].Bytes
	}
	seedOnce()
	if len(rendered) != 42 {
		t.Fatalf("first seed rendered %d metatiles, want 42", len(rendered))
	}
	tiles0, bytes0 := usage()

	// Every tile two hours old: levels 0 and 2 are stale, level 1 never.
	old := time.Now().Add(-2 * time.Hour)
	err := fs.List(t.Context(), "lane:test/", func(o tilestore.Object) error {
		return os.Chtimes(filepath.Join(fs.Root(), filepath.FromSlash(o.Key)), old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	rendered = nil
	seedOnce()
	slices.Sort(rendered)
	if want := append(slices.Repeat([]int{0}, 2), slices.Repeat([]int{2}, 32)...); !slices.Equal(rendered, want) {
		t.Errorf("the second seed rendered levels %v, want the 2 tiles of level 0 and the 32 of level 2", rendered)
	}
	fresh := 0
	fs.List(t.Context(), "lane:test/", func(o tilestore.Object) error {
		if time.Since(o.Modified) < time.Hour {
			fresh++
		}
		return nil
	})
	if fresh != 34 {
		t.Errorf("%d tiles rewritten, want the 34 stale ones", fresh)
	}
	if n, b := usage(); n != tiles0 || b != bytes0 {
		t.Errorf("usage after the refresh: %d tiles, %d bytes; want %d, %d as before", n, b, tiles0, bytes0)
	}

	// Fresh now: a third seed renders nothing.
	rendered = nil
	seedOnce()
	if len(rendered) != 0 {
		t.Errorf("a seed of fresh tiles rendered %d metatiles", len(rendered))
	}
}
