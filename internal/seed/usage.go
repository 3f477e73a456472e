package seed

import (
	"context"
	"sync"
	"time"

	"tilecache/internal/quota"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// Usage is what the engine needs to keep disk usage right (implemented by
// the task store adapters). With Options.Usage nil the engine counts
// nothing.
//
// How the engine counts: a lane adds up, in memory, the change of every
// page its stored and deleted tiles fall in (tiles, and bytes rounded up to
// diskBlockSize) and hands the batch to a checkpoint (task.Checkpoint's
// Usage), which applies it atomically with the cursor: a replayed chunk
// fails its checkpoint and counts nothing, and no tile costs a store write
// of its own. The batch rides on the checkpoint that ends the slice or the
// task, or would carry too many pages, or comes usageEvery after the last
// one that carried usage; the checkpoints in between write the cursor
// alone. When a lane stops with work whose usage it could not checkpoint:
//
//   - its task was killed (ABORTED): the tiles stay stored and nobody redoes
//     them, so the batch is applied directly;
//   - anything else (another worker took the lane over, a storage error, a
//     crash, a shutdown): the batch is dropped and the layer is marked for a
//     recount (quota.Cleaner recounts it from a listing once none of its
//     tasks runs), because whoever redoes those metatiles cannot tell the
//     tiles it finds from tiles that were counted.
//
// Layers are also marked when a lane message arrives a second time or takes
// a lane over, when the sweep re-enqueues a lane, and when a request is
// submitted while another active request writes the same tile set (two
// writers of one tile may both count it).
type Usage interface {
	QuotaConfig(ctx context.Context) (quota.Config, error)
	quota.Accounting
}

// tally is a lane's uncheckpointed usage changes.
type tally struct {
	on         bool
	blockSize  int64
	set        tilestore.SetName
	metaPages  int // most pages one metatile touches
	mu         sync.Mutex
	deltas     quota.Deltas
	touched    bool // tiles stored or deleted since the last checkpoint
	oldUnknown bool // sizes of replaced tiles must be learnt (reseed)
}

// newTally returns the tally of a lane of set (metatiles of metaW×metaH).
func newTally(set tilestore.TileSet, metaW, metaH int) *tally {
	pages := func(n int) int { return (n+(1<<quota.PageShift)-2)>>quota.PageShift + 1 }
	return &tally{
		set:       set.SetName,
		metaPages: pages(metaW) * pages(metaH),
		deltas:    make(quota.Deltas),
	}
}

// markTouched records that tiles were (or may have been) changed.
func (a *tally) markTouched() {
	a.mu.Lock()
	a.touched = true
	a.mu.Unlock()
}

// start turns counting on in the current block size.
func (a *tally) start(blockSize int64) { a.on, a.blockSize = true, blockSize }

// stored records a tile stored over an old one (oldSize < 0: there was none).
func (a *tally) stored(z int, x, y, oldSize, newSize int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.touched = true
	if !a.on {
		return
	}
	tiles := int64(1)
	if oldSize >= 0 {
		tiles = 0
	}
	a.deltas.Add(quota.PageOf(a.set, z, x, y), tiles, quota.Blocks(newSize, a.blockSize)-quota.Blocks(max(oldSize, 0), a.blockSize))
}

// deleted records a tile of size bytes deleted.
func (a *tally) deleted(z int, x, y, size int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.on {
		a.deltas.Add(quota.PageOf(a.set, z, x, y), -1, -quota.Blocks(size, a.blockSize))
	}
}

// touch records that a batch works on tile z/x/y's page, so that a batch
// stops before its checkpoint would carry too many pages.
func (a *tally) touch(z int, x, y int64) {
	if a.on {
		a.deltas.Add(quota.PageOf(a.set, z, x, y), 0, 0)
	}
}

// full reports whether one more metatile could take the batch past the
// pages a checkpoint may carry.
func (a *tally) full() bool {
	return a.on && len(a.deltas)+a.metaPages > task.MaxCheckpointPages
}

// room returns how many more metatiles the batch can take before full
// (a large number when usage is not counted).
func (a *tally) room() int64 {
	if !a.on {
		return 1 << 30
	}
	return int64(max(0, (task.MaxCheckpointPages-len(a.deltas))/a.metaPages))
}

// pending returns the batch's changes.
func (a *tally) pending() []quota.PageDelta {
	if !a.on {
		return nil
	}
	return a.deltas.List()
}

// reset forgets the batch (after it was counted, applied or dropped).
func (a *tally) reset() {
	clear(a.deltas)
	a.touched = false
}

// startUsage turns counting on for a lane, reading the block size.
func (e *Engine) startUsage(ctx context.Context, ln *lane) error {
	if e.opts.Usage == nil {
		return nil
	}
	cfg, err := e.opts.Usage.QuotaConfig(ctx)
	if err != nil {
		return err
	}
	ln.tally.start(cfg.DiskBlockSize)
	return nil
}

// settle ends a lane that stopped with uncheckpointed work: a killed
// task's batch is applied directly, anything else marks the layer for a
// recount.
func (e *Engine) settle(ctx context.Context, ln *lane, killed bool, why string) {
	defer ln.tally.reset()
	if !ln.tally.touched || e.opts.Usage == nil {
		return
	}
	if killed {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := e.opts.Usage.ApplyDeltas(ctx, ln.tally.pending(), time.Now())
		if err == nil {
			return
		}
		e.log.Error("apply the usage of a killed lane", "job", ln.job.ID, "layer", ln.job.Layer, "err", err)
	}
	e.markDirty(ctx, ln.job.Layer, why)
}

// markDirty marks a layer for a recount, best-effort (a context of its own:
// ctx may be what ended the lane).
func (e *Engine) markDirty(ctx context.Context, layer, why string) {
	if e.opts.Usage == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := e.opts.Usage.MarkDirty(ctx, []string{layer}); err != nil {
		e.log.Error("mark usage for a recount", "layer", layer, "why", why, "err", err)
		return
	}
	e.log.Info("usage marked for a recount", "layer", layer, "why", why)
}
