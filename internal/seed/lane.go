// A lane run: one worker working one task's metatiles for a slice of time,
// under the task's lease, with its renders' retries and time budget.

package seed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/metrics"
	"tilecache/internal/queue"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
	"tilecache/internal/token"
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
//     started finish (metatile.WriteContext) so usage stays exact;
//   - a render that outlives the invocation's budget (the context deadline
//     less half the safety margin) is a tile failure, and the lane moves on
//     by the request's failure rules instead of being redelivered forever;
//   - usage changes ride on the checkpoints (tally, Usage).
type lane struct {
	env    laneEnv
	job    task.Job
	layer  *layer.Layer
	subset *grid.Subset
	plan   *grid.Plan
	// w renders and stores the lane's metatiles (and deletes a
	// truncate's tiles); its Usage holds the changes since the last
	// checkpoint.
	w *metatile.Writer
	// t is the task as this lane last wrote or read it.
	t task.Task
	// owner is this run's lease token.
	owner string
	// hard is the latest a render may run to (zero: no limit but the
	// source's own timeouts).
	hard time.Time
	// progress is the task's processed tiles, checkpointed or not (the
	// status rows read it while the lane runs; a killed lane records it).
	progress atomic.Int64
}

// errRenderBudget is the cause of a render cut at the invocation's budget.
var errRenderBudget = errors.New("the render outlived the time left to the invocation")

// leaseToken returns a new lease token.
func leaseToken() string {
	return token.New()
}

