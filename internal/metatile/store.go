// A writer's writes: the rendered tiles stored (usage counted), tiles
// dropped, and batches of tiles deleted.

package metatile

import (
	"context"
	"fmt"
	"sync"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/metrics"
	"tilecache/internal/source"

	"golang.org/x/sync/errgroup"
)

// tileRef is a tile to delete.
type tileRef struct {
	z    int
	x, y int64
	key  string
}

// QueueDeletes adds the tiles of metatile m that the request names and
// that can exist (inside the grid subset) to the batch DeletePending
// deletes.
func (w *Writer) QueueDeletes(m grid.Metatile) {
	r, ok := m.Tiles.Intersect(w.Subset.CoverageRange(m.Tiles.Z))
	if !ok {
		return
	}
	for x, y := range m.All() {
		if r.Contains(x, y) {
			w.deletes = append(w.deletes, tileRef{z: r.Z, x: x, y: y, key: w.Set.Key(r.Z, x, y)})
			w.Usage.Touch(r.Z, x, y)
		}
	}
}

// PendingDeletes returns how many tiles QueueDeletes queued that were not
// deleted yet.
func (w *Writer) PendingDeletes() int { return len(w.deletes) }

// DeletePending deletes the tiles queued (see truncate) and empties the
// queue, whatever the outcome.
func (w *Writer) DeletePending(ctx context.Context) error {
	refs := w.deletes
	w.deletes = nil
	if len(refs) == 0 {
		return nil
	}
	return w.truncate(ctx, refs)
}

// truncate deletes a batch of tiles. When usage is counted, each tile's
// size is learnt first (absent tiles count nothing): see lookup.
func (w *Writer) truncate(ctx context.Context, refs []tileRef) error {
	ctx = WriteContext(ctx)
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.key
	}
	if w.Usage.On() {
		stored, err := w.lookup(ctx, refs)
		if err != nil {
			return err
		}
		for i, r := range refs {
			if stored[i].size >= 0 {
				w.Usage.Deleted(r.z, r.x, r.y, stored[i].size)
			}
		}
	}
	w.Usage.MarkTouched()
	err := w.retryWrite(ctx, "delete", func() error {
		_, err := w.Tiles.Delete(ctx, keys)
		return err
	})
	// Even a failed batch may have deleted some of its tiles.
	for z, cols := range columns(refs) {
		w.changed(z, cols[0], cols[1])
	}
	if err != nil {
		return fmt.Errorf("delete %d tiles: %w", len(keys), err)
	}
	metrics.TilesDeleted.Add(ctx, float64(len(keys)), w.Layer.Name)
	return nil
}

// columns returns, per zoom level of refs, the first and last column.
func columns(refs []tileRef) map[int][2]int64 {
	out := map[int][2]int64{}
	for _, r := range refs {
		c, ok := out[r.z]
		if !ok {
			c = [2]int64{r.x, r.x}
		}
		out[r.z] = [2]int64{min(c[0], r.x), max(c[1], r.x)}
	}
	return out
}

