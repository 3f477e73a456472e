// A lane run: one worker working one task's metatiles for a slice of time,
// under the task's lease.

package seed

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/metrics"
	"tilecache/internal/queue"
	"tilecache/internal/source"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// lane is one worker's run of one task's metatiles: the job's plan, the
// source and store it works with, the lease it holds and the usage changes
// it has not checkpointed yet. Work makes one per lane message; it is used
// by one goroutine (store fans out within a metatile).
//
// The rules a lane keeps:
//   - it works only while it holds the task's lease (task.Store.Acquire),
//     and every checkpoint is fenced by it: a worker whose lease lapsed or
//     was revoked (the sweep) cannot advance the task and stops;
//   - a kill or a lost lease cancels its context, so upstream requests,
//     retries and backoffs end within KillCheckEvery; store writes already
//     started finish (writeContext) so usage stays exact;
//   - a render that outlives the invocation's budget (the context deadline
//     less half the safety margin) is a tile failure, and the lane moves on
//     by the request's failure rules instead of being redelivered forever;
//   - usage changes ride on the checkpoints (tally, Usage).
type lane struct {
	e      *Engine
	job    task.Job
	layer  *layer.Layer
	subset *grid.Subset
	plan   *grid.Plan
	src    source.Source
	set    tilestore.TileSet
	meta   tilestore.Meta
	// t is the task as this lane last wrote or read it.
	t task.Task
	// owner is this run's lease token.
	owner string
	// hard is the latest a render may run to (zero: no limit but the
	// source's own timeouts).
	hard time.Time
	// rendered counts the source requests of this run.
	rendered atomic.Int64
	// tally holds the usage changes since the last checkpoint.
	tally *tally
	// listed caches the sizes of the tiles of columns a truncate or
	// reseed listed (see sizes); listedKeys counts its entries. levels
	// holds the levels it listed whole, from the lowest of its current
	// batch up.
	listed     map[column]*listedColumn
	listedKeys int
	levels     map[int]*listedLevel
}

// errRenderBudget is the cause of a render cut at the invocation's budget.
var errRenderBudget = errors.New("the render outlived the time left to the invocation")

// leaseToken returns a new lease token.
func leaseToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// lane loads what task t's lane needs; Invalid when the layer changed so
// that the lane cannot be worked any more.
func (e *Engine) lane(ctx context.Context, t task.Task, owner string) (*lane, error) {
	job, err := e.tasks.Job(ctx, t.JobID)
	if err != nil {
		return nil, fmt.Errorf("load job %d: %w", t.JobID, err)
	}
	l, ok := e.layers.Layer(job.Layer)
	if !ok {
		return nil, apperr.Invalidf("layer %s is no longer configured", job.Layer)
	}
	sub, ok := l.Subset(job.GridSetID)
	if !ok {
		return nil, apperr.Invalidf("layer %s no longer has grid set %s", job.Layer, job.GridSetID)
	}
	plan, err := planJob(sub, job)
	if err != nil {
		return nil, err
	}
	if plan.Metatiles() != job.Metatiles || plan.Tiles() != job.Tiles {
		return nil, apperr.Invalidf("layer %s changed since the request was planned", job.Layer)
	}
	src, ok := e.sources[l.Name]
	if !ok && job.Type != task.Truncate {
		return nil, apperr.Invalidf("layer %s has no source", l.Name)
	}
	set := e.tileSet(l, job.GridSetID, job.Format, job.ParametersID)
	return &lane{
		e: e, job: job, layer: l, subset: sub, plan: plan, src: src, set: set, t: t, owner: owner,
		meta:  tilestore.Meta{ContentType: source.ContentType(job.Format), CacheControl: l.CacheControl},
		tally: newTally(set, l.Name, job.MetaWidth, job.MetaHeight),
	}, nil
}

