// A metatile rendered through the layer's source and its tiles stored.

package metatile

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/metrics"
	"tilecache/internal/source"
)

// Render renders metatile m and stores its tiles inside the grid subset (and the area of
// a plan restricted to one). A seed renders a metatile only when one of
// the plan's tiles in it is missing or stale, whatever left the metatile
// partly stored (an area seed, a truncate by geometry, the quota's
// expiry); in levels that held no tile when it was submitted it renders
// without looking. A tile older than the layer's expireCache for its
// level is stale and stored again (GeoWebCache refreshes a stale tile
// when a client asks for it; here the CDN serves tiles without asking, so
// a seed does it).
func (w *Writer) Render(ctx context.Context, m grid.Metatile) error {
	z := m.Tiles.Z
	inside, ok := m.Tiles.Intersect(w.Subset.CoverageRange(z))
	if !ok {
		return nil // nothing of it can be stored
	}
	var known map[[2]int64]storedTile // nil: nothing is stored
	if w.Mode == Seed && !slices.Contains(w.EmptyLevels, z) {
		var (
			need bool
			err  error
		)
		known, need, err = w.missing(ctx, m, inside)
		if err != nil {
			return err
		}
		if !need {
			metrics.TilesSkipped.Add(ctx, float64(m.Count()), w.Layer.Name)
			return nil
		}
	}
	w.rendered.Add(1)
	tiles, err := w.renderSource(ctx, source.Request{
		Layer: w.Layer.Name, GridSet: w.Subset.GridSet, Z: z, Tiles: m.Tiles,
		Format: w.Format, Parameters: w.Parameters, Gutter: w.Layer.Gutter,
	})
	if err != nil {
		return err
	}
	// Only the area's tiles are the request's.
	tiles = slices.DeleteFunc(tiles, func(t source.Tile) bool { return !m.InArea(t.X, t.Y) })
	changed, replaced, err := w.store(ctx, z, inside, tiles, known)
	purge := replaced
	if w.Mode == Reseed {
		purge = changed
	}
	if purge.ok {
		// Written (or, where blank now, deleted), even if only in part;
		// tiles rendered as they were stored did not change, and a seed
		// that fills a hole replaces nothing a client may hold.
		w.changed(z, purge.minX, purge.maxX)
	}
	return err
}

// missing learns what is stored of the tiles a seed stores of m (those
// inside the coverage, and the area's) from lookup's listings, and
// reports whether one of the plan's tiles of m is missing or stale.
func (w *Writer) missing(ctx context.Context, m grid.Metatile, inside grid.TileRange) (known map[[2]int64]storedTile, need bool, err error) {
	z := m.Tiles.Z
	var refs []tileRef
	for x, y := range inside.All() {
		if m.InArea(x, y) {
			refs = append(refs, tileRef{z: z, x: x, y: y, key: w.Set.Key(z, x, y)})
		}
	}
	stored, err := w.lookup(ctx, refs)
	if err != nil {
		return nil, false, err
	}
	maxAge, expires := w.Layer.CacheExpiry(z)
	known = make(map[[2]int64]storedTile, len(refs))
	for i, r := range refs {
		st := stored[i]
		st.stale = st.size >= 0 && expires && !st.modified.IsZero() && time.Since(st.modified) > maxAge
		known[[2]int64{r.x, r.y}] = st
		if m.Has(r.x, r.y) && (st.size < 0 || st.stale) {
			need = true
		}
	}
	return known, need, nil
}

// RenderTiles renders the tiles of r (one request to the source, parallel
// the decoding parallelism it may use) without storing them, as Render
// does.
func (w *Writer) RenderTiles(ctx context.Context, r grid.TileRange, parallel int) ([]source.Tile, error) {
	w.rendered.Add(1)
	return w.renderSource(ctx, source.Request{
		Layer: w.Layer.Name, GridSet: w.Subset.GridSet, Z: r.Z, Tiles: r,
		Format: w.Format, Parameters: w.Parameters, Gutter: w.Layer.Gutter, Parallel: parallel,
	})
}

// renderSource calls the writer's source. A panic in it (a decoder on a
// strange input) fails this metatile like any source error, logged with
// its stack, and never takes the process down.
func (w *Writer) renderSource(ctx context.Context, req source.Request) (tiles []source.Tile, err error) {
	defer func() {
		if r := recover(); r != nil {
			w.Log.Error("source panicked: metatile failed", "layer", req.Layer, "z", req.Z, "x", req.Tiles.MinX, "y", req.Tiles.MinY,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			tiles, err = nil, fmt.Errorf("render z%d metatile at %d,%d: source panicked: %v", req.Z, req.Tiles.MinX, req.Tiles.MinY, r)
		}
	}()
	metrics.MetatilesRendered.Add(ctx, 1, w.Layer.Name, w.By)
	return w.Source.Render(ctx, req)
}

// StorageError marks a failure of the tile store (as opposed to the
// source): a lane never counts it as a tile failure or skips it, but stops
// without checkpointing so that its message is delivered again, and
// nothing is lost while the store is unreachable.
type StorageError struct{ err error }

func (e *StorageError) Error() string { return e.err.Error() }

func (e *StorageError) Unwrap() error { return e.err }

func storageErr(format string, args ...any) error {
	return &StorageError{fmt.Errorf(format, args...)}
}
