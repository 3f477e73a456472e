package seed

import (
	"context"
	"time"

	"tilecache/internal/metatile"
	"tilecache/internal/quota"
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

// startUsage turns counting on for a writer, reading the block size.
func (e *Engine) startUsage(ctx context.Context, usage *metatile.Tally) error {
	if e.opts.Usage == nil {
		return nil
	}
	cfg, err := e.opts.Usage.QuotaConfig(ctx)
	if err != nil {
		return err
	}
	usage.Start(cfg.DiskBlockSize)
	return nil
}

// settle ends a lane that stopped with uncheckpointed work: a killed
// task's batch is applied directly, anything else marks the layer for a
// recount.
func (e *Engine) settle(ctx context.Context, ln *lane, killed bool, why string) {
	e.settleUsage(ctx, ln.w.Usage, ln.job.Layer, ln.job.ID, killed, why)
}

// settleUsage applies the usage changes a writer of layer (working for
// job, 0 for none) did not hand to a checkpoint when killed, else marks
// the layer for a recount (why).
func (e *Engine) settleUsage(ctx context.Context, usage *metatile.Tally, layer string, job int64, killed bool, why string) {
	defer usage.Reset()
	if !usage.Touched() || e.opts.Usage == nil {
		return
	}
	if killed {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := e.opts.Usage.ApplyDeltas(ctx, usage.Pending(), time.Now())
		if err == nil {
			return
		}
		e.log.Error("apply the usage of a killed lane", "job", job, "layer", layer, "err", err)
	}
	e.markDirty(ctx, layer, why)
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