// run works the lane from its task's cursor until the lane ends, the slice
// is used up (then it sends the continuation message) or it is stopped.
// It returns nil when the message is finished with and an error when the
// message should be delivered again.
func (ln *lane) run(ctx context.Context) error {
	e, t := ln.e, ln.t
	start := t.Cursor
	progress := new(atomic.Int64) // the task's processed tiles, checkpointed or not (Engine.List)
	progress.Store(t.Done)
	e.live.Store(t.ID, progress)
	defer e.live.CompareAndDelete(t.ID, progress)
	defer e.widths.join(ln.job.ID)()
	defer func() {
		// Whatever return left work uncheckpointed marks the layer.
		e.settle(ctx, ln, false, fmt.Sprintf("lane of task %d stopped with uncheckpointed work", t.ID))
		e.log.Debug("lane slice", "task", t.ID, "from", start, "to", t.Cursor, "rendered", ln.rendered.Load())
	}()
	deadline := time.Now().Add(e.opts.Slice)
	if d, ok := ctx.Deadline(); ok {
		if soft := d.Add(-e.opts.SafetyMargin); soft.Before(deadline) {
			deadline = soft
		}
		ln.hard = d.Add(-e.opts.SafetyMargin / 2)
	}
	// A kill or a lost lease cancels the lane's context, so it reaches
	// every wait: an upstream request, its retries and backoffs, a tile
	// retry's pause.
	ctx, watch := e.watchLane(ctx, ln)
	defer watch.stop()
	watch.checkpointed() // the lease was just taken: as fresh as a checkpoint
	ended := func() bool {
		if c := context.Cause(ctx); !errors.Is(c, errLaneKilled) && !errors.Is(c, errLeaseLost) {
			return false
		}
		ln.stopped(ctx, watch.last(), t.Cursor)
		return true
	}
	usageAt := time.Now()
	for t.Cursor < t.End {
		from, tiles := t.Cursor, int64(0)
		cursor := from
		var deletes []tileRef
		// A batch ends at the next checkpoint or at the slice's deadline,
		// whichever comes first, so a Lambda never overruns its budget.
		batchStart := time.Now()
		batchEnd := batchStart.Add(e.opts.CheckpointEvery)
		if deadline.Before(batchEnd) {
			batchEnd = deadline
		}
		for cursor < t.End && len(deletes) < truncateBatch && !ln.tally.full() && (cursor == from || time.Now().Before(batchEnd)) {
			if err := ctx.Err(); err != nil {
				if ended() {
					return nil
				}
				return fmt.Errorf("task %d: %w", t.ID, err)
			}
			// The next metatiles, rendered at once when the lane is wider
			// than one (see jobWidths), their outcomes taken in order; a
			// truncate collects its metatile's keys.
			metas := make([]grid.Metatile, ln.width(t.End-cursor))
			for i := range metas {
				metas[i] = ln.plan.Meta(cursor + int64(i))
			}
			var errs []error
			if ln.job.Type == task.Truncate {
				deletes = ln.truncateKeys(metas[0], deletes)
				errs = make([]error, 1)
			} else {
				errs = ln.renderAll(ctx, metas)
			}
			for i, m := range metas {
				if err := errs[i]; err != nil {
					if ctx.Err() != nil {
						if ended() {
							return nil
						}
						return fmt.Errorf("task %d: %w", t.ID, ctx.Err())
					}
					if _, ok := errors.AsType[*storageError](err); ok {
						return fmt.Errorf("task %d: %w", t.ID, err)
					}
					abort, aerr := ln.tileFailed(ctx, t, m, err)
					if aerr != nil {
						return aerr
					}
					if abort {
						return nil
					}
				}
				tiles += m.Tiles.Count()
				progress.Store(t.Done + tiles)
				cursor++
			}
		}
		if len(deletes) > 0 {
			if err := ln.truncate(ctx, deletes); err != nil {
				if ended() {
					return nil
				}
				return fmt.Errorf("task %d: %w", t.ID, err)
			}
		}
		// The slice's last checkpoint gives the lease up, so that the
		// continuation message's worker takes it at once.
		release := cursor < t.End && !time.Now().Before(deadline)
		if release {
			watch.releasing()
		}
		// Usage rides on the checkpoints that end the slice or the task,
		// that would otherwise carry too many pages, and at least every
		// usageEvery; in between, a checkpoint moves only the cursor (one
		// item written rather than one per page touched). Usage held back
		// is exact all the same: a killed lane applies it (settle), and a
		// lane that stops any other way has its layer recounted, as for
		// work not checkpointed at all.
		withUsage := release || cursor == t.End || ln.tally.full() || time.Since(usageAt) >= e.opts.usageEvery()
		cp := task.Checkpoint{ID: t.ID, From: from, To: cursor, Tiles: tiles, Owner: ln.owner, Release: release}
		if withUsage {
			cp.Usage = ln.tally.pending()
		}
		// The checkpoint is a write like the tiles': a kill does not cut
		// it (its usage may be applied at the store while the lane saw it
		// fail), and a conflict is read through. A kill seen meanwhile
		// then stops the lane at the top of the batch, its usage applied.
		wctx := writeContext(ctx)
		var next task.Task
		var err error
		for attempt := 1; ; attempt++ {
			next, err = e.tasks.Checkpoint(wctx, cp, time.Now())
			if !apperr.Is(err, apperr.Conflict) {
				break
			}
			if owned, err := ln.owned(wctx, from); !owned {
				return err
			}
			// Not a kill or a takeover: the store gave up on contention
			// (a transaction touching the same item at once, such as the
			// watch's heartbeat). Try again briefly, then leave it to a
			// redelivery.
			if attempt == 3 {
				return fmt.Errorf("checkpoint task %d: %w", t.ID, err)
			}
			sleep(wctx, time.Duration(attempt)*20*time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("checkpoint task %d: %w", t.ID, err)
		}
		watch.checkpointed()
		if ln.job.Type != task.Truncate && ln.rendered.Load() > 0 {
			e.noteRate(ln.layer.Name, tiles, time.Since(batchStart))
		}
		t, ln.t = next, next
		if withUsage {
			ln.tally.reset() // counted with the checkpoint
			usageAt = time.Now()
		}
		if release {
			if err := e.send(writeContext(ctx), []queue.Message{{TaskID: t.ID, Cursor: t.Cursor}}); err != nil {
				return fmt.Errorf("continue task %d: %w", t.ID, err)
			}
			return nil
		}
	}
	return e.finish(ctx, t, task.Done)
}

// owned reads the lane's task and reports whether the lane still owns it
// at cursor from (RUNNING there, under this lane's lease). When it does
// not — killed, or taken over — the lane is stopped (its usage settled)
// and err is nil; err is the read's failure.
func (ln *lane) owned(ctx context.Context, from int64) (bool, error) {
	cur, err := ln.e.tasks.Get(ctx, ln.t.ID)
	if err != nil {
		return false, fmt.Errorf("check task %d: %w", ln.t.ID, err)
	}
	if cur.Status != task.Running || cur.Cursor != from || cur.Owner != ln.owner {
		ln.stopped(ctx, cur, from)
		return false, nil
	}
	return true, nil
}

// stopped ends a lane whose task is no longer its own at cursor from (cur
// is the task as read now): killed, or taken over by another worker.
func (ln *lane) stopped(ctx context.Context, cur task.Task, from int64) {
	ln.e.log.Info("lane stopped: task killed or taken over", "task", cur.ID, "cursor", from, "status", cur.Status.String())
	ln.e.settle(ctx, ln, cur.Status == task.Aborted,
		fmt.Sprintf("lane of task %d was taken over with uncheckpointed work", cur.ID))
}

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
	for x, y := range r.All() {
		refs = append(refs, tileRef{z: r.Z, x: x, y: y, key: ln.set.Key(r.Z, x, y)})
		ln.tally.touch(r.Z, x, y)
	}
	return refs
}

