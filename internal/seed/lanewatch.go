// The watch of a working lane: a kill or a lost lease cancels its context,
// and its heartbeat (the lease) stays fresh while a render or retry takes
// long.

package seed

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/metatile"
	"tilecache/internal/task"
)

// errLaneKilled is the cause of a lane context cancelled by a kill.
var errLaneKilled = errors.New("task killed")

// errLeaseLost is the cause of a lane context cancelled because another
// worker holds the lane now (or the sweep revoked the lease).
var errLeaseLost = errors.New("lease of the lane lost")

// killWatch polls a working lane's task for a kill.
type killWatch struct {
	stop   context.CancelFunc
	mu     sync.Mutex
	latest task.Task
	// progress is when the lane last wrote its task (start, checkpoint):
	// the watch refreshes the heartbeat only when the lane has not for a
	// while, so the two rarely write the task at once.
	progress atomic.Int64
	// release is set while the lane gives its lease up (its last
	// checkpoint of a slice): no lease is then no loss.
	release atomic.Bool
}

// releasing records that the lane is giving its lease up.
func (w *killWatch) releasing() { w.release.Store(true) }

// checkpointed records that the lane just wrote its heartbeat.
func (w *killWatch) checkpointed() { w.progress.Store(time.Now().UnixNano()) }

func (w *killWatch) last() task.Task {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latest
}

// watchLane returns a context that is cancelled with errLaneKilled when the
// lane of task id under the lease of owner is seen no longer RUNNING, or
// with errLeaseLost when another worker holds its lease (read every
// KillCheckEvery), and the watch; stop ends both. The watch refreshes the
// lease of a lane that has not written it for heartbeat.
func (p *taskPoll) watchLane(ctx context.Context, id int64, owner string, heartbeat time.Duration) (context.Context, *killWatch) {
	lctx, cancel := context.WithCancelCause(ctx)
	lctx = metatile.WithWrites(lctx, ctx)
	done := make(chan struct{})
	w := &killWatch{}
	stopped := make(chan struct{})
	w.stop = func() {
		select {
		case <-stopped:
		default:
			close(stopped)
		}
		<-done
		cancel(nil)
	}
	sub, unwatch := p.watchTask(lctx, id)
	go func() {
		defer close(done)
		defer unwatch()
		for {
			var cur task.Task
			select {
			case <-stopped:
				return
			case <-lctx.Done():
				return
			case cur = <-sub.c: // read every KillCheckEvery (see taskPoll)
			}
			if cur.Status == task.Running && cur.Owner != owner && !w.release.Load() {
				w.mu.Lock()
				w.latest = cur
				w.mu.Unlock()
				p.log.Warn("lane cancelled: its lease is lost", "task", id)
				cancel(errLeaseLost)
				return
			}
			quiet := time.Since(time.Unix(0, w.progress.Load()))
			if cur.Status == task.Running && quiet >= heartbeat && time.Since(cur.Heartbeat) >= heartbeat {
				// A long render or retry: renew the lease so that neither
				// the sweep nor a redelivered message hands the lane to a
				// second worker. Fenced by the lease and conditional on the
				// cursor read, so a checkpoint of the lane in between wins.
				_, err := p.tasks.Checkpoint(lctx, task.Checkpoint{ID: id, From: cur.Cursor, To: cur.Cursor, Owner: owner}, time.Now())
				if err != nil && !apperr.Is(err, apperr.Conflict) && lctx.Err() == nil {
					p.log.Warn("refresh the heartbeat of a busy lane", "task", id, "err", err)
				}
			}
			if cur.Status != task.Running {
				w.mu.Lock()
				w.latest = cur
				w.mu.Unlock()
				p.log.Info("lane cancelled: its task is no longer running", "task", id, "status", cur.Status.String())
				cancel(errLaneKilled)
				return
			}
		}
	}()
	return lctx, w
}
