package seed_test

// A reseed compares each tile it renders with the stored one, from the
// listings it makes anyway, and stores (and reports to the CDN) only what
// changed: the lane against the embedded adapters with a source written
// here, in a synctest bubble.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/gwc"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/quota"
	"tilecache/internal/seed"
	"tilecache/internal/source"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// countingTiles counts the writes made through it.
type countingTiles struct {
	tilestore.Store
	puts, deletes atomic.Int64
}

func (c *countingTiles) Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error {
	c.puts.Add(1)
	return c.Store.Put(ctx, key, data, meta)
}

func (c *countingTiles) Delete(ctx context.Context, keys []string) (int, error) {
	c.deletes.Add(int64(len(keys)))
	return c.Store.Delete(ctx, keys)
}

// changeLog records the tiles reported changed, as "z/minX-maxX".
type changeLog struct {
	mu    sync.Mutex
	tiles []string
}

func (c *changeLog) TilesChanged(_ tilestore.TileSet, z int, minX, maxX int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tiles = append(c.tiles, fmt.Sprintf("%d/%d-%d", z, minX, maxX))
}

func (c *changeLog) PrefixChanged(string)  {}
func (c *changeLog) KeysChanged(...string) {}
func (c *changeLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.tiles
	c.tiles = nil
	slices.Sort(out)
	return out
}

// TestLaneReseedStoresOnlyChangedTiles: a reseed of tiles the source
// renders as they are stored makes no write, reports no change and leaves
// the usage as it was, while counting every tile as processed; after the
// source changes two tiles (one to a blank, which the layer does not
// store), the next reseed writes or deletes exactly those, reports their
// columns, and the usage follows exactly.
func TestLaneReseedStoresOnlyChangedTiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		changed := map[string][]byte{} // "z/x/y" → content, nil for a blank tile
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			tiles := tilesOf(req)
			mu.Lock()
			defer mu.Unlock()
			for i, tl := range tiles {
				if data, ok := changed[fmt.Sprintf("%d/%d/%d", req.Z, tl.X, tl.Y)]; ok {
					tiles[i].Data, tiles[i].Skip = data, data == nil
				}
			}
			return tiles, nil
		}}
		ts, fs, cat := openStores(t, laneLayers)
		tiles := &countingTiles{Store: fs}
		changes := &changeLog{}
		q := memqueue.New()
		e := seed.New(cat, map[string]source.Source{"lane:test": src}, ts, q, tiles,
			seed.Options{Usage: ts, Changes: changes}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		h := &harness{e: e, tasks: ts, q: q, tiles: fs, src: src}
		run := func(typ string) []task.Task {
			t.Helper()
			tasks, err := e.Control.Submit(t.Context(), gwc.SeedRequest{Layer: "lane:test", GridSetID: "EPSG:4326", HasGridSetID: true,
				ZoomStart: ptr(0), ZoomStop: ptr(2), Format: "image/png", Type: typ, ThreadCount: ptr(2)})
			if err != nil {
				t.Fatal(err)
			}
			for {
				ds, _ := q.Receive(t.Context(), 1, 0, time.Hour)
				if len(ds) == 0 {
					break
				}
				if err := e.Worker.Work(t.Context(), ds[0].Message, ds[0].Attempt); err != nil {
					t.Fatal(err)
				}
			}
			for i, tk := range tasks {
				tasks[i] = h.task(t, tk.ID)
			}
			return tasks
		}
		// objects returns the stored objects by key.
		objects := func() map[string]tilestore.Object {
			t.Helper()
			out := map[string]tilestore.Object{}
			if err := fs.List(t.Context(), "lane:test/", func(o tilestore.Object) error { out[o.Key] = o; return nil }); err != nil {
				t.Fatal(err)
			}
			return out
		}
		usage := func() quota.LayerUsage {
			t.Helper()
			ls, err := ts.Layers(t.Context())
			if err != nil || len(ls) != 1 {
				t.Fatalf("usage: %+v, %v; want one layer", ls, err)
			}
			return ls[0]
		}
		// wantExact checks the usage against the stored objects.
		wantExact := func(step string) {
			t.Helper()
			cfg, err := ts.QuotaConfig(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var n, bytes int64
			for _, o := range objects() {
				n, bytes = n+1, bytes+quota.Blocks(o.Size, cfg.DiskBlockSize)
			}
			if u := usage(); u.Tiles != n || u.Bytes != bytes || u.Dirty {
				t.Errorf("%s: usage %+v, want %d tiles, %d bytes counted exactly", step, u, n, bytes)
			}
		}
		wantDone := func(step string, tasks []task.Task) {
			t.Helper()
			for _, tk := range tasks {
				if tk.Status != task.Done || tk.Done != tk.Total {
					t.Errorf("%s: task %d: %v with %d of %d tiles processed, want DONE with all", step, tk.ID, tk.Status, tk.Done, tk.Total)
				}
			}
		}

		wantDone("seed", run("seed"))
		const all = 2 + 8 + 32
		if n := tiles.puts.Load(); n != all {
			t.Fatalf("seed: %d PUTs, want %d", n, all)
		}
		seeded, before := objects(), usage()
		wantExact("seed")
		changes.take()

		// The same content again: nothing written, nothing changed.
		tiles.puts.Store(0)
		wantDone("unchanged reseed", run("reseed"))
		if n, d := tiles.puts.Load(), tiles.deletes.Load(); n != 0 || d != 0 {
			t.Errorf("unchanged reseed: %d PUTs, %d deletes, want none", n, d)
		}
		if got := changes.take(); len(got) != 0 {
			t.Errorf("unchanged reseed: changes reported %q, want none", got)
		}
		for k, o := range objects() {
			if s := seeded[k]; !o.Modified.Equal(s.Modified) || o.MD5 != s.MD5 || o.MD5 == "" {
				t.Errorf("unchanged reseed: %s is %+v, was %+v", k, o, s)
			}
		}
		if u := usage(); u.Tiles != before.Tiles || u.Bytes != before.Bytes || u.Version != before.Version || u.Dirty {
			t.Errorf("unchanged reseed: usage %+v, was %+v", u, before)
		}

		// The source changes a tile of level 2 (to a bigger one: another
		// block) and blanks one of level 1.
		mu.Lock()
		changed["2/5/3"] = make([]byte, 5000)
		changed["1/2/1"] = nil
		mu.Unlock()
		wantDone("reseed after a change", run("reseed"))
		if n, d := tiles.puts.Load(), tiles.deletes.Load(); n != 1 || d != 1 {
			t.Errorf("reseed after a change: %d PUTs, %d deletes, want 1 and 1", n, d)
		}
		if got, want := changes.take(), []string{"1/2-2", "2/5-5"}; !slices.Equal(got, want) {
			t.Errorf("reseed after a change: changes reported %q, want %q", got, want)
		}
		after := objects()
		for k, s := range seeded {
			o, ok := after[k]
			switch k {
			case "lane:test/EPSG:4326/png/default/1/2/1.png":
				if ok {
					t.Errorf("the blank tile %s is still stored", k)
				}
			case "lane:test/EPSG:4326/png/default/2/5/3.png":
				if o.Size != 5000 || o.MD5 == s.MD5 {
					t.Errorf("the changed tile %s is %+v, want 5000 bytes stored again", k, o)
				}
			default:
				if !o.Modified.Equal(s.Modified) {
					t.Errorf("reseed after a change: %s was written again", k)
				}
			}
		}
		wantExact("reseed after a change")
	})
}