// truncate deletes a batch of tiles. When usage is counted, each tile's
// size is learnt first (absent tiles count nothing): see sizes.
func (ln *lane) truncate(ctx context.Context, refs []tileRef) error {
	ctx = writeContext(ctx)
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.key
	}
	if ln.tally.on {
		sizes, err := ln.sizes(ctx, refs)
		if err != nil {
			return err
		}
		for i, r := range refs {
			if sizes[i] >= 0 {
				ln.tally.deleted(r.z, r.x, r.y, sizes[i])
			}
		}
	}
	ln.tally.markTouched()
	_, err := ln.e.tiles.Delete(ctx, keys)
	// Even a failed batch may have deleted some of its tiles.
	for z, cols := range columns(refs) {
		ln.e.tilesChanged(ln.set, z, cols[0], cols[1])
	}
	if err != nil {
		metrics.StoreErrors.Add(1, "delete")
		return fmt.Errorf("delete %d tiles: %w", len(keys), err)
	}
	metrics.TilesDeleted.Add(float64(len(keys)), ln.layer.Name)
	return nil
}

// column is one column of tiles of a level.
type column struct {
	z int
	x int64
}

// listedColumn holds the stored sizes of a column's tiles in rows lo..hi,
// as a listing found them.
type listedColumn struct {
	lo, hi int64
	sizes  map[int64]int64 // by row
}

