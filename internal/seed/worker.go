package seed

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/queue"
	"tilecache/internal/source"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// lane is everything a worker needs to work one task's metatiles.
type lane struct {
	job    task.Job
	layer  *layer.Layer
	subset *grid.Subset
	plan   *grid.Plan
	src    source.Source
	set    tilestore.TileSet
	meta   tilestore.Meta
	// rendered counts the source requests of this worker call.
	rendered int
	// tally holds the usage changes since the last checkpoint.
	tally *tally
}

func (e *Engine) lane(ctx context.Context, t task.Task) (*lane, error) {
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
		job: job, layer: l, subset: sub, plan: plan, src: src, set: set,
		meta:  tilestore.Meta{ContentType: source.ContentType(job.Format), CacheControl: l.CacheControl},
		tally: newTally(set, l.Name, job.MetaWidth, job.MetaHeight),
	}, nil
}

// Work handles one lane message, delivered for the attempt-th time (1 for
// the first delivery). It returns nil when the message is finished with
// (worked, continued, or stale) and should be acked, and an error when it
// should be delivered again.
func (e *Engine) Work(ctx context.Context, msg queue.Message, attempt int) error {
	t, err := e.tasks.Get(ctx, msg.TaskID)
	if apperr.Is(err, apperr.NotFound) {
		e.log.Warn("lane message for an unknown task dropped", "task", msg.TaskID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("load task %d: %w", msg.TaskID, err)
	}
	if !e.ownsLane(t, msg) {
		return nil
	}
	if msg.Cursor < t.Cursor || attempt > 1 {
		// The lane's previous worker may have stored tiles after its last
		// checkpoint and died before counting them.
		e.markDirty(ctx, t.Layer, fmt.Sprintf("lane of task %d resumed after its worker stopped", t.ID))
	}
	ln, err := e.lane(ctx, t)
	if err != nil {
		if apperr.Is(err, apperr.Invalid) {
			e.log.Error("task aborted", "task", t.ID, "layer", t.Layer, "err", err)
			return e.finish(ctx, t, task.Aborted)
		}
		return err
	}
	if err := e.startUsage(ctx, ln); err != nil {
		return fmt.Errorf("task %d: read the disk block size: %w", t.ID, err)
	}
	start := t.Cursor
	defer func() {
		// Whatever return left work uncheckpointed marks the layer.
		e.settle(ctx, ln, false, fmt.Sprintf("lane of task %d stopped with uncheckpointed work", t.ID))
		e.log.Debug("lane slice", "task", t.ID, "from", start, "to", t.Cursor, "rendered", ln.rendered)
	}()
	deadline := time.Now().Add(e.opts.Slice)
	if d, ok := ctx.Deadline(); ok && d.Add(-e.opts.SafetyMargin).Before(deadline) {
		deadline = d.Add(-e.opts.SafetyMargin)
	}
	// A kill cancels the lane's context, so it reaches every wait: an
	// upstream request, its retries and backoffs, a tile retry's pause.
	ctx, watch := e.watchKill(ctx, t.ID)
	defer watch.stop()
	watch.checkpointed() // the lane's message is as fresh as a checkpoint
	killed := func() bool {
		if !errors.Is(context.Cause(ctx), errLaneKilled) {
			return false
		}
		e.stopped(ctx, ln, watch.last(), t.Cursor)
		return true
	}
	for t.Cursor < t.End {
		from, tiles := t.Cursor, int64(0)
		cursor := from
		var deletes []tileRef
		// A batch ends at the next checkpoint or at the slice's deadline,
		// whichever comes first, so a Lambda never overruns its budget.
		batchEnd := time.Now().Add(e.opts.CheckpointEvery)
		if deadline.Before(batchEnd) {
			batchEnd = deadline
		}
		nextCheck := time.Now().Add(e.opts.KillCheckEvery)
		for cursor < t.End && len(deletes) < tilestore.DeleteBatch && !ln.tally.full() && (cursor == from || time.Now().Before(batchEnd)) {
			if err := ctx.Err(); err != nil {
				if killed() {
					return nil
				}
				return fmt.Errorf("task %d: %w", t.ID, err)
			}
			if time.Now().After(nextCheck) {
				// A read between checkpoints notices a kill (or a takeover)
				// within KillCheckEvery without writing.
				cur, err := e.tasks.Get(ctx, t.ID)
				if err != nil {
					return fmt.Errorf("check task %d: %w", t.ID, err)
				}
				if cur.Status != task.Running || cur.Cursor != from {
					e.stopped(ctx, ln, cur, from)
					return nil
				}
				nextCheck = time.Now().Add(e.opts.KillCheckEvery)
			}
			m := ln.plan.Meta(cursor)
			if ln.job.Type == task.Truncate {
				deletes = ln.truncateKeys(m, deletes)
			} else if err := e.renderWithRetries(ctx, ln, m); err != nil {
				if ctx.Err() != nil {
					if killed() {
						return nil
					}
					return fmt.Errorf("task %d: %w", t.ID, ctx.Err())
				}
				if _, ok := errors.AsType[*storageError](err); ok {
					return fmt.Errorf("task %d: %w", t.ID, err)
				}
				abort, aerr := e.tileFailed(ctx, ln, t, m, err)
				if aerr != nil {
					return aerr
				}
				if abort {
					return nil
				}
			}
			tiles += m.Tiles.Count()
			cursor++
		}
		if len(deletes) > 0 {
			if err := e.truncate(ctx, ln, deletes); err != nil {
				if killed() {
					return nil
				}
				return fmt.Errorf("task %d: %w", t.ID, err)
			}
		}
		cp := task.Checkpoint{ID: t.ID, From: from, To: cursor, Tiles: tiles, Usage: ln.tally.pending()}
		var next task.Task
		for attempt := 1; ; attempt++ {
			next, err = e.tasks.Checkpoint(ctx, cp, time.Now())
			if !apperr.Is(err, apperr.Conflict) {
				break
			}
			cur, gerr := e.tasks.Get(ctx, t.ID)
			if gerr != nil {
				return fmt.Errorf("check task %d: %w", t.ID, gerr)
			}
			if cur.Status != task.Running || cur.Cursor != from {
				e.stopped(ctx, ln, cur, from)
				return nil
			}
			// Not a kill or a takeover: the store gave up on contention
			// (a transaction touching the same item at once, such as the
			// watch's heartbeat). Try again briefly, then leave it to a
			// redelivery.
			if attempt == 3 {
				return fmt.Errorf("checkpoint task %d: %w", t.ID, err)
			}
			sleep(ctx, time.Duration(attempt)*20*time.Millisecond)
		}
		watch.checkpointed()
		if err != nil {
			return fmt.Errorf("checkpoint task %d: %w", msg.TaskID, err)
		}
		t = next
		ln.tally.reset() // counted with the checkpoint
		if t.Cursor < t.End && !time.Now().Before(deadline) {
			if err := e.send(ctx, []queue.Message{{TaskID: t.ID, Cursor: t.Cursor}}); err != nil {
				return fmt.Errorf("continue task %d: %w", t.ID, err)
			}
			return nil
		}
	}
	return e.finish(ctx, t, task.Done)
}

// stopped ends a lane whose task is no longer RUNNING at cursor from (cur is
// the task as read now): killed, or taken over by another worker.
func (e *Engine) stopped(ctx context.Context, ln *lane, cur task.Task, from int64) {
	e.log.Info("lane stopped: task killed or taken over", "task", cur.ID, "cursor", from, "status", cur.Status.String())
	e.settle(ctx, ln, cur.Status == task.Aborted,
		fmt.Sprintf("lane of task %d was taken over with uncheckpointed work", cur.ID))
}

// ownsLane decides whether a lane message should be worked. A message at
// the task's cursor is the lane's current one. A message behind the cursor
// is either a duplicate whose lane a live worker is advancing (its
// checkpoints keep the heartbeat fresh: drop it) or the redelivery of a
// message whose worker died mid-slice after some checkpoints (heartbeat
// old: take the lane over from the stored cursor). Were the owner alive
// after all, the conditional checkpoints stop one of the two.
func (e *Engine) ownsLane(t task.Task, msg queue.Message) bool {
	switch {
	case t.Status != task.Running || msg.Cursor > t.Cursor:
		return false // finished, killed or pending; or not this lane's history
	case msg.Cursor == t.Cursor:
		return true
	default:
		return time.Since(t.Heartbeat) >= e.opts.takeoverAfter()
	}
}

// finish ends a RUNNING task and hands its thread to the next pending task.
func (e *Engine) finish(ctx context.Context, t task.Task, status task.Status) error {
	done, err := e.tasks.Finish(ctx, t.ID, status, time.Now())
	if apperr.Is(err, apperr.Conflict) {
		return nil // killed meanwhile, or finished by a duplicate
	}
	if err != nil {
		return fmt.Errorf("finish task %d: %w", t.ID, err)
	}
	e.log.Info("task finished", "task", t.ID, "layer", t.Layer, "status", status.String(), "tiles", done.Done)
	if _, err := e.Dispatch(ctx); err != nil {
		e.log.Error("dispatch after finish", "task", t.ID, "err", err)
	}
	return nil
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
// size is learnt first (one Stat per tile; absent tiles count nothing).
func (e *Engine) truncate(ctx context.Context, ln *lane, refs []tileRef) error {
	ctx = writeContext(ctx)
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = r.key
	}
	if ln.tally.on {
		sizes, err := e.statSizes(ctx, keys)
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
	_, err := e.tiles.Delete(ctx, keys)
	// Even a failed batch may have deleted some of its tiles.
	for z, cols := range columns(refs) {
		e.tilesChanged(ln.set, z, cols[0], cols[1])
	}
	if err != nil {
		return fmt.Errorf("delete %d tiles: %w", len(keys), err)
	}
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

// renderWithRetries works one seed/reseed metatile, retrying per the job's
// failure settings.
func (e *Engine) renderWithRetries(ctx context.Context, ln *lane, m grid.Metatile) error {
	tries := 1 + max(ln.job.RetryCount, 0)
	var err error
	for try := range tries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(ln.job.RetryWaitMS) * time.Millisecond):
			}
		}
		if err = e.render(ctx, ln, m); err == nil || ctx.Err() != nil {
			return err
		}
		e.log.Warn("tile failure", "job", ln.job.ID, "layer", ln.job.Layer, "z", m.Tiles.Z,
			"x", m.Tiles.MinX, "y", m.Tiles.MinY, "try", try+1, "err", err)
	}
	return err
}

