package seed

import (
	"context"
	"fmt"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
)

// KillTask terminates task id when it is PENDING or RUNNING, as Kill
// terminates each task of its set: the store's conditional kill, which a
// lane worked in any process notices at its next check. When layer is not
// "", the task must be of that layer. It returns the task as it was
// before the kill, or as it is when it had already finished (killed
// false). An id no task has is NotFound; a task of another layer Invalid.
func (c *Control) KillTask(ctx context.Context, layer string, id int64) (t task.Task, killed bool, err error) {
	t, err = c.tasks.Get(ctx, id)
	if apperr.Is(err, apperr.NotFound) {
		return task.Task{}, false, apperr.New(apperr.NotFound, "Unknown task: %d", id)
	}
	if err != nil {
		return task.Task{}, false, fmt.Errorf("kill task %d: %w", id, err)
	}
	if layer != "" && t.Layer != layer {
		return task.Task{}, false, apperr.Invalidf("Task %d is a task of layer %s, not of %s", id, apperr.Show(t.Layer), apperr.Show(layer))
	}
	for attempt := 0; t.Status.Active(); attempt++ {
		before, err := c.tasks.Kill(ctx, id, t.Status, time.Now())
		if err == nil {
			c.log.Info("task killed", "task", id, "layer", t.Layer, "was", before.Status.String())
			if _, err := c.pool.Dispatch(ctx); err != nil {
				c.log.Error("dispatch after kill", "err", err)
			}
			return before, true, nil
		}
		if !apperr.Is(err, apperr.Conflict) || attempt == 3 {
			return t, false, fmt.Errorf("kill task %d: %w", id, err)
		}
		// The task moved on (promoted or finished) since it was read.
		if t, err = c.tasks.Get(ctx, id); err != nil {
			return t, false, fmt.Errorf("kill task %d: %w", id, err)
		}
	}
	return t, false, nil
}
