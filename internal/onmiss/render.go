// Render on miss: a tile a client asks for and the store lacks is rendered
// with its whole metatile, through the metatile writer.

package onmiss

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/metrics"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
	"tilecache/internal/token"
)

// Claims are short exclusive claims every process sharing the task store
// sees (implemented by the task store adapters): one process renders a
// missed metatile while the others wait for it, a layer's render slots are
// claims, and when a render ends its claim is replaced by a note of how it
// ended, so that no process renders the metatile again for a while.
type Claims interface {
	// Claim takes key for owner until now+ttl; false when another owner
	// holds it and its claim has not expired, or a note holds it.
	Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error)
	// Unclaim releases owner's claim of key (nothing if it is not owner's).
	Unclaim(ctx context.Context, key, owner string) error
	// Settle replaces owner's claim of key with note until until: Claims of
	// key fail and Peek tells note until then. Nothing if the claim is not
	// owner's.
	Settle(ctx context.Context, key, owner, note string, until time.Time) error
	// Note leaves note at key until until, whatever key held.
	Note(ctx context.Context, key, note string, until time.Time) error
	// Peek reads what key holds at now: the owner of a live claim, or a
	// live note (until is when it lapses); all empty when neither. A read:
	// waiting processes peek, they do not retry Claim.
	Peek(ctx context.Context, key string, now time.Time) (owner, note string, until time.Time, err error)
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

// missMargin is kept before the deadline of the request that starts a
// render on miss (a Lambda invocation's): the render stops that much
// before it, so its claim is settled and the client answered in time.
const missMargin = 2 * time.Second

// missResult is what a render on miss of a metatile gives every miss in it:
// its tiles when this process rendered it, else the outcome of another
// process's (or an earlier) render.
type missResult struct {
	tiles map[[2]int64]source.Tile
	o     outcome
}

// RenderMiss renders the metatile of a missing tile, stores its tiles
// (counted in the disk usage as a seed would), and returns the tile.
//
// What anonymous traffic can cost is bounded: concurrent misses within one
// metatile render it once (in this process by sharing the render, across
// processes by a claim in the task store that waiting processes read, not
// write); how the render ended is remembered (Options.Remember for a
// rendered metatile and its blank tiles, Options.FailureBackoff for a
// failure), so a blank or failing metatile is not rendered again meanwhile;
// a miss waits at most Options.Wait for one of the layer's render
// slots, and at most Options.Queue misses wait in a process; a render
// stops missMargin before the caller's deadline.
//
// Errors: NotFound when the layer does not render on miss at that level,
// the tile is outside the layer's coverage, or it rendered blank
// (ErrBlank); Unavailable wrapping ErrUpstreamError, ErrUpstreamNoImage or
// ErrUpstreamTimeout when the upstream failed (now or within the backoff),
// each with its fixed message; ErrBusy when no render slot was free in
// time.
//
// A layer managed at run time is looked up again after a read of the
// stored configuration's version (Options.Sync) before its metatile is
// rendered: a layer another process deleted moments ago is refused at
// once (NotFound), never written under its id while its old tiles are
// truncated. That is one small read per render on miss of such a layer;
// a miss answered from a remembered outcome makes none.
func (rn *Renderer) RenderMiss(ctx context.Context, m Miss) (Rendered, error) {
	return rn.renderMiss(ctx, m, false)
}