// store writes the tiles inside the grid subset, PutConcurrency at a time,
// and counts them. known is what is stored of them: a seed's from
// Writer.missing, nil in a level that was empty when the seed was submitted
// (every tile is new). A reseed first learns it from the listings of
// lookup (sizes, for the usage, and MD5s). A tile whose new content is the
// stored one (same size and MD5) is not stored again, changes no usage and
// is not reported as changed, unless it is stale; it is processed all the
// same. A seed leaves a stored tile that is blank now where it is (a
// reseed, or a seed of a stale tile, deletes it). It returns the columns
// of the tiles it wrote or deleted, or tried to (a failed write may have
// been applied), for the CDN's purge: all of them, and those that
// replaced or deleted a stored tile.
func (w *Writer) store(ctx context.Context, z int, inside grid.TileRange, tiles []source.Tile, known map[[2]int64]storedTile) (changed, replaced columnSpan, err error) {
	ctx = WriteContext(ctx)
	if w.Mode == Reseed && known == nil {
		var refs []tileRef
		for _, tl := range tiles {
			if inside.Contains(tl.X, tl.Y) {
				refs = append(refs, tileRef{z: z, x: tl.X, y: tl.Y, key: w.Set.Key(z, tl.X, tl.Y)})
			}
		}
		stored, err := w.lookup(ctx, refs)
		if err != nil {
			return columnSpan{}, columnSpan{}, err
		}
		known = make(map[[2]int64]storedTile, len(refs))
		for i, r := range refs {
			known[[2]int64{r.x, r.y}] = stored[i]
		}
	}
	var mu sync.Mutex
	change := func(x int64, old storedTile) {
		mu.Lock()
		changed.add(x)
		if old.size >= 0 {
			replaced.add(x)
		}
		mu.Unlock()
	}
	// Every write started finishes (a plain group: no cancellation), and
	// the first failure is the one reported.
	var g errgroup.Group
	g.SetLimit(w.PutConcurrency)
	for _, tl := range tiles {
		if !inside.Contains(tl.X, tl.Y) {
			continue
		}
		g.Go(func() error {
			key := w.Set.Key(z, tl.X, tl.Y)
			fail := func(err error) error { return storageErr("store tile %d/%d/%d: %w", z, tl.X, tl.Y, err) }
			old := absent
			if st, ok := known[[2]int64{tl.X, tl.Y}]; ok {
				old = st
			}
			if tl.Skip {
				// A blank tile the layer does not store; a reseed removes
				// the tile it would otherwise have replaced.
				metrics.TilesSkipped.Add(ctx, 1, w.Layer.Name)
				if (w.Mode != Reseed && !old.stale) || old.size < 0 {
					return nil
				}
				change(tl.X, old)
				if err := w.deleteTile(ctx, z, tl.X, tl.Y, key, old.size); err != nil {
					return fail(err)
				}
				return nil
			}
			var same bool
			if !old.stale && old.size == int64(len(tl.Data)) {
				metrics.Stage(ctx, metrics.StageHash, func(context.Context) error { same = old.holds(tl.Data); return nil })
			}
			if same {
				metrics.TilesUnchanged.Add(ctx, 1, w.Layer.Name)
				w.unchanged.Add(1)
				return nil
			}
			change(tl.X, old)
			w.Usage.MarkTouched()
			meta := w.TileMeta(z)
			meta.ContentEncoding = tl.Encoding
			put := func(ctx context.Context) error {
				return w.retryWrite(ctx, "put", func() error { return w.Tiles.Put(ctx, key, tl.Data, meta) })
			}
			if err := metrics.Stage(ctx, metrics.StagePut, put); err != nil {
				return fail(err)
			}
			metrics.TilesStored.Add(ctx, 1, w.Layer.Name)
			w.Usage.Stored(z, tl.X, tl.Y, old.size, int64(len(tl.Data)))
			return nil
		})
	}
	return changed, replaced, g.Wait()
}

// Store stores tiles of level z inside the grid subset range inside as
// Render does, learning first what is stored of them (a reseed's, or a
// seed's that found some missing).
func (w *Writer) Store(ctx context.Context, z int, inside grid.TileRange, tiles []source.Tile) error {
	_, _, err := w.store(ctx, z, inside, tiles, nil)
	return err
}

// columnSpan is the first and last of some columns of a level (none when
// !ok).
type columnSpan struct {
	minX, maxX int64
	ok         bool
}

// add widens the span to column x.
func (c *columnSpan) add(x int64) {
	if !c.ok {
		c.minX, c.maxX, c.ok = x, x, true
		return
	}
	c.minX, c.maxX = min(c.minX, x), max(c.maxX, x)
}

// deleteTile deletes one tile whose stored size is known (−1: absent,
// nothing to do), counting it.
func (w *Writer) deleteTile(ctx context.Context, z int, x, y int64, key string, size int64) error {
	if size < 0 {
		return nil
	}
	w.Usage.Deleted(z, x, y, size)
	w.Usage.MarkTouched()
	_, err := w.Tiles.Delete(ctx, []string{key})
	return err
}

// DropTile deletes tile z/x/y of the tile set, counting its size when
// usage is counted.
func (w *Writer) DropTile(ctx context.Context, z int, x, y int64) error {
	ctx = WriteContext(ctx)
	key := w.Set.Key(z, x, y)
	if w.Usage.On() {
		o, found, err := w.Tiles.Stat(ctx, key)
		if err != nil {
			return err
		}
		if !found {
			return nil
		}
		w.Usage.Deleted(z, x, y, o.Size)
	}
	w.Usage.MarkTouched()
	if _, err := w.Tiles.Delete(ctx, []string{key}); err != nil {
		return err
	}
	return nil
}

// writeRetries is how many times a writer sends a tile write again after the
// store failed it (beyond the store client's own retries), pausing 0.5, 1
// and 2 s: a PUT of the same bytes or a DELETE is the same write again,
// and the tile is counted once, when it succeeds. A store down for longer
// stops the lane (a storage error: the message is delivered again).
const writeRetries = 3

// retryWrite runs write, again after a failure up to writeRetries times
// unless ctx ends; op names it in the store-error metric.
func (w *Writer) retryWrite(ctx context.Context, op string, write func() error) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil {
			return nil
		}
		metrics.StoreErrors.Add(ctx, 1, op)
		if attempt == writeRetries || ctx.Err() != nil {
			return err
		}
		w.Log.Warn("tile write failed, trying again", "op", op, "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(1<<attempt) * 500 * time.Millisecond):
		}
	}
}