// listedLevel holds the stored sizes of a level's tiles inside ahead,
// as one listing of the whole level found them.
type listedLevel struct {
	ahead grid.TileRange
	sizes map[[2]int64]int64 // by column and row
}

// listColumnMax is the most rows a column may have in the layer's
// coverage for sizes to learn its tiles' sizes from a listing of the
// column (one LIST request per 1,000 stored tiles) rather than one Stat
// per tile.
const listColumnMax = 1000

// listLevelMax is the most tiles a level may have in the layer's coverage
// for sizes to list the whole level (one LIST per 1,000 stored tiles, at
// most 66) when that takes fewer requests than listing its columns; the
// sizes kept are those of the tiles the lane still visits (≤ 3 MB).
const listLevelMax = 1 << 16

// listCacheMax bounds the listed tiles a lane keeps (about 40 bytes
// each): past it the cache starts again, at the cost of listing columns
// again.
const listCacheMax = 32_000

// listMinTiles is the fewest tiles of a column the lane must still visit
// for it to be listed: a listing then saves requests (and time). S3 bills
// a LIST like a PUT, 12.5 times a HEAD, so in dollars it pays from 13
// tiles; a reseed's or truncate's cost is dominated by its PUTs or
// deletes either way.
const listMinTiles = 2

// ahead returns the tiles of level z the lane still visits from its
// cursor on, as the smallest range of whole metatile columns (plans
// numbered by columns) or rows (by rows) holding them; ok is false when
// it visits none.
func (ln *lane) ahead(z int) (grid.TileRange, bool) {
	if ln.plan == nil {
		return grid.TileRange{}, false // a render on miss: one metatile
	}
	return aheadRange(ln.plan, z, ln.t.Cursor, ln.t.End)
}

// aheadRange is the smallest range of whole metatile columns or rows of
// level z holding the plan's metatiles from to to (see lane.ahead).
func aheadRange(plan *grid.Plan, z int, from, to int64) (grid.TileRange, bool) {
	l, ok := plan.Level(z)
	if !ok {
		return grid.TileRange{}, false
	}
	from, to = max(from, l.First), min(to, l.First+l.Cols*l.Rows)
	if to <= from {
		return grid.TileRange{}, false
	}
	mw, mh := plan.MetaSize()
	r := l.Tiles
	if plan.Order() == grid.ByColumns {
		r.MinX = l.Tiles.MinX + (from-l.First)/l.Rows*int64(mw)
		r.MaxX = min(l.Tiles.MinX+((to-1-l.First)/l.Rows+1)*int64(mw)-1, l.Tiles.MaxX)
	} else {
		r.MinY = l.Tiles.MinY + (from-l.First)/l.Cols*int64(mh)
		r.MaxY = min(l.Tiles.MinY+((to-1-l.First)/l.Cols+1)*int64(mh)-1, l.Tiles.MaxY)
	}
	return r, true
}