// renderMiss is RenderMiss, synced when the stored configuration's version
// was read for it already.
func (rn *Renderer) renderMiss(ctx context.Context, m Miss, synced bool) (Rendered, error) {
	l, ok := rn.layers.Layer(m.Layer)
	if !ok {
		return Rendered{}, apperr.New(apperr.NotFound, "unknown layer %s", m.Layer)
	}
	sub, ok := l.Subset(m.GridSetID)
	if !ok || !l.HasFormat(m.Format) {
		return Rendered{}, apperr.New(apperr.NotFound, "layer %s has no grid set %s or format %s", m.Layer, m.GridSetID, m.Format)
	}
	if !l.Enabled {
		return Rendered{}, apperr.New(apperr.NotFound, "layer %s is disabled", m.Layer)
	}
	if !l.RendersOnMiss(sub, m.Z) {
		return Rendered{}, apperr.New(apperr.NotFound, "layer %s does not render missing tiles at level %d", m.Layer, m.Z)
	}
	if !sub.CoverageRange(m.Z).Contains(m.X, m.Y) {
		return Rendered{}, apperr.New(apperr.NotFound, "tile %d/%d/%d is outside layer %s's coverage", m.Z, m.X, m.Y, m.Layer)
	}
	if cov := l.Area(sub.GridSet.ID); cov != nil && !cov.HasTile(m.Z, m.X, m.Y) {
		return Rendered{}, apperr.New(apperr.NotFound, "tile %d/%d/%d is outside layer %s's coverage geometry", m.Z, m.X, m.Y, m.Layer)
	}
	src, err := rn.sources.Source(l)
	if err != nil {
		rn.log.Error("render on miss without a source", "layer", l.Name, "err", err)
	}
	if src == nil {
		return Rendered{}, apperr.New(apperr.NotFound, "layer %s has no source", l.Name)
	}
	mw, mh := int64(l.MetaWidth), int64(l.MetaHeight)
	full := sub.GridSet.GridRange(m.Z)
	meta := grid.TileRange{Z: m.Z, MinX: m.X - m.X%mw, MinY: m.Y - m.Y%mh}
	meta.MaxX, meta.MaxY = min(meta.MinX+mw-1, full.MaxX), min(meta.MinY+mh-1, full.MaxY)
	set := metatile.TileSet(rn.opts.KeyPrefix, l, m.GridSetID, m.Format, tilestore.ParametersID(m.Parameters))
	key := set.Key(meta.Z, meta.MinX, meta.MinY) + "#" + strconv.Itoa(l.MetaWidth) + "x" + strconv.Itoa(l.MetaHeight)
	bit := int((m.Y-meta.MinY)*mw + (m.X - meta.MinX))
	count := func(outcome string) { metrics.Misses.Add(ctx, 1, l.Name, outcome) }

	if o, ok := rn.memo.recall(key, rn.opts.Now()); ok {
		rd, err, done := rn.answerOutcome(ctx, o, bit, set, m)
		if done {
			count(outcomeLabel(o, bit))
			return rd, err
		}
		rn.memo.forget(key) // rendered, and the tile is gone since: render again
	}
	if !synced && l.Managed == layer.ManagedByStore && rn.opts.Sync != nil {
		if err := rn.opts.Sync(ctx); err != nil {
			return Rendered{}, fmt.Errorf("read the layer configuration before a render on miss of layer %s: %w", m.Layer, err)
		}
		if cur, _ := rn.layers.Layer(m.Layer); cur != l {
			// Deleted (NotFound) or changed since this process last read it.
			return rn.renderMiss(ctx, m, true)
		}
	}
	if rn.waiting.Add(1) > int64(rn.opts.Queue) {
		rn.waiting.Add(-1)
		count("busy")
		return Rendered{}, ErrBusy
	}
	defer rn.waiting.Add(-1)
	// Twice at most: a remembered render whose tile is gone since (a
	// truncation) is forgotten and rendered again once.
	for range 2 {
		w := rn.missWriter(l, sub, src, set, m, meta)
		// The render is shared: it runs on its own context (one client
		// going away does not cancel it for the others), bounded like the
		// caller's.
		v, err, _ := rn.misses.Do(key, func() (any, error) {
			rctx, cancel := rn.missContext(ctx)
			defer cancel()
			return rn.renderClaimed(rctx, w, key, meta)
		})
		if err != nil {
			switch {
			case errors.Is(err, ErrBusy):
				count("busy")
			case apperr.Is(err, apperr.Unavailable):
				count("failed")
			}
			return Rendered{}, err
		}
		res := v.(missResult)
		if res.tiles != nil {
			count("rendered")
			tl, ok := res.tiles[[2]int64{m.X, m.Y}]
			switch {
			case !ok:
				return Rendered{}, apperr.New(apperr.Internal, "the metatile's render lacks tile %d/%d/%d", m.Z, m.X, m.Y)
			case tl.Skip:
				return Rendered{}, ErrBlank
			}
			meta := w.TileMeta(m.Z)
			meta.ContentEncoding = tl.Encoding
			return Rendered{Data: tl.Data, Meta: meta}, nil
		}
		if rd, err, done := rn.answerOutcome(ctx, res.o, bit, set, m); done {
			count(outcomeLabel(res.o, bit))
			return rd, err
		}
		rn.forgetOutcome(ctx, key)
	}
	return Rendered{}, ErrBusy
}