// render stores a metatile's tiles inside the grid subset; seed skips the
// metatile when its first stored tile exists.
func (e *Engine) render(ctx context.Context, ln *lane, m grid.Metatile) error {
	z := m.Tiles.Z
	inside, ok := m.Tiles.Intersect(ln.subset.CoverageRange(z))
	if !ok {
		return nil // nothing of it can be stored
	}
	if ln.job.Type == task.Seed {
		if !slices.Contains(ln.job.EmptyLevels, z) {
			_, found, err := e.tiles.Stat(ctx, ln.set.Key(z, inside.MinX, inside.MinY))
			if err != nil {
				return storageErr("check tile: %w", err)
			}
			if found {
				return nil
			}
		}
	}
	ln.rendered++
	tiles, err := e.renderSource(ctx, ln, source.Request{
		Layer: ln.layer.Name, GridSet: ln.subset.GridSet, Z: z, Tiles: m.Tiles,
		Format: ln.job.Format, Parameters: ln.job.Parameters, Gutter: ln.layer.Gutter,
	})
	if err != nil {
		return err
	}
	err = e.store(ctx, ln, z, inside, tiles)
	if ln.job.Type == task.Reseed {
		// Replaced (or, where blank now, deleted), even if only in part.
		e.tilesChanged(ln.set, z, inside.MinX, inside.MaxX)
	}
	return err
}

