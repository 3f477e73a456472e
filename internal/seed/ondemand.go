// Render on miss: a tile a client asks for and the store lacks is rendered
// with its whole metatile, through the lanes' own render and store code.

package seed

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Claims are short exclusive claims every process sharing the task store
// sees (implemented by the task store adapters): one process renders a
// missed metatile while the others wait for its tiles.
type Claims interface {
	// Claim takes key for owner until now+ttl; false when another owner
	// holds it and its claim has not expired.
	Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error)
	// Unclaim releases owner's claim of key (nothing if it is not owner's).
	Unclaim(ctx context.Context, key, owner string) error
}

// Miss is a tile a client asked for that the store does not hold.
type Miss struct {
	Layer      string
	GridSetID  string
	Format     string            // MIME type, one of the layer's
	Parameters map[string]string // normalised by the layer's filters
	Z          int
	X, Y       int64
}

// Rendered is a tile rendered on a miss.
type Rendered struct {
	Data []byte
	Meta tilestore.Meta
}

// ErrBlank is returned for a tile that rendered blank and that the layer
// does not store (skipBlank): answered as a missing tile, as when seeded.
var ErrBlank = apperr.New(apperr.NotFound, "blank tile: the layer stores none")

// ErrUpstreamTimeout marks a render on miss that ran out of time (504).
var ErrUpstreamTimeout = errors.New("the upstream did not answer in time")

// claimWait bounds how long a miss waits for another process's render of
// its metatile before giving up (504).
const claimWait = 90 * time.Second

// RenderMiss renders the metatile of a missing tile, stores its tiles
// (counted in the disk usage as a seed would), and returns the tile.
// Concurrent misses within one metatile render it once: in this process by
// sharing the render, across processes by a claim in the task store (a
// bounded wait; a claim whose holder died expires and is taken over).
//
// Errors: NotFound when the layer does not render on miss at that level,
// the tile is outside the layer's coverage, or it rendered blank
// (ErrBlank); Unavailable when the upstream failed (its message, bounded),
// wrapping ErrUpstreamTimeout when it ran out of time.
func (e *Engine) RenderMiss(ctx context.Context, m Miss) (Rendered, error) {
	l, ok := e.layers.Layer(m.Layer)
	if !ok {
		return Rendered{}, apperr.New(apperr.NotFound, "unknown layer %s", m.Layer)
	}
	sub, ok := l.Subset(m.GridSetID)
	if !ok || !l.HasFormat(m.Format) {
		return Rendered{}, apperr.New(apperr.NotFound, "layer %s has no grid set %s or format %s", m.Layer, m.GridSetID, m.Format)
	}
	if !l.RendersOnMiss(sub, m.Z) {
		return Rendered{}, apperr.New(apperr.NotFound, "layer %s does not render missing tiles at level %d", m.Layer, m.Z)
	}
	if !sub.CoverageRange(m.Z).Contains(m.X, m.Y) {
		return Rendered{}, apperr.New(apperr.NotFound, "tile %d/%d/%d is outside layer %s's coverage", m.Z, m.X, m.Y, m.Layer)
	}
	src, ok := e.sources[l.Name]
	if !ok {
		return Rendered{}, apperr.New(apperr.NotFound, "layer %s has no source", l.Name)
	}
	mw, mh := int64(l.MetaWidth), int64(l.MetaHeight)
	full := sub.GridSet.GridRange(m.Z)
	meta := grid.TileRange{Z: m.Z, MinX: m.X - m.X%mw, MinY: m.Y - m.Y%mh}
	meta.MaxX, meta.MaxY = min(meta.MinX+mw-1, full.MaxX), min(meta.MinY+mh-1, full.MaxY)
	set := e.tileSet(l, m.GridSetID, m.Format, tilestore.ParametersID(m.Parameters))
	// The lane of a one-metatile reseed: the lanes' render and store code,
	// with the size of each replaced tile learnt (some of the metatile's
	// tiles may be stored already).
	ln := &lane{
		e: e, layer: l, subset: sub, src: src, set: set,
		job: task.Job{Layer: l.Name, Type: task.Reseed, GridSetID: m.GridSetID, Format: m.Format,
			ParametersID: set.ParametersID, Parameters: m.Parameters, MetaWidth: l.MetaWidth, MetaHeight: l.MetaHeight},
		meta:  tilestore.Meta{ContentType: source.ContentType(m.Format), CacheControl: l.CacheControl},
		tally: newTally(set, l.Name, l.MetaWidth, l.MetaHeight),
	}
	key := set.Key(meta.Z, meta.MinX, meta.MinY) + "#" + strconv.Itoa(l.MetaWidth) + "x" + strconv.Itoa(l.MetaHeight)
	// The render is shared: it runs on its own context (one client going
	// away does not cancel it for the others), bounded like the caller's.
	v, err, _ := e.misses.Do(key, func() (any, error) {
		rctx, cancel := detached(ctx, claimWait)
		defer cancel()
		return e.renderClaimed(rctx, ln, key, meta)
	})
	if err != nil {
		return Rendered{}, err
	}
	if tiles, _ := v.(map[[2]int64]source.Tile); tiles != nil {
		tl, ok := tiles[[2]int64{m.X, m.Y}]
		switch {
		case !ok:
			return Rendered{}, apperr.New(apperr.Internal, "the metatile's render lacks tile %d/%d/%d", m.Z, m.X, m.Y)
		case tl.Skip:
			return Rendered{}, ErrBlank
		}
		return Rendered{Data: tl.Data, Meta: ln.meta}, nil
	}
	// Rendered by another process: read what it stored.
	data, md, found, err := e.tiles.Get(ctx, set.Key(m.Z, m.X, m.Y))
	switch {
	case err != nil:
		return Rendered{}, fmt.Errorf("read tile %d/%d/%d: %w", m.Z, m.X, m.Y, err)
	case !found:
		return Rendered{}, ErrBlank
	}
	return Rendered{Data: data, Meta: md}, nil
}

