// The worker: lane messages received, who works a lane decided, the lane
// built and run, its task finished or continued.

package seed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/area"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/metrics"
	"tilecache/internal/queue"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Worker works lane messages: it takes a task's lease, works its lane
// for a slice of time with checkpoints (see lane), and finishes the task
// or sends the lane's continuation through the pool. A deleted layer's
// truncation is worked by Truncation. It is safe for concurrent use.
type Worker struct {
	layers      *layer.Catalogue
	planner     *Planner // the sources of layers, and the rates its lanes measure
	tasks       task.Store
	queue       queue.Queue
	tiles       tilestore.Store
	pool        *Pool
	trunc       *Truncation
	opts        Options
	log         *slog.Logger
	accounts    metatile.Accounts // where lanes' usage is counted
	docs        docKeeper
	working     *working  // the lanes worked here: progress and widths
	poll        *taskPoll // the tasks of the lanes working here, read for kills
	areas       areaCache // the areas of requests read here
	definitions sync.Map  // layer Version → *layer.Layer: recorded definitions of jobs' layers
}

// Work handles one lane message, delivered for the attempt-th time (1 for
// the first delivery). It returns nil when the message is finished with
// (worked, continued, or stale) and should be acked, and an error when it
// should be delivered again.
//
// A message is worked only by the worker that takes the task's lease: a
// duplicate, a redelivery while the lane's worker is alive, and a sweep's
// re-enqueue of a lane that turns out busy all find the lease held and are
// dropped. The lease lapses TakeoverAfter (5 × CheckpointEvery) after its
// holder's last heartbeat, so the redelivery of a dead worker's message —
// at least a visibility timeout later — takes the lane over.
func (w *Worker) Work(ctx context.Context, msg queue.Message, attempt int) error {
	t, err := w.tasks.Get(ctx, msg.TaskID)
	if apperr.Is(err, apperr.NotFound) {
		w.log.Warn("lane message for an unknown task dropped", "task", msg.TaskID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("load task %d: %w", msg.TaskID, err)
	}
	if !ownsLane(t, msg) {
		return nil
	}
	owner, previous := leaseToken(), t.Owner
	t, err = w.tasks.Acquire(ctx, t.ID, owner, w.opts.takeoverAfter(), time.Now())
	if apperr.Is(err, apperr.Conflict) || apperr.Is(err, apperr.NotFound) {
		w.log.Info("lane message dropped: the lane is worked by a live worker, or ended", "task", msg.TaskID, "cursor", msg.Cursor, "reason", err.Error())
		return nil
	}
	if err != nil {
		return fmt.Errorf("take the lease of task %d: %w", msg.TaskID, err)
	}
	// An export stores no tiles: nothing to recount when it is taken over.
	if t.Type == task.Export {
		job, err := w.tasks.Job(ctx, t.JobID)
		if err != nil {
			return fmt.Errorf("load job %d: %w", t.JobID, err)
		}
		return w.runExport(ctx, t, job, owner)
	}
	if previous != "" {
		// The lease of a worker that stopped without giving it up lapsed:
		// that worker may have stored tiles after its last checkpoint and
		// died before counting them. (A lane released by its checkpoint,
		// or revoked by the sweep, which marks the layer itself, has no
		// holder; a redelivery of such a lane loses nothing.)
		w.accounts.MarkDirty(ctx, t.Layer, fmt.Sprintf("lane of task %d taken over from a stopped worker", t.ID))
	}
	if t.Type == task.Import {
		return w.runImport(ctx, t, owner, attempt) // importjob.go
	}
	if t.Type == task.Truncate {
		job, err := w.tasks.Job(ctx, t.JobID)
		if err != nil {
			return fmt.Errorf("load job %d: %w", t.JobID, err)
		}
		if job.LayerDeletion() {
			return w.trunc.runDeletion(ctx, t, job, owner)
		}
	}
	ln, err := w.lane(ctx, t, owner)
	if err != nil {
		if apperr.Is(err, apperr.Invalid) {
			w.log.Error("task aborted", "task", t.ID, "layer", t.Layer, "err", err)
			recordFailure(ctx, w.tasks, w.log, t, "the request can no longer be worked: "+err.Error())
			return w.pool.finish(ctx, t, task.Aborted)
		}
		return err
	}
	if err := w.accounts.Start(ctx, ln.w.Usage); err != nil {
		return fmt.Errorf("task %d: read the disk block size: %w", t.ID, err)
	}
	end, err := ln.run(ctx)
	if err != nil {
		return err
	}
	switch {
	case end.finish:
		if end.status == task.Done {
			w.docs.describeStored(ctx, ln.job)
		}
		return w.pool.finish(ctx, ln.t, end.status)
	case len(end.next) > 0:
		if err := w.pool.send(metatile.WriteContext(ctx), end.next); err != nil {
			return fmt.Errorf("continue task %d: %w", ln.t.ID, err)
		}
	}
	return nil
}

// ownsLane decides whether a lane message may be worked, before its lease
// is sought: the task must be RUNNING, and the message at its cursor (the
// lane's current message) or behind it (a redelivery, a duplicate or a
// sweep's re-enqueue: whoever takes the lease works from the stored
// cursor). A message ahead of the cursor is not of this lane's history.
func ownsLane(t task.Task, msg queue.Message) bool {
	return t.Status == task.Running && msg.Cursor <= t.Cursor
}

// Handle is the one intake of a delivered lane message, for every way a
// message arrives: RunWorkers calls it for each message it receives, and
// the worker function (app.Program.HandleSQS) for each record of its SQS
// event. It records the lane's lag (the time since d.Sent, when known),
// works the message (Work, as delivery d.Attempt) and turns a panic there
// into an error, so that whatever goes wrong stops this lane only.
//
// It returns nil when the message is finished with and is to be acked
// (worked, continued, stale or dropped), and an error when it is to be
// delivered again (and, failing again and again, dead-lettered by the
// queue's redrive policy). A failure or panic is logged here, with the
// panic's stack; a failure because ctx was cancelled (the process stops)
// is not.
//
// d.Message is valid: bodies are decoded, and poison refused, by the
// queue's one reader (queue.DecodeMessage) before there is a delivery.
func (w *Worker) Handle(ctx context.Context, d queue.Delivery) (err error) {
	if !d.Sent.IsZero() {
		metrics.LaneLag.Observe(ctx, max(time.Since(d.Sent), 0).Seconds())
	}
	defer func() {
		r := recover()
		switch {
		case r != nil:
			err = fmt.Errorf("lane of task %d panicked: %v", d.Message.TaskID, r)
			w.log.Error("lane work panicked; message will be redelivered", "task", d.Message.TaskID, "cursor", d.Message.Cursor,
				"attempt", d.Attempt, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		case err != nil && !errors.Is(err, context.Canceled):
			w.log.Error("lane work failed; message will be redelivered", "task", d.Message.TaskID, "cursor", d.Message.Cursor,
				"attempt", d.Attempt, "err", err)
		}
	}()
	// What no stage of the lane's claims is its bookkeeping (profiles).
	return metrics.Stage(ctx, metrics.StageBookkeeping, func(ctx context.Context) error { return w.Work(ctx, d.Message, d.Attempt) })
}

// RunWorkers receives lane messages and works them with n concurrent
// workers until ctx ends. Each message's visibility is extended while it
// is worked (Handle); a message Handle finished with is acked, and one
// whose work failed is left to be delivered again.
func (w *Worker) RunWorkers(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				ds, err := w.queue.Receive(ctx, 1, 20*time.Second, w.opts.Visibility)
				if err != nil {
					if ctx.Err() == nil {
						w.log.Error("receive lane messages", "err", err)
						sleep(ctx, time.Second)
					}
					continue
				}
				for _, d := range ds {
					w.handleReceived(ctx, d)
				}
			}
		})
	}
	wg.Wait()
}