// renderSource calls the lane's source. A panic in it (a decoder on a
// strange input) fails this metatile like any source error, logged with
// its stack, and never takes the process down.
func (e *Engine) renderSource(ctx context.Context, ln *lane, req source.Request) (tiles []source.Tile, err error) {
	defer func() {
		if r := recover(); r != nil {
			e.log.Error("source panicked: metatile failed", "layer", req.Layer, "z", req.Z, "x", req.Tiles.MinX, "y", req.Tiles.MinY,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			tiles, err = nil, fmt.Errorf("render z%d metatile at %d,%d: source panicked: %v", req.Z, req.Tiles.MinX, req.Tiles.MinY, r)
		}
	}()
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
func (e *Engine) store(ctx context.Context, ln *lane, z int, inside grid.TileRange, tiles []source.Tile) error {
	ctx = writeContext(ctx)
	sem := make(chan struct{}, e.opts.PutConcurrency)
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
			if tl.Skip {
				// A blank tile the layer does not store; a reseed removes
				// the tile it would otherwise have replaced.
				if ln.job.Type != task.Reseed {
					return
				}
				if err := e.dropTile(ctx, ln, z, tl.X, tl.Y, key); err != nil {
					fail(err)
				}
				return
			}
			old := int64(-1) // seed stores only where its check found nothing
			if ln.tally.on && ln.job.Type == task.Reseed {
				o, found, err := e.tiles.Stat(ctx, key)
				if err != nil {
					fail(err)
					return
				}
				if found {
					old = o.Size
				}
			}
			ln.tally.markTouched()
			if err := e.tiles.Put(ctx, key, tl.Data, ln.meta); err != nil {
				fail(err)
				return
			}
			ln.tally.stored(z, tl.X, tl.Y, old, int64(len(tl.Data)))
		})
	}
	wg.Wait()
	return first
}