// detached returns a context that keeps ctx's values and deadline (at most
// limit from now) but not its cancellation.
func detached(ctx context.Context, limit time.Duration) (context.Context, context.CancelFunc) {
	d := time.Now().Add(limit)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	return context.WithDeadline(context.WithoutCancel(ctx), d)
}

// renderClaimed renders the metatile under the cross-process claim and
// returns its tiles by position, or nil when another process rendered it
// meanwhile (its tiles are in the store).
func (e *Engine) renderClaimed(ctx context.Context, ln *lane, key string, meta grid.TileRange) (any, error) {
	claims := e.opts.Claims
	owner := leaseToken()
	first := ln.set.Key(meta.Z, meta.MinX, meta.MinY)
	if claims != nil {
		for {
			ok, err := claims.Claim(ctx, key, owner, e.opts.ClaimTTL, time.Now())
			if err != nil {
				return nil, fmt.Errorf("claim metatile %s: %w", key, err)
			}
			if ok {
				break
			}
			// Another process renders it. Its claim ends once every tile
			// is stored (or it failed, or its holder died and the claim
			// expired), so only the claim says the render is over: its
			// first tile may be stored before the others. Claim again once
			// the first tile shows, or after a second.
			for range 10 {
				if err := sleepErr(ctx, 100*time.Millisecond); err != nil {
					return nil, upstreamFailed(fmt.Errorf("wait for another process's render of %s: %w", key, err))
				}
				if _, found, err := e.tiles.Stat(ctx, first); err == nil && found {
					break
				}
			}
		}
		defer func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := claims.Unclaim(uctx, key, owner); err != nil {
				e.log.Warn("release a metatile claim", "key", key, "err", err)
			}
		}()
		// Rendered by the claim's previous holder? Its claim ended after
		// it stored every tile.
		if _, found, err := e.tiles.Stat(ctx, first); err == nil && found {
			return nil, nil
		}
	}
	release, err := e.missSlot(ctx, ln.layer.Name)
	if err != nil {
		return nil, err
	}
	defer release()
	start := time.Now()
	if err := e.startUsage(ctx, ln); err != nil {
		return nil, fmt.Errorf("read the disk block size: %w", err)
	}
	ln.rendered.Add(1)
	tiles, err := ln.renderSource(ctx, source.Request{
		Layer: ln.layer.Name, GridSet: ln.subset.GridSet, Z: meta.Z, Tiles: meta,
		Format: ln.job.Format, Parameters: ln.job.Parameters, Gutter: ln.layer.Gutter, Parallel: runtime.GOMAXPROCS(0),
	})
	if err != nil {
		e.log.Warn("render on miss failed", "layer", ln.layer.Name, "z", meta.Z, "x", meta.MinX, "y", meta.MinY, "err", err)
		return nil, upstreamFailed(err)
	}
	inside, _ := meta.Intersect(ln.subset.CoverageRange(meta.Z))
	if err := ln.store(ctx, meta.Z, inside, tiles); err != nil {
		e.settle(ctx, ln, true, "")
		return nil, err
	}
	e.settle(ctx, ln, true, "") // counted now: nobody redoes these tiles
	e.afterMiss(ctx, ln, meta, inside, start)
	byPos := make(map[[2]int64]source.Tile, len(tiles))
	for _, tl := range tiles {
		byPos[[2]int64{tl.X, tl.Y}] = tl
	}
	e.log.Info("metatile rendered on a miss", "layer", ln.layer.Name, "z", meta.Z, "x", meta.MinX, "y", meta.MinY,
		"tiles", len(tiles), "took", time.Since(start).Round(time.Millisecond).String())
	return byPos, nil
}

