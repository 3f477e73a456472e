package seed_test

// A seed keeps the definition of its layer it started with: a layer
// changed (through the configuration store) after a request was made does
// not change how that request's lanes render; the next request uses the
// new definition.

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/seed"
	"tilecache/internal/source"
	"tilecache/internal/task"
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
		tasks, err := e.Submit(t.Context(), seed.Request{Layer: "lane:test", GridSetID: "EPSG:4326", HasGridSetID: true,
			ZoomStart: ptr(0), ZoomStop: ptr(2), Format: "image/png", Type: "reseed", ThreadCount: ptr(1)})
		if err != nil {
			t.Fatal(err)
		}
		return tasks
	}
	work := func() {
		t.Helper()
		for range 100 {
			ds, err := q.Receive(t.Context(), 1, 50*time.Millisecond, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 0 {
				return
			}
			if err := e.Handle(t.Context(), ds[0]); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatal("more than 100 lane messages")
	}
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