// missWriter is the writer of a render on miss of metatile meta: a
// reseed's (some of the metatile's tiles may be stored already: what is
// stored of them is learnt, and a tile rendered as stored is not written
// again), counting its usage itself.
func (rn *Renderer) missWriter(l *layer.Layer, sub *grid.Subset, src source.Source, set tilestore.TileSet, m Miss, meta grid.TileRange) *metatile.Writer {
	return &metatile.Writer{
		Tiles: rn.tiles, Log: rn.log, PutConcurrency: rn.opts.PutConcurrency,
		Layer: l, Subset: sub, Set: set, Source: src, Format: m.Format, Parameters: m.Parameters,
		Mode: metatile.Reseed, By: "miss",
		Ahead: func(z int) (grid.TileRange, bool) { return meta, z == meta.Z },
		Usage: metatile.NewTally(set, l.MetaWidth, l.MetaHeight),
	}
}

// outcomeLabel is the metrics label of a miss answered from how a render
// of its metatile ended (see answerOutcome).
func outcomeLabel(o outcome, bit int) string {
	switch {
	case o.failed != "":
		return "remembered_failure"
	case o.isBlank(bit):
		return "remembered_blank"
	}
	return "stored" // rendered by another process (or request) meanwhile
}

// answerOutcome answers a miss of the tile at bit of a metatile from how
// its render ended: the failure, ErrBlank, or the tile as stored. done is
// false when the render stored the tile and it is gone since.
func (rn *Renderer) answerOutcome(ctx context.Context, o outcome, bit int, set tilestore.TileSet, m Miss) (rd Rendered, err error, done bool) {
	switch {
	case o.failed != "":
		return Rendered{}, failure(o.failed, nil), true
	case o.isBlank(bit):
		return Rendered{}, ErrBlank, true
	}
	data, md, found, err := rn.tiles.Get(ctx, set.Key(m.Z, m.X, m.Y))
	switch {
	case err != nil:
		return Rendered{}, fmt.Errorf("read tile %d/%d/%d: %w", m.Z, m.X, m.Y, err), true
	case !found:
		return Rendered{}, nil, false
	}
	return Rendered{Data: data, Meta: md}, nil, true
}

// forgetOutcome drops the remembered outcome of a metatile, here and in
// the task store, so that the next miss renders it.
func (rn *Renderer) forgetOutcome(ctx context.Context, key string) {
	rn.memo.forget(key)
	if rn.opts.Claims == nil {
		return
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := rn.opts.Claims.Note(uctx, key, "", rn.opts.Now()); err != nil {
		rn.log.Warn("forget a render's outcome", "key", key, "err", err)
	}
}

// missContext is the context of a render on miss: ctx's values without
// its cancellation, ending after MissTimeout (and within the claim's TTL)
// or missMargin before ctx's deadline, whichever is first.
func (rn *Renderer) missContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := min(rn.opts.Timeout, max(rn.opts.ClaimTTL-missMargin, time.Second))
	d := time.Now().Add(budget)
	if cd, ok := ctx.Deadline(); ok && cd.Add(-missMargin).Before(d) {
		d = cd.Add(-missMargin)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), d)
}