// missSlot takes one of the layer's upstream slots for renders on miss
// (see upstreamShares), waiting while all are taken, and returns its
// release. The slots are claims in the task store, so they hold across
// processes and expire if their holder dies; without claims they hold in
// this process.
func (e *Engine) missSlot(ctx context.Context, layerName string) (release func(), err error) {
	_, n := e.upstreamShares(layerName)
	if n == 0 {
		return func() {}, nil
	}
	claims := e.opts.Claims
	if claims == nil {
		sem := e.localSlots(layerName, n)
		select {
		case sem <- struct{}{}:
			return func() { <-sem }, nil
		case <-ctx.Done():
			return nil, upstreamFailed(fmt.Errorf("wait for a render slot of layer %s: %w", layerName, ctx.Err()))
		}
	}
	owner := leaseToken()
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		for i := range n {
			key := "upstream#" + layerName + "#" + strconv.Itoa(i)
			ok, err := claims.Claim(ctx, key, owner, e.opts.ClaimTTL, time.Now())
			if err != nil {
				return nil, fmt.Errorf("claim a render slot of layer %s: %w", layerName, err)
			}
			if ok {
				return func() {
					uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
					defer cancel()
					if err := claims.Unclaim(uctx, key, owner); err != nil {
						e.log.Warn("release a render slot", "layer", layerName, "err", err)
					}
				}, nil
			}
		}
		if err := sleepErr(ctx, wait); err != nil {
			return nil, upstreamFailed(fmt.Errorf("wait for a render slot of layer %s: %w", layerName, err))
		}
	}
}

// localSlots returns the in-process semaphore of a layer's render slots.
func (e *Engine) localSlots(layerName string, n int) chan struct{} {
	e.slotsMu.Lock()
	defer e.slotsMu.Unlock()
	if e.slots == nil {
		e.slots = map[string]chan struct{}{}
	}
	sem, ok := e.slots[layerName]
	if !ok {
		sem = make(chan struct{}, n)
		e.slots[layerName] = sem
	}
	return sem
}

// afterMiss keeps the rules of tasks running beside a render on miss: a
// truncate or reseed of the layer submitted since the render began wins
// (the tiles just stored are removed, never left older than it), and a
// request of the layer still active may count some of the same tiles, so
// the layer is recounted once its tasks are done.
func (e *Engine) afterMiss(ctx context.Context, ln *lane, meta, inside grid.TileRange, start time.Time) {
	ts, err := e.tasks.List(ctx, start)
	if err != nil {
		e.markDirty(ctx, ln.layer.Name, "render on miss could not check the layer's tasks")
		return
	}
	overlap, newer := false, false
	for _, t := range ts {
		if t.Layer != ln.layer.Name {
			continue
		}
		overlap = overlap || t.Status.Active()
		newer = newer || (t.Type != task.Seed && !t.Created.Before(start))
	}
	if newer {
		for x, y := range inside.All() {
			if err := ln.dropTile(ctx, meta.Z, x, y, ln.set.Key(meta.Z, x, y)); err != nil {
				e.log.Warn("remove a tile rendered on a miss before a truncate", "layer", ln.layer.Name, "err", err)
			}
		}
		e.settle(ctx, ln, true, "")
	}
	if overlap {
		e.markDirty(ctx, ln.layer.Name, "tiles rendered on a miss while a request of the layer ran")
	}
}

// upstreamFailed makes a source failure an Unavailable error (502), or 504
// when it ran out of time, with a one-line reason that never shows the
// upstream's URL (it may carry keys).
func upstreamFailed(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return apperr.Wrap(apperr.Unavailable, fmt.Errorf("%w: %w", ErrUpstreamTimeout, err), "Upstream timed out")
	}
	reason := "Upstream failed"
	if ue, ok := errors.AsType[*upstream.Error](err); ok {
		if ue.Status != 200 {
			reason = fmt.Sprintf("Upstream failed: HTTP %d: %s", ue.Status, ue.Msg)
		} else {
			reason = "Upstream failed: " + ue.Msg
		}
	}
	return apperr.Wrap(apperr.Unavailable, err, "%s", reason)
}

func sleepErr(ctx context.Context, d time.Duration) error {
	sleep(ctx, d)
	return ctx.Err()
}
