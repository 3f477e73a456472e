// A lane's renders: a metatile through the layer's source, with the job's
// retries and the invocation's time budget.

package seed

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/metrics"
	"tilecache/internal/source"
	"tilecache/internal/task"
)

// renderAll renders metas at once (the first in this goroutine) and
// returns their outcomes by position.
func (ln *lane) renderAll(ctx context.Context, metas []grid.Metatile) []error {
	errs := make([]error, len(metas))
	var wg sync.WaitGroup
	for i := 1; i < len(metas); i++ {
		wg.Go(func() { errs[i] = ln.renderWithRetries(ctx, metas[i]) })
	}
	errs[0] = ln.renderWithRetries(ctx, metas[0])
	wg.Wait()
	return errs
}

// renderWithRetries works one seed/reseed metatile, retrying per the job's
// failure settings.
func (ln *lane) renderWithRetries(ctx context.Context, m grid.Metatile) error {
	rctx := ctx
	if !ln.hard.IsZero() {
		var cancel context.CancelFunc
		rctx, cancel = context.WithDeadlineCause(ctx, ln.hard, errRenderBudget)
		defer cancel()
	}
	// outOfTime: the budget, not the lane, ended the render; a tile
	// failure like any other (never a storage error to redeliver).
	outOfTime := func() error {
		r := m.Tiles
		return fmt.Errorf("render z%d metatile at %d,%d: %w", r.Z, r.MinX, r.MinY, errRenderBudget)
	}
	tries := 1 + max(ln.job.RetryCount, 0)
	var err error
	for try := range tries {
		if try > 0 {
			select {
			case <-rctx.Done():
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return outOfTime()
			case <-time.After(time.Duration(ln.job.RetryWaitMS) * time.Millisecond):
			}
		}
		err = ln.render(rctx, m)
		switch {
		case err == nil || ctx.Err() != nil:
			return err
		case rctx.Err() != nil:
			return outOfTime()
		}
		ln.env.log.Warn("tile failure", "job", ln.job.ID, "layer", ln.job.Layer, "z", m.Tiles.Z,
			"x", m.Tiles.MinX, "y", m.Tiles.MinY, "try", try+1, "err", err)
	}
	return err
}

// render stores a metatile's tiles inside the grid subset (and the area of
// a plan restricted to one). A seed renders a metatile only when one of
// the plan's tiles in it is missing or stale, whatever left the metatile
// partly stored (an area seed, a truncate by geometry, the quota's
// expiry); in levels that held no tile when it was submitted it renders
// without looking. A tile older than the layer's expireCache for its
// level is stale and stored again (GeoWebCache refreshes a stale tile
// when a client asks for it; here the CDN serves tiles without asking, so
// a seed does it).
func (ln *lane) render(ctx context.Context, m grid.Metatile) error {
	z := m.Tiles.Z
	inside, ok := m.Tiles.Intersect(ln.subset.CoverageRange(z))
	if !ok {
		return nil // nothing of it can be stored
	}
	var known map[[2]int64]storedTile // nil: nothing is stored
	if ln.job.Type == task.Seed && !slices.Contains(ln.job.EmptyLevels, z) {
		var (
			need bool
			err  error
		)
		known, need, err = ln.missing(ctx, m, inside)
		if err != nil {
			return err
		}
		if !need {
			metrics.TilesSkipped.Add(float64(m.Count()), ln.layer.Name)
			return nil
		}
	}
	ln.rendered.Add(1)
	tiles, err := ln.renderSource(ctx, source.Request{
		Layer: ln.layer.Name, GridSet: ln.subset.GridSet, Z: z, Tiles: m.Tiles,
		Format: ln.job.Format, Parameters: ln.job.Parameters, Gutter: ln.layer.Gutter,
	})
	if err != nil {
		return err
	}
	// Only the area's tiles are the request's.
	tiles = slices.DeleteFunc(tiles, func(t source.Tile) bool { return !m.InArea(t.X, t.Y) })
	changed, replaced, err := ln.store(ctx, z, inside, tiles, known)
	if ln.job.Type == task.Reseed {
		changed, replaced = columnSpan{}, changed
	}
	if replaced.ok {
		// Written (or, where blank now, deleted), even if only in part;
		// tiles rendered as they were stored did not change, and a seed
		// that fills a hole replaces nothing a client may hold.
		ln.env.host.tilesChanged(ln.set, z, replaced.minX, replaced.maxX)
	}
	return err
}

// missing learns what is stored of the tiles a seed stores of m (those
// inside the coverage, and the area's) from lookup's listings, and
// reports whether one of the plan's tiles of m is missing or stale.
func (ln *lane) missing(ctx context.Context, m grid.Metatile, inside grid.TileRange) (known map[[2]int64]storedTile, need bool, err error) {
	z := m.Tiles.Z
	var refs []tileRef
	for x, y := range inside.All() {
		if m.InArea(x, y) {
			refs = append(refs, tileRef{z: z, x: x, y: y, key: ln.set.Key(z, x, y)})
		}
	}
	stored, err := ln.lookup(ctx, refs)
	if err != nil {
		return nil, false, err
	}
	maxAge, expires := ln.layer.CacheExpiry(z)
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

// renderSource calls the lane's source. A panic in it (a decoder on a
// strange input) fails this metatile like any source error, logged with
// its stack, and never takes the process down.
func (ln *lane) renderSource(ctx context.Context, req source.Request) (tiles []source.Tile, err error) {
	defer func() {
		if r := recover(); r != nil {
			ln.env.log.Error("source panicked: metatile failed", "layer", req.Layer, "z", req.Z, "x", req.Tiles.MinX, "y", req.Tiles.MinY,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			tiles, err = nil, fmt.Errorf("render z%d metatile at %d,%d: source panicked: %v", req.Z, req.Tiles.MinX, req.Tiles.MinY, r)
		}
	}()
	metrics.MetatilesRendered.Add(1, ln.layer.Name, ln.by)
	return ln.src.Render(ctx, req)
}

// storageError marks a failure of the tile store (as opposed to the
// source): it is never counted as a tile failure or skipped. The lane
// stops without checkpointing and its message is delivered again, so
// nothing is lost while the store is unreachable.
type storageError struct{ err error }

func (e *storageError) Error() string { return e.err.Error() }

func (e *storageError) Unwrap() error { return e.err }

func storageErr(format string, args ...any) error {
	return &storageError{fmt.Errorf(format, args...)}
}

// errStop ends a listing early.
var errStop = errors.New("stop listing")