// run works the lane from its task's cursor until the lane ends, the slice
// is used up or it is stopped, and returns what is left to do: finish the
// task, or send the continuation message (see laneEnd). The error is
// non-nil when the message should be delivered again.
func (ln *lane) run(ctx context.Context) (end laneEnd, err error) {
	env, t := ln.env, ln.t
	start := t.Cursor
	progress := &ln.progress
	progress.Store(t.Done)
	defer env.working.track(t.ID, ln.job.ID, progress)()
	defer func() {
		// Whatever return left work uncheckpointed marks the layer.
		ln.settle(ctx, false, fmt.Sprintf("lane of task %d stopped with uncheckpointed work", t.ID))
		if err != nil {
			// The message comes again: its worker can take the lane at
			// once rather than wait for this lease to lapse.
			ln.release(metatile.WriteContext(ctx))
		}
		env.log.Debug("lane slice", "task", t.ID, "from", start, "to", t.Cursor, "rendered", ln.w.Rendered(), "unchanged", ln.w.Unchanged())
	}()
	deadline := time.Now().Add(env.opts.Slice)
	if d, ok := ctx.Deadline(); ok {
		if soft := d.Add(-env.opts.SafetyMargin); soft.Before(deadline) {
			deadline = soft
		}
		ln.hard = d.Add(-env.opts.SafetyMargin / 2)
	}
	// A kill or a lost lease cancels the lane's context, so it reaches
	// every wait: an upstream request, its retries and backoffs, a tile
	// retry's pause.
	ctx, watch := env.poll.watchLane(ctx, t.ID, ln.owner, env.opts.heartbeatEvery())
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
		// A batch ends at the next checkpoint or at the slice's deadline,
		// whichever comes first, so a Lambda never overruns its budget.
		batchStart := time.Now()
		batchEnd := batchStart.Add(env.opts.CheckpointEvery)
		if deadline.Before(batchEnd) {
			batchEnd = deadline
		}
		for cursor < t.End && ln.w.PendingDeletes() < truncateBatch && !ln.w.Usage.Full() && (cursor == from || time.Now().Before(batchEnd)) {
			if err := ctx.Err(); err != nil {
				if ended() {
					return laneEnd{}, nil
				}
				return laneEnd{}, fmt.Errorf("task %d: %w", t.ID, err)
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
				ln.w.QueueDeletes(metas[0])
				errs = make([]error, 1)
			} else {
				errs = ln.renderAll(ctx, metas)
			}
			for i, m := range metas {
				if err := errs[i]; err != nil {
					if ctx.Err() != nil {
						if ended() {
							return laneEnd{}, nil
						}
						return laneEnd{}, fmt.Errorf("task %d: %w", t.ID, ctx.Err())
					}
					if _, ok := errors.AsType[*metatile.StorageError](err); ok {
						return laneEnd{}, fmt.Errorf("task %d: %w", t.ID, err)
					}
					abort, aerr := ln.tileFailed(ctx, t, m, err)
					if aerr != nil {
						return laneEnd{}, aerr
					}
					if abort {
						return laneEnd{finish: true, status: task.Aborted}, nil
					}
				}
				tiles += m.Count()
				progress.Store(t.Done + tiles)
				cursor++
			}
		}
		if ln.w.PendingDeletes() > 0 {
			if err := ln.w.DeletePending(ctx); err != nil {
				if ended() {
					return laneEnd{}, nil
				}
				return laneEnd{}, fmt.Errorf("task %d: %w", t.ID, err)
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
		withUsage := release || cursor == t.End || ln.w.Usage.Full() || time.Since(usageAt) >= env.opts.usageEvery()
		// The token makes the checkpoint safe to send again: a retry after
		// a lost answer (the SDK's, or this loop's) finds it applied.
		cp := task.Checkpoint{ID: t.ID, From: from, To: cursor, Tiles: tiles, Owner: ln.owner, Release: release, Token: leaseToken()}
		if withUsage {
			cp.Usage = ln.w.Usage.Pending()
		}
		next, stopped, err := ln.checkpoint(ctx, cp)
		if stopped || err != nil {
			return laneEnd{}, err
		}
		watch.checkpointed()
		if ln.job.Type != task.Truncate && ln.w.Rendered() > 0 {
			env.rates.note(ln.layer.Name, tiles, time.Since(batchStart))
		}
		t, ln.t = next, next
		if withUsage {
			ln.w.Usage.Reset() // counted with the checkpoint
			usageAt = time.Now()
		}
		if release {
			return laneEnd{next: []queue.Message{{TaskID: t.ID, Cursor: t.Cursor}}}, nil
		}
	}
	return laneEnd{finish: true, status: task.Done}, nil
}

// checkpoint writes cp, the lane's progress from cursor cp.From. The
// checkpoint is a write like the tiles': a kill does not cut it (its usage
// may be applied at the store while the lane saw it fail), and a conflict
// is read through. A kill seen meanwhile then stops the lane at the top of
// the next batch, its usage applied. It returns the task as written, or
// stopped when the task is no longer the lane's (killed or taken over: the
// lane was stopped), or the error that ends the lane (its message is
// delivered again).
func (ln *lane) checkpoint(ctx context.Context, cp task.Checkpoint) (next task.Task, stopped bool, err error) {
	wctx := metatile.WriteContext(ctx)
	for attempt, failures := 1, 0; ; attempt++ {
		next, err = ln.env.tasks.Checkpoint(wctx, cp, time.Now())
		if err != nil && transient(err) && failures < checkpointRetries && wctx.Err() == nil {
			// The store gave up (throttled, unreachable): the same
			// checkpoint again after a pause, rather than a redelivery
			// and a recount of the layer.
			failures++
			ln.env.log.Warn("checkpoint failed, trying again", "task", cp.ID, "attempt", failures, "err", err)
			sleep(wctx, time.Duration(1<<failures)*250*time.Millisecond)
			continue
		}
		if !apperr.Is(err, apperr.Conflict) {
			break
		}
		if owned, err := ln.owned(wctx, cp.From); !owned {
			return task.Task{}, true, err
		}
		// Not a kill or a takeover: the store gave up on contention (a
		// transaction touching the same item at once, such as the
		// watch's heartbeat). Try again briefly, then leave it to a
		// redelivery.
		if attempt == 3 {
			return task.Task{}, false, fmt.Errorf("checkpoint task %d: %w", cp.ID, err)
		}
		sleep(wctx, time.Duration(attempt)*20*time.Millisecond)
	}
	if err != nil {
		return task.Task{}, false, fmt.Errorf("checkpoint task %d: %w", cp.ID, err)
	}
	return next, false, nil
}

// release gives up the lane's lease without moving its cursor, when the
// lane stops on an error. Best effort: a lease it no longer holds, or a
// store that fails, leaves the lease to lapse.
func (ln *lane) release(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := ln.t.Cursor
	_, err := ln.env.tasks.Checkpoint(ctx, task.Checkpoint{ID: ln.t.ID, From: c, To: c, Owner: ln.owner, Release: true, Token: leaseToken()}, time.Now())
	if err != nil && !apperr.Is(err, apperr.Conflict) {
		ln.env.log.Warn("give up the lease of a stopping lane", "task", ln.t.ID, "err", err)
	}
}

// truncateBatch is the most tiles a truncate deletes between checkpoints:
// several DeleteBatch requests, which the store sends at once (a lane
// deleting one request's keys at a time waits on each in turn).
const truncateBatch = 4 * tilestore.DeleteBatch

// checkpointRetries is how many times a lane sends a checkpoint again
// after the store failed it (beyond the store client's own retries):
// pauses of 0.5, 1, 2 and 4 s, well within the lease's TTL.
const checkpointRetries = 4

// transient reports whether a store error may pass on a retry: not one of
// the kinds that answer the request itself (a conflict, an invalid or
// missing task).
func transient(err error) bool {
	return !apperr.Is(err, apperr.Conflict) && !apperr.Is(err, apperr.Invalid) && !apperr.Is(err, apperr.NotFound)
}

// owned reads the lane's task and reports whether the lane still owns it
// at cursor from (RUNNING there, under this lane's lease). When it does
// not — killed, or taken over — the lane is stopped (its usage settled)
// and err is nil; err is the read's failure.
func (ln *lane) owned(ctx context.Context, from int64) (bool, error) {
	cur, err := ln.env.tasks.Get(ctx, ln.t.ID)
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
	ln.settle(ctx, cur.Status == task.Aborted,
		fmt.Sprintf("lane of task %d was taken over with uncheckpointed work", cur.ID))
	if cur.Status == task.Aborted && cur.Killed {
		// What it stored since its last checkpoint is stored: the
		// status rows and the console count it.
		if err := ln.env.tasks.KilledAt(metatile.WriteContext(ctx), cur.ID, ln.progress.Load()); err != nil {
			ln.env.log.Warn("record the progress of a killed lane", "task", cur.ID, "done", ln.progress.Load(), "err", err)
		}
	}
	// Logged last: once it is, the task's counters do not move again.
	ln.env.log.Info("lane stopped: task killed or taken over", "task", cur.ID, "cursor", from, "status", cur.Status.String(), "done", ln.progress.Load())
}

// settle ends the lane's usage that no checkpoint carried: applied when
// killed, else the layer is marked for a recount (see Usage).
func (ln *lane) settle(ctx context.Context, killed bool, why string) {
	ln.env.accounts.Settle(ctx, ln.w.Usage, ln.job.Layer, ln.job.ID, killed, why)
}

// width returns how many metatiles the lane renders next, at most left:
// one, or for a seed lane its job's width here (see jobWidths), within
// what the checkpoint's usage pages can still take.
func (ln *lane) width(left int64) int {
	if ln.job.Type != task.Seed {
		return 1
	}
	return int(max(1, min(int64(ln.env.working.widths.width(ln.job.ID)), left, ln.w.Usage.Room())))
}

// tileFailed records a failed metatile. It reports abort=true when the
// task is to be finished ABORTED (its usage settled; with the failure
// budget exhausted, the job's other tasks were killed).
func (ln *lane) tileFailed(ctx context.Context, t task.Task, m grid.Metatile, cause error) (abort bool, err error) {
	if ln.job.Render().RetryCount < 0 {
		metrics.TilesFailed.Add(ctx, float64(m.Count()), ln.layer.Name)
		ln.env.log.Error("task aborted on tile failure", "task", t.ID, "layer", t.Layer, "z", m.Tiles.Z, "err", cause)
		ln.settle(ctx, true, "")
		recordFailure(ctx, ln.env.tasks, ln.env.log, t, "a tile failed and retries are off (retryCount -1): "+metatileFailure(m, cause))
		return true, nil
	}
	metrics.TilesFailed.Add(ctx, float64(m.Count()), ln.layer.Name)
	total, err := ln.env.tasks.AddFailures(ctx, ln.job.ID, int64(1+ln.job.Render().RetryCount))
	if err != nil {
		return false, fmt.Errorf("count failures of job %d: %w", ln.job.ID, err)
	}
	if total < int64(ln.job.Render().MaxFailures) {
		r := m.Tiles
		ln.env.log.Warn("tile failure: metatile skipped", "task", t.ID, "layer", t.Layer, "z", r.Z,
			"x", fmt.Sprintf("%d..%d", r.MinX, r.MaxX), "y", fmt.Sprintf("%d..%d", r.MinY, r.MaxY),
			"failures", total, "budget", ln.job.Render().MaxFailures, "err", cause)
		return false, nil
	}
	ln.env.log.Error("job aborted: too many tile failures", "job", ln.job.ID, "layer", ln.job.Layer, "failures", total, "err", cause)
	reason := fmt.Sprintf("job %d aborted: %d tile failures reached its budget of %d (maxFailureCount); last: %s", ln.job.ID, total, ln.job.Render().MaxFailures, metatileFailure(m, cause))
	for id := ln.job.ID; id < ln.job.ID+int64(ln.job.Lanes); id++ {
		if id == t.ID {
			continue
		}
		other, err := ln.env.tasks.Get(ctx, id)
		if err != nil {
			return false, fmt.Errorf("abort job %d: %w", ln.job.ID, err)
		}
		if other.Status.Active() {
			_, err := ln.env.tasks.Kill(ctx, id, other.Status, time.Now())
			if err != nil && !apperr.Is(err, apperr.Conflict) {
				return false, fmt.Errorf("abort task %d: %w", id, err)
			}
			if err == nil {
				recordFailure(ctx, ln.env.tasks, ln.env.log, other, reason)
			}
		}
	}
	ln.settle(ctx, true, "")
	recordFailure(ctx, ln.env.tasks, ln.env.log, t, reason)
	return true, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
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
	tries := 1 + max(ln.job.Render().RetryCount, 0)
	var err error
	for try := range tries {
		if try > 0 {
			select {
			case <-rctx.Done():
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return outOfTime()
			case <-time.After(time.Duration(ln.job.Render().RetryWaitMS) * time.Millisecond):
			}
		}
		err = ln.w.Render(rctx, m)
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