// sizes returns the stored size of each tile of refs (-1 when absent),
// learnt with as few requests as it can: from one listing of the whole
// level when the level is small enough and that takes fewer requests than
// listing the columns the lane still visits in it; else from a listing of
// each column the batch touches when the column is short enough; else
// from one Stat per tile. Listings are kept for the lane's later batches
// (a truncate or reseed visits each tile once; numbered by columns, a
// lane's batches go down a column before the next).
func (ln *lane) sizes(ctx context.Context, refs []tileRef) ([]int64, error) {
	byCol := map[column][]int{}
	for i, r := range refs {
		c := column{r.z, r.x}
		byCol[c] = append(byCol[c], i)
	}
	out := make([]int64, len(refs))
	var stat []int // refs to Stat one by one
	if len(refs) > 0 {
		// The lane goes up level by level: levels below this batch are done.
		minZ := refs[0].z
		for _, r := range refs {
			minZ = min(minZ, r.z)
		}
		for z := range ln.levels {
			if z < minZ {
				delete(ln.levels, z)
			}
		}
	}
	for c, idx := range byCol {
		if lv, err := ln.listLevel(ctx, c.z); err != nil {
			return nil, err
		} else if lv != nil && lv.ahead.Contains(c.x, refs[idx[0]].y) {
			for _, i := range idx {
				if size, ok := lv.sizes[[2]int64{refs[i].x, refs[i].y}]; ok && lv.ahead.Contains(refs[i].x, refs[i].y) {
					out[i] = size
				} else if lv.ahead.Contains(refs[i].x, refs[i].y) {
					out[i] = -1
				} else {
					stat = append(stat, i)
				}
			}
			continue
		}
		lo, hi := refs[idx[0]].y, refs[idx[0]].y
		for _, i := range idx {
			lo, hi = min(lo, refs[i].y), max(hi, refs[i].y)
		}
		ahead, _ := ln.ahead(c.z)
		rowsAhead := int64(0)
		if ahead.Contains(c.x, lo) {
			rowsAhead = ahead.MaxY - lo + 1
		}
		band, ok := ln.listed[c]
		cached := ok && lo >= band.lo && hi <= band.hi
		if cov := ln.subset.CoverageRange(c.z); !cached && (len(idx) < 2 || cov.MaxY-cov.MinY+1 > listColumnMax ||
			max(int64(len(idx)), rowsAhead) < listMinTiles) {
			stat = append(stat, idx...)
			continue
		}
		if !cached {
			// Keep the rows the lane may still visit in this column.
			band = &listedColumn{lo: lo, hi: max(hi, lo+rowsAhead-1), sizes: map[int64]int64{}}
			prefix := ln.set.LevelDir(c.z) + strconv.FormatInt(c.x, 10) + "/"
			if err := ln.e.tiles.List(ctx, prefix, func(o tilestore.Object) error {
				if y, ok := parseRow(o.Key[len(prefix):]); ok && y >= band.lo && y <= band.hi {
					band.sizes[y] = o.Size
				}
				return nil
			}); err != nil {
				metrics.StoreErrors.Add(1, "list")
				return nil, storageErr("list column %s: %w", prefix, err)
			}
			if ln.listed == nil || ln.listedKeys > listCacheMax {
				ln.listed, ln.listedKeys = map[column]*listedColumn{}, 0
			}
			ln.listed[c] = band
			ln.listedKeys += len(band.sizes) + 1
		}
		for _, i := range idx {
			if size, ok := band.sizes[refs[i].y]; ok {
				out[i] = size
			} else {
				out[i] = -1
			}
		}
	}
	if len(stat) > 0 {
		keys := make([]string, len(stat))
		for j, i := range stat {
			keys[j] = refs[i].key
		}
		sizes, err := ln.e.statSizes(ctx, keys)
		if err != nil {
			return nil, err
		}
		for j, i := range stat {
			out[i] = sizes[j]
		}
	}
	return out, nil
}

// listLevel returns the lane's listing of the whole of level z, listing it
// now when that is worth it (see sizes), or nil.
func (ln *lane) listLevel(ctx context.Context, z int) (*listedLevel, error) {
	if lv, ok := ln.levels[z]; ok {
		return lv, nil
	}
	ahead, ok := ln.ahead(z)
	if !ok {
		return nil, nil
	}
	cov, whole, _ := levelListing(ln.subset, z, ahead)
	if !whole {
		return nil, nil
	}
	lv := &listedLevel{ahead: cov, sizes: make(map[[2]int64]int64, min(cov.Count(), listLevelMax))}
	// The level's keys in groups by the first digit of their column, each
	// group a listing of its own, listConcurrency at a time: the groups
	// without a column the lane visits are not listed at all.
	dir := ln.set.LevelDir(z)
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		first error
	)
	sem := make(chan struct{}, listConcurrency)
	for _, g := range digitGroups(ln.subset.CoverageRange(z), cov) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			found := map[[2]int64]int64{}
			err := ln.e.tiles.List(ctx, dir+g.prefix, func(o tilestore.Object) error {
				name := o.Key[len(dir):]
				slash := strings.IndexByte(name, '/')
				if slash <= 0 {
					return nil
				}
				x, err := strconv.ParseInt(name[:slash], 10, 64)
				if err != nil {
					return nil
				}
				if y, ok := parseRow(name[slash+1:]); ok && cov.Contains(x, y) {
					found[[2]int64{x, y}] = o.Size
				}
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			maps.Copy(lv.sizes, found)
		})
	}
	wg.Wait()
	if first != nil {
		metrics.StoreErrors.Add(1, "list")
		return nil, storageErr("list level %s: %w", dir, first)
	}
	if ln.levels == nil {
		ln.levels = map[int]*listedLevel{}
	}
	ln.levels[z] = lv
	return lv, nil
}

