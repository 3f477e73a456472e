package onmiss_test

import (
	"context"
	"errors"
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
	"tilecache/internal/onmiss"
	"tilecache/internal/source"
	"tilecache/internal/state/bolt"
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
// tile after delay (half a second on the test bubble's clock), as a store
// under load may: another process sees the first tile of a metatile well
// before the rest.
type slowRest struct {
	tilestore.Store
	first string
	delay func()
}

func (s slowRest) Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error {
	if !strings.HasSuffix(key, s.first) {
		s.delay()
	}
	return s.Store.Put(ctx, key, data, meta)
}

// TestRenderMissAcrossProcessesWaitsForTheWholeMetatile: two renderers (two
// processes) sharing a task store and a tile store miss tiles of one
// metatile; the second waits for the first's claim to end, not for its
// first tile, and answers its own tile from the store: one render, both
// tiles found.
func TestRenderMissAcrossProcessesWaitsForTheWholeMetatile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts, fs, cat := openStores(t, missLayers)
		var renders atomic.Int64
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			renders.Add(1)
			if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
				return nil, err
			}
			return tilesOf(req), nil
		}}
		store := slowRest{Store: fs, first: "/2/0/0.png", delay: func() { time.Sleep(500 * time.Millisecond) }}
		renderers := make([]*onmiss.Renderer, 2)
		for i := range renderers {
			renderers[i] = onmiss.New(cat, map[string]source.Source{"miss:test": src}, store, ts,
				onmiss.Options{Usage: ts, Claims: ts}, slog.New(slog.DiscardHandler))
		}
		var wg sync.WaitGroup
		for i, xy := range [][2]int64{{0, 0}, {3, 3}} {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 50 * time.Millisecond) // the first renderer claims first
				rd, err := renderers[i].RenderMiss(t.Context(), onmiss.Miss{Layer: "miss:test", GridSetID: "EPSG:4326",
					Format: "image/png", Z: 2, X: xy[0], Y: xy[1]})
				if want := fmt.Sprintf("tile 2/%d/%d", xy[0], xy[1]); err != nil || string(rd.Data) != want {
					t.Errorf("renderer %d, tile 2/%d/%d: got %q, %v; want %q", i+1, xy[0], xy[1], rd.Data, err, want)
				}
			})
		}
		wg.Wait()
		if n := renders.Load(); n != 1 {
			t.Errorf("%d renders of one metatile, want 1", n)
		}
	})
}

// countingClaims counts the writes (Claim) and reads (Peek) of the claims
// of a task store.
type countingClaims struct {
	onmiss.Claims
	claims, peeks atomic.Int64
}

func (c *countingClaims) Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error) {
	c.claims.Add(1)
	return c.Claims.Claim(ctx, key, owner, ttl, now)
}

func (c *countingClaims) Peek(ctx context.Context, key string, now time.Time) (string, string, time.Time, error) {
	c.peeks.Add(1)
	return c.Claims.Peek(ctx, key, now)
}

// TestRenderMissStopsBeforeTheDeadline: a render on miss whose upstream
// hangs stops 2 s before the caller's deadline (a Lambda invocation's), so
// that its claim is settled (a remembered failure, not a claim left to
// expire) and the client is answered a timeout in time.
func TestRenderMissStopsBeforeTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts, fs, cat := openStores(t, missLayers)
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}
		e := onmiss.New(cat, map[string]source.Source{"miss:test": src}, fs, ts,
			onmiss.Options{Usage: ts, Claims: ts}, slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		_, err := e.RenderMiss(ctx, onmiss.Miss{Layer: "miss:test", GridSetID: "EPSG:4326", Format: "image/png", Z: 2, X: 1, Y: 1})
		if took := time.Since(start); !errors.Is(err, onmiss.ErrUpstreamTimeout) || took != 8*time.Second {
			t.Fatalf("got %v after %v, want ErrUpstreamTimeout after 8s (2s before the deadline)", err, took)
		}
		// The claim's key is the metatile's tile key plus its size.
		owner, note, _, err := ts.Peek(t.Context(), "miss:test/EPSG:4326/png/default/2/0/0.png#4x4", time.Now())
		if err != nil || owner != "" || note != "fail timeout" {
			t.Errorf("the metatile's claim after the timeout: owner %q note %q (%v); want the remembered failure", owner, note, err)
		}
	})
}

// TestRenderMissWaitersRead: while one process renders a metatile for 3 s,
// another process's miss in it waits by reading the claim (with a growing
// pause), not by retrying the conditional write, and then answers from
// what the first stored.
func TestRenderMissWaitersRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts, fs, cat := openStores(t, missLayers)
		var renders atomic.Int64
		src := &fakeSource{render: func(ctx context.Context, req source.Request) ([]source.Tile, error) {
			renders.Add(1)
			if err := sleepCtx(ctx, 3*time.Second); err != nil {
				return nil, err
			}
			return tilesOf(req), nil
		}}
		counted := []*countingClaims{{Claims: ts}, {Claims: ts}}
		renderers := make([]*onmiss.Renderer, 2)
		for i := range renderers {
			renderers[i] = onmiss.New(cat, map[string]source.Source{"miss:test": src}, fs, ts,
				onmiss.Options{Usage: ts, Claims: counted[i]}, slog.New(slog.DiscardHandler))
		}
		var wg sync.WaitGroup
		for i, xy := range [][2]int64{{0, 0}, {1, 1}} {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 100 * time.Millisecond)
				rd, err := renderers[i].RenderMiss(t.Context(), onmiss.Miss{Layer: "miss:test", GridSetID: "EPSG:4326", Format: "image/png", Z: 2, X: xy[0], Y: xy[1]})
				if want := fmt.Sprintf("tile 2/%d/%d", xy[0], xy[1]); err != nil || string(rd.Data) != want {
					t.Errorf("renderer %d: got %q, %v; want %q", i+1, rd.Data, err, want)
				}
			})
		}
		wg.Wait()
		if renders.Load() != 1 {
			t.Errorf("%d renders, want 1", renders.Load())
		}
		if c, p := counted[1].claims.Load(), counted[1].peeks.Load(); c != 0 || p < 3 || p > 12 {
			t.Errorf("the waiting process made %d claims and %d reads in 3 s; want no claim and a few reads (backoff)", c, p)
		}
	})
}

// fakeSource renders through a function.
type fakeSource struct {
	render func(ctx context.Context, req source.Request) ([]source.Tile, error)
}

func (s *fakeSource) Render(ctx context.Context, req source.Request) ([]source.Tile, error) {
	return s.render(ctx, req)
}

// tilesOf is what a source renders for req: each tile's bytes name it.
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

// openStores opens a task store and a tile store in a temporary directory
// and parses the layers.
// state is the bbolt file's ports that render on miss uses.
type state struct {
	*bolt.Tasks
	*bolt.Usage
	*bolt.Claims
}

func openStores(t *testing.T, layers string) (state, *filestore.Store, *layer.Catalogue) {
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
	t.Cleanup(func() { db.Close() })
	ts := state{db.Tasks(), db.Usage(), db.Claims()}
	fs, err := filestore.New(filepath.Join(dir, "tiles"))
	if err != nil {
		t.Fatal(err)
	}
	return ts, fs, cat
}
