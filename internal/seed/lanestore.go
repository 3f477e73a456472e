// A lane's writes: the rendered tiles stored (usage counted), tiles
// dropped, and truncate batches deleted.

package seed

import (
	"context"
	"fmt"
	"sync"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/metrics"
	"tilecache/internal/source"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"

	"golang.org/x/sync/errgroup"
)

// tileRef is a tile to delete.
type tileRef struct {
	z    int
	x, y int64
	key  string
}

// truncateKeys appends the tiles of a metatile that can exist.
func (ln *lane) truncateKeys(m grid.Metatile, refs []tileRef) []tileRef {
	r, ok := m.Tiles.Intersect(ln.subset.CoverageRange(m.Tiles.Z))
	if !ok {
		return refs
	}
	for x, y := range m.All() {
		if r.Contains(x, y) {
			refs = append(refs, tileRef{z: r.Z, x: x, y: y, key: ln.set.Key(r.Z, x, y)})
			ln.tally.touch(r.Z, x, y)
		}
	}
	return refs
}

// truncate deletes a batch of tiles. When usage is counted, each tile's
// size is learnt first (absent tiles count nothing): see lookup.
func (ln *lane) truncate(ctx context.Context, refs []tileRef) error {
	ctx = writeContext(ctx)
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.key
	}
	if ln.tally.on {
		stored, err := ln.lookup(ctx, refs)
		if err != nil {
			return err
		}
		for i, r := range refs {
			if stored[i].size >= 0 {
				ln.tally.deleted(r.z, r.x, r.y, stored[i].size)
			}
		}
	}
	ln.tally.markTouched()
	err := ln.retryWrite(ctx, "delete", func() error {
		_, err := ln.env.tiles.Delete(ctx, keys)
		return err
	})
	// Even a failed batch may have deleted some of its tiles.
	for z, cols := range columns(refs) {
		ln.env.host.tilesChanged(ln.set, z, cols[0], cols[1])
	}
	if err != nil {
		return fmt.Errorf("delete %d tiles: %w", len(keys), err)
	}
	metrics.TilesDeleted.Add(float64(len(keys)), ln.layer.Name)
	return nil
}

// truncateBatch is the most tiles a truncate deletes between checkpoints:
// several DeleteBatch requests, which the store sends at once (a lane
// deleting one request's keys at a time waits on each in turn).
const truncateBatch = 4 * tilestore.DeleteBatch

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
// lane.missing, nil in a level that was empty when the seed was submitted
// (every tile is new). A reseed first learns it from the listings of
// lookup (sizes, for the usage, and MD5s). A tile whose new content is the
// stored one (same size and MD5) is not stored again, changes no usage and
// is not reported as changed, unless it is stale; it is processed all the
// same. A seed leaves a stored tile that is blank now where it is (a
// reseed, or a seed of a stale tile, deletes it). It returns the columns
// of the tiles it wrote or deleted, or tried to (a failed write may have
// been applied), for the CDN's purge: all of them, and those that
// replaced or deleted a stored tile.
func (ln *lane) store(ctx context.Context, z int, inside grid.TileRange, tiles []source.Tile, known map[[2]int64]storedTile) (changed, replaced columnSpan, err error) {
	ctx = writeContext(ctx)
	if ln.job.Type == task.Reseed && known == nil {
		var refs []tileRef
		for _, tl := range tiles {
			if inside.Contains(tl.X, tl.Y) {
				refs = append(refs, tileRef{z: z, x: tl.X, y: tl.Y, key: ln.set.Key(z, tl.X, tl.Y)})
			}
		}
		stored, err := ln.lookup(ctx, refs)
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
	g.SetLimit(ln.env.opts.PutConcurrency)
	for _, tl := range tiles {
		if !inside.Contains(tl.X, tl.Y) {
			continue
		}
		g.Go(func() error {
			key := ln.set.Key(z, tl.X, tl.Y)
			fail := func(err error) error { return storageErr("store tile %d/%d/%d: %w", z, tl.X, tl.Y, err) }
			old := absent
			if st, ok := known[[2]int64{tl.X, tl.Y}]; ok {
				old = st
			}
			if tl.Skip {
				// A blank tile the layer does not store; a reseed removes
				// the tile it would otherwise have replaced.
				metrics.TilesSkipped.Add(1, ln.layer.Name)
				if (ln.job.Type != task.Reseed && !old.stale) || old.size < 0 {
					return nil
				}
				change(tl.X, old)
				if err := ln.deleteTile(ctx, z, tl.X, tl.Y, key, old.size); err != nil {
					return fail(err)
				}
				return nil
			}
			if !old.stale && old.holds(tl.Data) {
				metrics.TilesUnchanged.Add(1, ln.layer.Name)
				ln.unchanged.Add(1)
				return nil
			}
			change(tl.X, old)
			ln.tally.markTouched()
			meta := ln.metaAt(z)
			if err := ln.retryWrite(ctx, "put", func() error { return ln.env.tiles.Put(ctx, key, tl.Data, meta) }); err != nil {
				return fail(err)
			}
			metrics.TilesStored.Add(1, ln.layer.Name)
			ln.tally.stored(z, tl.X, tl.Y, old.size, int64(len(tl.Data)))
			return nil
		})
	}
	return changed, replaced, g.Wait()
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
func (ln *lane) deleteTile(ctx context.Context, z int, x, y int64, key string, size int64) error {
	if size < 0 {
		return nil
	}
	ln.tally.deleted(z, x, y, size)
	ln.tally.markTouched()
	_, err := ln.env.tiles.Delete(ctx, []string{key})
	return err
}

// dropTile deletes one tile, counting its size when usage is counted.
func (ln *lane) dropTile(ctx context.Context, z int, x, y int64, key string) error {
	ctx = writeContext(ctx)
	if ln.tally.on {
		o, found, err := ln.env.tiles.Stat(ctx, key)
		if err != nil {
			return err
		}
		if !found {
			return nil
		}
		ln.tally.deleted(z, x, y, o.Size)
	}
	ln.tally.markTouched()
	if _, err := ln.env.tiles.Delete(ctx, []string{key}); err != nil {
		return err
	}
	return nil
}

// writeRetries is how many times a lane sends a tile write again after the
// store failed it (beyond the store client's own retries), pausing 0.5, 1
// and 2 s: a PUT of the same bytes or a DELETE is the same write again,
// and the tile is counted once, when it succeeds. A store down for longer
// stops the lane (a storage error: the message is delivered again).
const writeRetries = 3

// retryWrite runs write, again after a failure up to writeRetries times
// unless ctx ends; op names it in the store-error metric.
func (ln *lane) retryWrite(ctx context.Context, op string, write func() error) error {
	for attempt := 0; ; attempt++ {
		err := write()
		if err == nil {
			return nil
		}
		metrics.StoreErrors.Add(1, op)
		if attempt == writeRetries || ctx.Err() != nil {
			return err
		}
		ln.env.log.Warn("tile write failed, trying again", "op", op, "attempt", attempt+1, "err", err)
		sleep(ctx, time.Duration(1<<attempt)*500*time.Millisecond)
	}
}
