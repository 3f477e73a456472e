package seed

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/metatile"
	"tilecache/internal/task"
)

// failureRecorder is the part of a task store that keeps why tasks
// failed (task.FailureStore); a store without it records nothing.
type failureRecorder interface {
	RecordFailure(ctx context.Context, f task.Failure) error
}

// recordFailure records why task t ends ABORTED, in store when it keeps
// failures. It runs in the lane's write context, and a failure to record
// is logged, never returned: the task's end must not depend on it.
func recordFailure(ctx context.Context, store any, log *slog.Logger, t task.Task, reason string) {
	r, ok := store.(failureRecorder)
	if !ok {
		return
	}
	f := task.Failure{ID: t.ID, JobID: t.JobID, Layer: t.Layer, Type: t.Type, Reason: reason,
		At: time.Now().UTC(), Done: t.Done, Total: t.Total}
	if err := r.RecordFailure(metatile.WriteContext(ctx), f); err != nil {
		log.Error("record task failure", "task", t.ID, "err", err)
	}
}

// metatileFailure describes a failed metatile and its cause.
func metatileFailure(m grid.Metatile, cause error) string {
	r := m.Tiles
	return fmt.Sprintf("tiles z%d x %d..%d y %d..%d: %v", r.Z, r.MinX, r.MaxX, r.MinY, r.MaxY, cause)
}