// dropTile deletes one tile, counting its size when usage is counted.
func (e *Engine) dropTile(ctx context.Context, ln *lane, z int, x, y int64, key string) error {
	ctx = writeContext(ctx)
	if ln.tally.on {
		o, found, err := e.tiles.Stat(ctx, key)
		if err != nil {
			return err
		}
		if !found {
			return nil
		}
		ln.tally.deleted(z, x, y, o.Size)
	}
	ln.tally.markTouched()
	if _, err := e.tiles.Delete(ctx, []string{key}); err != nil {
		return err
	}
	return nil
}

// tileFailed records a failed metatile. It reports abort=true when the
// task (and with the failure budget exhausted, the whole job) was aborted.
func (e *Engine) tileFailed(ctx context.Context, ln *lane, t task.Task, m grid.Metatile, cause error) (abort bool, err error) {
	if ln.job.RetryCount < 0 {
		e.log.Error("task aborted on tile failure", "task", t.ID, "layer", t.Layer, "z", m.Tiles.Z, "err", cause)
		e.settle(ctx, ln, true, "")
		return true, e.finish(ctx, t, task.Aborted)
	}
	total, err := e.tasks.AddFailures(ctx, ln.job.ID, int64(1+ln.job.RetryCount))
	if err != nil {
		return false, fmt.Errorf("count failures of job %d: %w", ln.job.ID, err)
	}
	if total < int64(ln.job.MaxFailures) {
		r := m.Tiles
		e.log.Warn("tile failure: metatile skipped", "task", t.ID, "layer", t.Layer, "z", r.Z,
			"x", fmt.Sprintf("%d..%d", r.MinX, r.MaxX), "y", fmt.Sprintf("%d..%d", r.MinY, r.MaxY),
			"failures", total, "budget", ln.job.MaxFailures, "err", cause)
		return false, nil
	}
	e.log.Error("job aborted: too many tile failures", "job", ln.job.ID, "layer", ln.job.Layer, "failures", total, "err", cause)
	for id := ln.job.ID; id < ln.job.ID+int64(ln.job.Lanes); id++ {
		if id == t.ID {
			continue
		}
		other, err := e.tasks.Get(ctx, id)
		if err != nil {
			return false, fmt.Errorf("abort job %d: %w", ln.job.ID, err)
		}
		if other.Status.Active() {
			if _, err := e.tasks.Kill(ctx, id, other.Status, time.Now()); err != nil && !apperr.Is(err, apperr.Conflict) {
				return false, fmt.Errorf("abort task %d: %w", id, err)
			}
		}
	}
	e.settle(ctx, ln, true, "")
	return true, e.finish(ctx, t, task.Aborted)
}

// RunWorkers receives lane messages and works them with n concurrent
// workers until ctx ends. Each message's visibility is extended while it
// is worked; a message whose work failed is left to be delivered again.
func (e *Engine) RunWorkers(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				ds, err := e.queue.Receive(ctx, 1, 20*time.Second, e.opts.Visibility)
				if err != nil {
					if ctx.Err() == nil {
						e.log.Error("receive lane messages", "err", err)
						sleep(ctx, time.Second)
					}
					continue
				}
				for _, d := range ds {
					e.handle(ctx, d)
				}
			}
		})
	}
	wg.Wait()
}

func (e *Engine) handle(ctx context.Context, d queue.Delivery) {
	defer func() {
		// Whatever else panics while a lane is worked stops this lane only:
		// its message is delivered again (and, repeated, dead-lettered).
		if r := recover(); r != nil {
			e.log.Error("lane work panicked; message will be redelivered", "task", d.Message.TaskID,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { // keep the message invisible while it is worked
		tick := time.NewTicker(e.opts.Visibility / 3)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
				if err := e.queue.Extend(wctx, d, e.opts.Visibility); err != nil && wctx.Err() == nil {
					e.log.Warn("extend lane message", "task", d.Message.TaskID, "err", err)
				}
			}
		}
	})
	defer func() { stop(); wg.Wait() }() // also when Work panics
	err := e.Work(wctx, d.Message, d.Attempt)
	stop()
	wg.Wait()
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			e.log.Error("lane work failed; message will be redelivered", "task", d.Message.TaskID, "attempt", d.Attempt, "err", err)
		}
		return
	}
	if err := e.queue.Ack(ctx, d); err != nil && ctx.Err() == nil {
		e.log.Warn("ack lane message", "task", d.Message.TaskID, "err", err)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
