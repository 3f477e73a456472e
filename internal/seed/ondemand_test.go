package seed_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/seed"
	"tilecache/internal/source"
	"tilecache/internal/task/boltstore"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/filestore"
)

const missLayers = `
layers:
  - name: miss:test
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    source: {type: testpattern}
`

// slowRest stores the tile whose key ends in first at once and every other
// tile half a second later, as a store under load may: another process
// sees the first tile of a metatile well before the rest.
type slowRest struct {
	tilestore.Store
	first string
}

func (s slowRest) Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error {
	if !strings.HasSuffix(key, s.first) {
		time.Sleep(500 * time.Millisecond)
	}
	return s.Store.Put(ctx, key, data, meta)
}

// TestRenderMissAcrossProcessesWaitsForTheWholeMetatile: two engines (two
// processes) sharing a task store and a tile store miss tiles of one
// metatile; the second waits for the first's claim to end, not for its
// first tile, and answers its own tile from the store: one render, both
// tiles found.
func TestRenderMissAcrossProcessesWaitsForTheWholeMetatile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cat, err := layer.Parse([]byte(missLayers), "test")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		ts, err := boltstore.Open(filepath.Join(dir, "tasks.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer ts.Close()
		fs, err := filestore.New(filepath.Join(dir, "tiles"))
		if err != nil {
			t.Fatal(err)
		}
		var renders atomic.Int64
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			renders.Add(1)
			if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
				return nil, err
			}
			return tilesOf(req), nil
		}}
		store := slowRest{Store: fs, first: "/2/0/0.png"}
		engines := make([]*seed.Engine, 2)
		for i := range engines {
			engines[i] = seed.New(cat, map[string]source.Source{"miss:test": src}, ts, memqueue.New(), store,
				seed.Options{Usage: ts, Claims: ts}, slog.New(slog.DiscardHandler))
		}
		var wg sync.WaitGroup
		for i, xy := range [][2]int64{{0, 0}, {3, 3}} {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 50 * time.Millisecond) // the first engine claims first
				rd, err := engines[i].RenderMiss(t.Context(), seed.Miss{Layer: "miss:test", GridSetID: "EPSG:4326",
					Format: "image/png", Z: 2, X: xy[0], Y: xy[1]})
				if want := fmt.Sprintf("tile 2/%d/%d", xy[0], xy[1]); err != nil || string(rd.Data) != want {
					t.Errorf("engine %d, tile 2/%d/%d: got %q, %v; want %q", i+1, xy[0], xy[1], rd.Data, err, want)
				}
			})
		}
		wg.Wait()
		if n := renders.Load(); n != 1 {
			t.Errorf("%d renders of one metatile, want 1", n)
		}
	})
}