// handleReceived is Handle of a message RunWorkers received, keeping it
// invisible meanwhile, and its ack when Handle finished with it.
func (w *Worker) handleReceived(ctx context.Context, d queue.Delivery) {
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { // keep the message invisible while it is worked
		tick := time.NewTicker(w.opts.Visibility / 3)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
				if err := w.queue.Extend(wctx, d, w.opts.Visibility); err != nil && wctx.Err() == nil {
					w.log.Warn("extend lane message", "task", d.Message.TaskID, "err", err)
				}
			}
		}
	})
	err := w.Handle(wctx, d)
	stop()
	wg.Wait()
	if err != nil {
		return // Handle logged it; the message is delivered again
	}
	if err := w.queue.Ack(ctx, d); err != nil && ctx.Err() == nil {
		w.log.Warn("ack lane message", "task", d.Message.TaskID, "err", err)
	}
}

// Working reports whether a lane of task id works in this process now. A
// killed task's lane, once it is not, has recorded its last count: the
// task's counters no longer move.
func (w *Worker) Working(id int64) bool {
	_, ok := w.working.progress(id)
	return ok
}

// laneEnv returns the environment of the lanes this engine runs.
func (w *Worker) laneEnv() laneEnv {
	return laneEnv{tasks: w.tasks, opts: w.opts, log: w.log, accounts: w.accounts,
		working: w.working, poll: w.poll, rates: w.planner.rates, changes: w.opts.Changes}
}

