// What a lane works with. A lane holds no engine: it reads and writes its
// task through the task store, counts usage through the accounts, reports
// its progress and width to the lanes worked here, and leaves finishing
// its task and sending its continuation to whoever ran it (laneEnd).

package seed

import (
	"context"
	"log/slog"
	"time"

	"tilecache/internal/metatile"
	"tilecache/internal/queue"
	"tilecache/internal/task"
)

// laneEnv is what a lane works with: the task store, narrowed to the calls
// a lane makes, the options, the log, and the parts of this process that
// outlive one lane (the accounts of usage, the lanes worked here, the kill
// watches' poll, the measured rates, the CDN's purge). The engine builds
// one (Worker.laneEnv).
type laneEnv struct {
	tasks    laneTasks
	opts     Options
	log      *slog.Logger
	accounts metatile.Accounts
	working  *working
	poll     *taskPoll
	rates    *layerRates
	changes  Changes // nil: none
}

// laneTasks is what a lane does with the task store: read its task,
// checkpoint it, and count and act on its job's tile failures.
type laneTasks interface {
	Get(ctx context.Context, id int64) (task.Task, error)
	Checkpoint(ctx context.Context, cp task.Checkpoint, now time.Time) (task.Task, error)
	AddFailures(ctx context.Context, jobID int64, n int64) (int64, error)
	Kill(ctx context.Context, id int64, expect task.Status, now time.Time) (task.Task, error)
	KilledAt(ctx context.Context, id int64, done int64) error
}

// laneEnd is what a lane's run leaves to do once it has returned: finish
// its task with status (the lane ended: done, or aborted by its tile
// failures), or send next (the slice's continuation), or nothing (the lane
// was stopped, or its message is to be delivered again).
type laneEnd struct {
	finish bool
	status task.Status
	next   []queue.Message
}