// levelListing decides how a lane that still visits the tiles of level z
// in ahead learns their sizes: by listing the whole level (whole, in lists
// requests), or else by listing each column of cov, the part of ahead in
// the coverage (one request per column; columns taller than listColumnMax
// are looked up tile by tile instead). ok is false when ahead holds no
// tile of the coverage.
func levelListing(sub *grid.Subset, z int, ahead grid.TileRange) (cov grid.TileRange, whole bool, lists int64) {
	full := sub.CoverageRange(z)
	cov, ok := ahead.Intersect(full)
	if !ok {
		return cov, false, 0
	}
	levelTiles := full.Count()
	columns := cov.MaxX - cov.MinX + 1
	if cov.MaxY-cov.MinY+1 > listColumnMax {
		columns = levelTiles // column listings are not used: one Stat per tile
	}
	if levelTiles > listLevelMax {
		return cov, false, columns
	}
	var levelLists int64
	for _, g := range digitGroups(full, cov) {
		levelLists += max((g.tiles+999)/1000, 1)
	}
	if levelLists < columns {
		return cov, true, levelLists
	}
	return cov, false, columns
}

// truncateBatch is the most tiles a truncate deletes between checkpoints:
// several DeleteBatch requests, which the store sends at once (a lane
// deleting one request's keys at a time waits on each in turn).
const truncateBatch = 4 * tilestore.DeleteBatch

// listConcurrency is how many listings of one level's key groups a lane
// runs at once.
const listConcurrency = 4

// keyGroup is the keys of a level whose column starts with one decimal
// digit: the key prefix (level directory excluded) and the most tiles it
// can hold.
type keyGroup struct {
	prefix string
	tiles  int64
}

// digitGroups splits the columns of full (a level's coverage) by their
// first decimal digit, "0/" for column 0 and "1" to "9" (column 1 and
// 10-19 and 100-199 … share "1"), and returns the groups holding a column
// of cov, with the tiles of full each holds.
func digitGroups(full, cov grid.TileRange) []keyGroup {
	height := full.MaxY - full.MinY + 1
	var out []keyGroup
	if full.MinX == 0 && cov.MinX == 0 {
		out = append(out, keyGroup{"0/", height})
	}
	for d := int64(1); d <= 9; d++ {
		var cols int64
		hit := false
		for p := int64(1); d*p <= full.MaxX; p *= 10 {
			lo, hi := d*p, (d+1)*p-1
			if a, b := max(lo, full.MinX), min(hi, full.MaxX); a <= b {
				cols += b - a + 1
			}
			hit = hit || max(lo, cov.MinX) <= min(hi, cov.MaxX)
		}
		if hit {
			out = append(out, keyGroup{strconv.FormatInt(d, 10), cols * height})
		}
	}
	return out
}

// parseRow reads the row of a tile's key from its last part, "y.ext".
func parseRow(name string) (int64, bool) {
	dot := strings.IndexByte(name, '.')
	if dot <= 0 {
		return 0, false
	}
	y, err := strconv.ParseInt(name[:dot], 10, 64)
	return y, err == nil
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

// width returns how many metatiles the lane renders next, at most left:
// one, or for a seed lane its job's width here (see jobWidths), within
// what the checkpoint's usage pages can still take.
func (ln *lane) width(left int64) int {
	if ln.job.Type != task.Seed {
		return 1
	}
	return int(max(1, min(int64(ln.e.widths.width(ln.job.ID)), left, ln.tally.room())))
}

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
		ln.e.log.Warn("tile failure", "job", ln.job.ID, "layer", ln.job.Layer, "z", m.Tiles.Z,
			"x", m.Tiles.MinX, "y", m.Tiles.MinY, "try", try+1, "err", err)
	}
	return err
}

