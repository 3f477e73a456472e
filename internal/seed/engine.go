// Package seed plans seed, reseed and truncate requests into lanes over
// numbered metatiles, bounds running tasks with a global thread pool, and
// works lanes from queue messages.
//
// The flow: Control.Submit validates a request (Planner.Prepare), records
// one task per lane and calls Pool.Dispatch, which promotes the oldest
// PENDING tasks while the pool has free threads and sends one lane message
// per promoted task. Every lane message comes in through Worker.Handle (the
// worker processes' RunWorkers and the Lambda worker alike), which works it
// (Work) for a bounded slice of time, checkpointing its cursor at least
// every CheckpointEvery; then it either finishes the task (Pool.finish,
// which dispatches again, since a thread freed) or sends the continuation
// message. Because a checkpoint is a conditional write on the expected
// cursor and status RUNNING, a duplicated or redelivered message and a
// killed task both end at the next checkpoint without double counting.
// Pool.Sweep re-enqueues RUNNING tasks whose heartbeat went stale (a worker
// died between checkpoint and continuation). Every deletion of stored
// objects goes through Truncation.
package seed

import (
	"log/slog"

	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/queue"
	"tilecache/internal/source"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Engine is the seeding engine, in the parts New wires together, each
// safe for concurrent use:
//
//   - Control takes requests and answers for tasks: submit, list, kill
//     (the REST API's seeding side, with Truncation's mass truncation and
//     layer deletion);
//   - Pool bounds the RUNNING tasks: it starts pending ones as threads
//     free and resumes lanes whose worker stopped;
//   - Worker works lane messages: a slice of a lane at a time, its
//     checkpoints, and its continuation;
//   - Truncation is every deletion of stored objects;
//   - Planner plans requests without recording anything (Control submits
//     what it plans; its rates are those of the lanes Worker works here).
type Engine struct {
	Control    *Control
	Pool       *Pool
	Worker     *Worker
	Truncation *Truncation
	Planner    *Planner
	opts       Options
}

// New returns an engine. sources maps every layer name of layers to the
// source its tiles are rendered from (unless Options.SourceOf is set).
func New(layers *layer.Catalogue, sources map[string]source.Source, tasks task.Store, q queue.Queue, tiles tilestore.Store, opts Options, log *slog.Logger) *Engine {
	opts = opts.withDefaults()
	if opts.Visibility <= opts.takeoverAfter() {
		// A redelivered message finds the dead worker's lease still held
		// and is dropped (see Worker.Work): only Sweep resumes the lane.
		log.Warn("a lane whose worker dies waits for the stale sweep: lane messages are visible again before its lease lapses "+
			"(make the lane visibility longer than 5 checkpoint intervals)",
			"lane_visibility", opts.Visibility.String(), "lease", opts.takeoverAfter().String(), "stale_after", opts.StaleAfter.String())
	}
	accounts := metatile.Accounts{Usage: opts.Usage, Log: log}
	docs := docKeeper{docs: opts.Documents, changes: opts.Changes, log: log}
	planner := NewPlanner(layers, sources, tiles, opts.planner(), log)
	working := &working{}
	pool := &Pool{tasks: tasks, queue: q, layers: layers, planner: planner, opts: opts, log: log, accounts: accounts}
	trunc := &Truncation{layers: layers, tasks: tasks, tiles: tiles, pool: pool, opts: opts, log: log, accounts: accounts, docs: docs}
	return &Engine{
		Control: &Control{planner: planner, tasks: tasks, tiles: tiles, pool: pool, working: working,
			opts: opts, log: log, accounts: accounts, docs: docs},
		Pool: pool,
		Worker: &Worker{layers: layers, planner: planner, tasks: tasks, queue: q, tiles: tiles, pool: pool, trunc: trunc,
			opts: opts, log: log, accounts: accounts, docs: docs, working: working,
			poll: &taskPoll{tasks: tasks, every: opts.KillCheckEvery, log: log}},
		Truncation: trunc,
		Planner:    planner,
		opts:       opts,
	}
}

// Options returns the effective options.
func (e *Engine) Options() Options { return e.opts }
