package seed

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"tilecache/internal/queue"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// laneEnv is what a lane works with: the two stores, narrowed to the calls
// a lane makes, the options, the log, and the engine it reports back to.
// The engine builds one (Engine.laneEnv); a test of one part of a lane
// (the size lookup, say) can build one of its own.
type laneEnv struct {
	tiles laneTiles
	tasks laneTasks
	opts  Options
	log   *slog.Logger
	host  laneHost
}

// laneTiles is what a lane does with the tile store.
type laneTiles interface {
	Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error
	Stat(ctx context.Context, key string) (obj tilestore.Object, found bool, err error)
	Delete(ctx context.Context, keys []string) (int, error)
	List(ctx context.Context, prefix string, fn func(tilestore.Object) error) error
}

// laneTasks is what a lane does with the task store: read its task,
// checkpoint it, and count and act on its job's tile failures.
type laneTasks interface {
	Get(ctx context.Context, id int64) (task.Task, error)
	Checkpoint(ctx context.Context, cp task.Checkpoint, now time.Time) (task.Task, error)
	AddFailures(ctx context.Context, jobID int64, n int64) (int64, error)
	Kill(ctx context.Context, id int64, expect task.Status, now time.Time) (task.Task, error)
}

// laneHost is what a lane reports back to the engine that runs it. The
// engine keeps what outlives one lane: the tasks worked in this process
// (progress, widths, kill watches), usage that could not be checkpointed,
// the dispatch of freed threads and continuations, rates and changed tiles.
type laneHost interface {
	// track registers a running lane with its live progress (the tiles
	// processed, checkpointed or not); untrack ends that.
	track(ln *lane, progress *atomic.Int64) (untrack func())
	// width is how many metatiles a seed lane of job renders at once.
	width(job int64) int
	// watch returns a context cancelled when the lane's task is killed or
	// its lease lost, and the watch.
	watch(ctx context.Context, ln *lane) (context.Context, *killWatch)
	// settle applies or drops the usage a stopping lane did not
	// checkpoint (see Usage).
	settle(ctx context.Context, ln *lane, killed bool, why string)
	// finish ends the lane's task with status and frees its thread.
	finish(ctx context.Context, t task.Task, status task.Status) error
	// send sends lane messages (a slice's continuation).
	send(ctx context.Context, msgs []queue.Message) error
	// noteRate records that tiles of a layer took d to render and store.
	noteRate(layerName string, tiles int64, d time.Duration)
	// tilesChanged reports replaced or deleted tiles (the CDN's purge).
	tilesChanged(set tilestore.TileSet, z int, minX, maxX int64)
	// describe writes the documents of job's tile set again (a vector
	// tile set's TileJSON lists the layers of its stored tiles).
	describe(ctx context.Context, job task.Job)
}

// laneEnv returns the environment of the lanes this engine runs.
func (e *Engine) laneEnv() laneEnv {
	return laneEnv{tiles: e.tiles, tasks: e.tasks, opts: e.opts, log: e.log, host: e}
}

// track implements laneHost.
func (e *Engine) track(ln *lane, progress *atomic.Int64) (untrack func()) {
	id := ln.t.ID
	e.live.Store(id, progress)
	leave := e.widths.join(ln.job.ID)
	return func() {
		leave()
		e.live.CompareAndDelete(id, progress)
	}
}

// width implements laneHost.
func (e *Engine) width(job int64) int { return e.widths.width(job) }

// watch implements laneHost.
func (e *Engine) watch(ctx context.Context, ln *lane) (context.Context, *killWatch) {
	return e.watchLane(ctx, ln)
}