// render stores a metatile's tiles inside the grid subset; seed skips the
// metatile when its first stored tile exists.
func (ln *lane) render(ctx context.Context, m grid.Metatile) error {
	z := m.Tiles.Z
	inside, ok := m.Tiles.Intersect(ln.subset.CoverageRange(z))
	if !ok {
		return nil // nothing of it can be stored
	}
	if ln.job.Type == task.Seed {
		if !slices.Contains(ln.job.EmptyLevels, z) {
			_, found, err := ln.e.tiles.Stat(ctx, ln.set.Key(z, inside.MinX, inside.MinY))
			if err != nil {
				return storageErr("check tile: %w", err)
			}
			if found {
				metrics.TilesSkipped.Add(float64(inside.Count()), ln.layer.Name)
				return nil
			}
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
	err = ln.store(ctx, z, inside, tiles)
	if ln.job.Type == task.Reseed {
		// Replaced (or, where blank now, deleted), even if only in part.
		ln.e.tilesChanged(ln.set, z, inside.MinX, inside.MaxX)
	}
	return err
}

// renderSource calls the lane's source. A panic in it (a decoder on a
// strange input) fails this metatile like any source error, logged with
// its stack, and never takes the process down.
func (ln *lane) renderSource(ctx context.Context, req source.Request) (tiles []source.Tile, err error) {
	defer func() {
		if r := recover(); r != nil {
			ln.e.log.Error("source panicked: metatile failed", "layer", req.Layer, "z", req.Z, "x", req.Tiles.MinX, "y", req.Tiles.MinY,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			tiles, err = nil, fmt.Errorf("render z%d metatile at %d,%d: source panicked: %v", req.Z, req.Tiles.MinX, req.Tiles.MinY, r)
		}
	}()
	by := "seed"
	if ln.t.ID == 0 {
		by = "miss"
	}
	metrics.MetatilesRendered.Add(1, ln.layer.Name, by)
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

// store writes the tiles inside the grid subset, PutConcurrency at a time,
// and counts them. A seed stores only metatiles whose existence check found
// nothing (or in levels empty at submission), so it counts every tile as
// new; a reseed learns the size of the tile it replaces with a Stat before
// its Put (one more request per tile, only when usage is counted).
func (ln *lane) store(ctx context.Context, z int, inside grid.TileRange, tiles []source.Tile) error {
	ctx = writeContext(ctx)
	// A reseed that counts usage learns the sizes of the tiles it replaces
	// (from column listings, see sizes) before writing.
	var known map[[2]int64]int64
	if ln.tally.on && ln.job.Type == task.Reseed {
		var refs []tileRef
		for _, tl := range tiles {
			if inside.Contains(tl.X, tl.Y) {
				refs = append(refs, tileRef{z: z, x: tl.X, y: tl.Y, key: ln.set.Key(z, tl.X, tl.Y)})
			}
		}
		sizes, err := ln.sizes(ctx, refs)
		if err != nil {
			return err
		}
		known = make(map[[2]int64]int64, len(refs))
		for i, r := range refs {
			known[[2]int64{r.x, r.y}] = sizes[i]
		}
	}
	sem := make(chan struct{}, ln.e.opts.PutConcurrency)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for _, tl := range tiles {
		if !inside.Contains(tl.X, tl.Y) {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			key := ln.set.Key(z, tl.X, tl.Y)
			fail := func(err error) {
				mu.Lock()
				if first == nil {
					first = storageErr("store tile %d/%d/%d: %w", z, tl.X, tl.Y, err)
				}
				mu.Unlock()
			}
			old := int64(-1) // seed stores only where its check found nothing
			if known != nil {
				old = known[[2]int64{tl.X, tl.Y}]
			}
			if tl.Skip {
				// A blank tile the layer does not store; a reseed removes
				// the tile it would otherwise have replaced.
				metrics.TilesSkipped.Add(1, ln.layer.Name)
				if ln.job.Type != task.Reseed {
					return
				}
				var err error
				if known != nil {
					err = ln.deleteTile(ctx, z, tl.X, tl.Y, key, old)
				} else {
					err = ln.dropTile(ctx, z, tl.X, tl.Y, key)
				}
				if err != nil {
					fail(err)
				}
				return
			}
			ln.tally.markTouched()
			if err := ln.e.tiles.Put(ctx, key, tl.Data, ln.meta); err != nil {
				metrics.StoreErrors.Add(1, "put")
				fail(err)
				return
			}
			metrics.TilesStored.Add(1, ln.layer.Name)
			ln.tally.stored(z, tl.X, tl.Y, old, int64(len(tl.Data)))
		})
	}
	wg.Wait()
	return first
}

// deleteTile deletes one tile whose stored size is known (−1: absent,
// nothing to do), counting it.
func (ln *lane) deleteTile(ctx context.Context, z int, x, y int64, key string, size int64) error {
	if size < 0 {
		return nil
	}
	ln.tally.deleted(z, x, y, size)
	ln.tally.markTouched()
	_, err := ln.e.tiles.Delete(ctx, []string{key})
	return err
}

// dropTile deletes one tile, counting its size when usage is counted.
func (ln *lane) dropTile(ctx context.Context, z int, x, y int64, key string) error {
	ctx = writeContext(ctx)
	if ln.tally.on {
		o, found, err := ln.e.tiles.Stat(ctx, key)
		if err != nil {
			return err
		}
		if !found {
			return nil
		}
		ln.tally.deleted(z, x, y, o.Size)
	}
	ln.tally.markTouched()
	if _, err := ln.e.tiles.Delete(ctx, []string{key}); err != nil {
		return err
	}
	return nil
}

// tileFailed records a failed metatile. It reports abort=true when the
// task (and with the failure budget exhausted, the whole job) was aborted.
func (ln *lane) tileFailed(ctx context.Context, t task.Task, m grid.Metatile, cause error) (abort bool, err error) {
	if ln.job.RetryCount < 0 {
		metrics.TilesFailed.Add(float64(m.Tiles.Count()), ln.layer.Name)
		ln.e.log.Error("task aborted on tile failure", "task", t.ID, "layer", t.Layer, "z", m.Tiles.Z, "err", cause)
		ln.e.settle(ctx, ln, true, "")
		return true, ln.e.finish(ctx, t, task.Aborted)
	}
	metrics.TilesFailed.Add(float64(m.Tiles.Count()), ln.layer.Name)
	total, err := ln.e.tasks.AddFailures(ctx, ln.job.ID, int64(1+ln.job.RetryCount))
	if err != nil {
		return false, fmt.Errorf("count failures of job %d: %w", ln.job.ID, err)
	}
	if total < int64(ln.job.MaxFailures) {
		r := m.Tiles
		ln.e.log.Warn("tile failure: metatile skipped", "task", t.ID, "layer", t.Layer, "z", r.Z,
			"x", fmt.Sprintf("%d..%d", r.MinX, r.MaxX), "y", fmt.Sprintf("%d..%d", r.MinY, r.MaxY),
			"failures", total, "budget", ln.job.MaxFailures, "err", cause)
		return false, nil
	}
	ln.e.log.Error("job aborted: too many tile failures", "job", ln.job.ID, "layer", ln.job.Layer, "failures", total, "err", cause)
	for id := ln.job.ID; id < ln.job.ID+int64(ln.job.Lanes); id++ {
		if id == t.ID {
			continue
		}
		other, err := ln.e.tasks.Get(ctx, id)
		if err != nil {
			return false, fmt.Errorf("abort job %d: %w", ln.job.ID, err)
		}
		if other.Status.Active() {
			if _, err := ln.e.tasks.Kill(ctx, id, other.Status, time.Now()); err != nil && !apperr.Is(err, apperr.Conflict) {
				return false, fmt.Errorf("abort task %d: %w", id, err)
			}
		}
	}
	ln.e.settle(ctx, ln, true, "")
	return true, ln.e.finish(ctx, t, task.Aborted)
}