// jobPlan numbers job's metatiles again as its request did: its layer,
// grid subset and plan. Invalid when the layer changed so that the job
// cannot be worked any more (what names the job in the message:
// "request", "export").
func (w *Worker) jobPlan(ctx context.Context, job task.Job, what string) (*layer.Layer, *grid.Subset, *grid.Plan, error) {
	rng := job.Range()
	l, err := w.jobLayer(job)
	if err != nil {
		return nil, nil, nil, err
	}
	sub, ok := l.Subset(rng.GridSetID)
	if !ok {
		return nil, nil, nil, apperr.Invalidf("layer %s no longer has grid set %s", job.Layer, rng.GridSetID)
	}
	var given grid.Area
	if rng.Area != "" {
		if given, err = w.area(ctx, rng.Area, sub.GridSet); err != nil {
			return nil, nil, nil, err
		}
	}
	plan, err := planJob(sub, job.ID, rng, jobArea(l, sub, given))
	if err != nil {
		return nil, nil, nil, err
	}
	if plan.Metatiles() != job.Metatiles || plan.Tiles() != job.Tiles {
		return nil, nil, nil, apperr.Invalidf("layer %s changed since the %s was planned", job.Layer, what)
	}
	return l, sub, plan, nil
}

// lane loads what task t's lane needs; Invalid when the layer changed so
// that the lane cannot be worked any more.
func (w *Worker) lane(ctx context.Context, t task.Task, owner string) (*lane, error) {
	job, err := w.tasks.Job(ctx, t.JobID)
	if err != nil {
		return nil, fmt.Errorf("load job %d: %w", t.JobID, err)
	}
	rng := job.Range()
	l, sub, plan, err := w.jobPlan(ctx, job, "request")
	if err != nil {
		return nil, err
	}
	src := w.planner.sourceOf(l)
	if src == nil && job.Type != task.Truncate {
		return nil, apperr.Invalidf("layer %s has no source", l.Name)
	}
	set := metatile.TileSet(w.opts.KeyPrefix, l, rng.GridSetID, rng.Format, rng.ParametersID)
	ln := &lane{env: w.laneEnv(), job: job, layer: l, subset: sub, plan: plan, t: t, owner: owner}
	mode := metatile.Seed
	if job.Type == task.Reseed {
		mode = metatile.Reseed
	}
	ln.w = &metatile.Writer{
		Tiles: truncationTiles{w.tiles}, Log: w.log, PutConcurrency: w.opts.PutConcurrency,
		Layer: l, Subset: sub, Set: set, Source: src, Format: rng.Format, Parameters: rng.Parameters,
		Mode: mode, EmptyLevels: job.Render().EmptyLevels, By: "seed",
		Ahead: ln.ahead, Usage: metatile.NewTally(set, rng.MetaWidth, rng.MetaHeight),
	}
	if ch := ln.env.changes; ch != nil {
		ln.w.Changed = ch.TilesChanged
	}
	return ln, nil
}

// jobLayer returns the definition of job's layer the job started with:
// the current one when it has not changed, the recorded one otherwise.
func (w *Worker) jobLayer(job task.Job) (*layer.Layer, error) {
	rng := job.Range()
	l, ok := w.layers.Layer(job.Layer)
	if ok && (rng.LayerVersion == "" || l.Version == rng.LayerVersion) {
		return l, nil
	}
	if rng.Definition == "" {
		if !ok {
			return nil, apperr.Invalidf("layer %s is no longer configured", job.Layer)
		}
		return l, nil
	}
	if v, ok := w.definitions.Load(rng.LayerVersion); ok {
		return v.(*layer.Layer), nil
	}
	rec, err := layer.ParseDefinition([]byte(rng.Definition), job.Layer)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "job %d: %v", job.ID, err)
	}
	w.definitions.Store(rng.LayerVersion, rec)
	return rec, nil
}

// area returns the area stored under key for grid set g.
func (w *Worker) area(ctx context.Context, key string, g *grid.GridSet) (grid.Area, error) {
	c := &w.areas
	c.mu.Lock()
	s, ok := c.shapes[key+"\x00"+g.ID]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	data, _, found, err := w.tiles.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read the request's area %s: %w", key, err)
	}
	if !found {
		return nil, apperr.Invalidf("the request's area %s is missing from the store", key)
	}
	if area.IsTileList(data) {
		s, err = area.UnmarshalTileList(data, g)
	} else {
		s, err = area.Unmarshal(data, g)
	}
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "read the request's area %s", key)
	}
	c.mu.Lock()
	if c.shapes == nil || len(c.shapes) >= areaCacheMax {
		c.shapes = map[string]grid.Area{}
	}
	c.shapes[key+"\x00"+g.ID] = s
	c.mu.Unlock()
	return s, nil
}
