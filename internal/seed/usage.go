package seed

import (
	"context"

	"tilecache/internal/quota"
)

// Usage is what the engine needs to keep disk usage right (implemented by
// the task store adapters; the same as metatile.Usage, which counts it
// through metatile.Accounts). With Options.Usage nil the engine counts
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