// renderClaimed renders the metatile under the cross-process claim and
// returns its tiles by position, or the outcome of a render another
// process did (or is remembered to have done).
func (rn *Renderer) renderClaimed(ctx context.Context, w *metatile.Writer, key string, meta grid.TileRange) (missResult, error) {
	claims := rn.opts.Claims
	owner := token.New()
	settled := false
	if claims != nil {
		o, found, err := rn.awaitRender(ctx, key, owner)
		if err != nil || found {
			return missResult{o: o}, err
		}
		defer func() {
			if settled {
				return
			}
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := claims.Unclaim(uctx, key, owner); err != nil {
				rn.log.Warn("release a metatile claim", "key", key, "err", err)
			}
		}()
	}
	release, err := rn.missSlot(ctx, w.Layer, w.Source)
	if err != nil {
		return missResult{}, err
	}
	defer release()
	start := time.Now()
	if err := rn.accounts.Start(ctx, w.Usage); err != nil {
		return missResult{}, fmt.Errorf("read the disk block size: %w", err)
	}
	tiles, err := w.RenderTiles(ctx, meta, runtime.GOMAXPROCS(0))
	if err != nil {
		kind := failKind(err)
		rn.log.Warn("render on miss failed", "layer", w.Layer.Name, "z", meta.Z, "x", meta.MinX, "y", meta.MinY, "kind", kind, "err", err)
		settled = rn.settleRender(ctx, key, owner, outcome{failed: kind}, rn.opts.FailureBackoff)
		return missResult{}, failure(kind, err)
	}
	inside, _ := meta.Intersect(w.Subset.CoverageRange(meta.Z))
	if err := w.Store(ctx, meta.Z, inside, tiles); err != nil {
		rn.accounts.Settle(ctx, w.Usage, w.Layer.Name, 0, true, "")
		return missResult{}, err
	}
	rn.accounts.Settle(ctx, w.Usage, w.Layer.Name, 0, true, "") // counted now: nobody redoes these tiles
	rn.afterMiss(ctx, w, meta, inside, start)
	blank := make([]byte, (w.Layer.MetaWidth*w.Layer.MetaHeight+7)/8)
	byPos := make(map[[2]int64]source.Tile, len(tiles))
	for _, tl := range tiles {
		byPos[[2]int64{tl.X, tl.Y}] = tl
		if tl.Skip {
			setBit(blank, int((tl.Y-meta.MinY)*int64(w.Layer.MetaWidth)+(tl.X-meta.MinX)))
		}
	}
	settled = rn.settleRender(ctx, key, owner, outcome{blank: blank}, rn.opts.Remember)
	rn.log.Info("metatile rendered on a miss", "layer", w.Layer.Name, "z", meta.Z, "x", meta.MinX, "y", meta.MinY,
		"tiles", len(tiles), "took", time.Since(start).Round(time.Millisecond).String())
	return missResult{tiles: byPos}, nil
}

// awaitRender takes key's claim for owner (found false), or returns the
// outcome of the render that holds or held it (found true). While another
// process renders, it reads the claim with a growing pause; it writes only
// to take a claim it saw free.
func (rn *Renderer) awaitRender(ctx context.Context, key, owner string) (o outcome, found bool, err error) {
	claims := rn.opts.Claims
	for wait := 25 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		holder, note, until, err := claims.Peek(ctx, key, rn.opts.Now())
		if err != nil {
			return outcome{}, false, fmt.Errorf("read the claim of metatile %s: %w", key, err)
		}
		if o, ok := parseOutcome(note); ok {
			rn.memo.remember(key, o, until, rn.opts.Now())
			return o, true, nil
		}
		if holder == "" {
			ok, err := claims.Claim(ctx, key, owner, rn.opts.ClaimTTL, rn.opts.Now())
			if err != nil {
				return outcome{}, false, fmt.Errorf("claim metatile %s: %w", key, err)
			}
			if ok {
				return outcome{}, false, nil
			}
		}
		if err := sleepErr(ctx, wait); err != nil {
			return outcome{}, false, failure(failTimeout, fmt.Errorf("wait for another process's render of %s: %w", key, err))
		}
	}
}

// settleRender remembers how the render of a metatile ended, here and (in
// place of owner's claim) in the task store, for keep. It reports whether
// the claim was settled (else it is still to be released).
func (rn *Renderer) settleRender(ctx context.Context, key, owner string, o outcome, keep time.Duration) bool {
	now := rn.opts.Now()
	until := now.Add(keep)
	rn.memo.remember(key, o, until, now)
	if rn.opts.Claims == nil {
		return true
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := rn.opts.Claims.Settle(uctx, key, owner, o.note(), until); err != nil {
		rn.log.Warn("remember a render's outcome", "key", key, "err", err)
		return false
	}
	return true
}
