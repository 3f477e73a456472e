// The pool: the threads that bound RUNNING tasks, the start of pending
// tasks as threads free, and the resumption of lanes whose worker went
// away.

package seed

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/queue"
	"tilecache/internal/task"
)

// Pool bounds the RUNNING tasks by Options.PoolSize (and a layer's by its
// upstream's share, see laneCap): it promotes PENDING tasks as threads
// free and sends their first lane message (Dispatch), ends a task and
// hands its thread on (finish), sends lane messages (send), and
// re-enqueues the lanes whose worker stopped (Sweep, Recover). It is
// safe for concurrent use.
type Pool struct {
	tasks    task.Store
	queue    queue.Queue
	layers   *layer.Catalogue
	planner  *Planner // the sources of layers, for their upstream's share
	opts     Options
	log      *slog.Logger
	accounts metatile.Accounts
}

// Dispatch promotes PENDING tasks while the pool has free threads and
// sends a lane message for each promoted task.
func (p *Pool) Dispatch(ctx context.Context) ([]task.Task, error) {
	promoted, err := p.tasks.Promote(ctx, p.opts.PoolSize, p.laneCap, time.Now())
	if err != nil {
		return nil, fmt.Errorf("promote pending tasks: %w", err)
	}
	msgs := make([]queue.Message, len(promoted))
	for i, t := range promoted {
		msgs[i] = queue.Message{TaskID: t.ID, Cursor: t.Cursor}
		p.log.Info("task started", "task", t.ID, "layer", t.Layer, "type", t.Type.String())
	}
	if err := p.send(ctx, msgs); err != nil {
		return promoted, err
	}
	return promoted, nil
}

func (p *Pool) send(ctx context.Context, msgs []queue.Message) error {
	for len(msgs) > 0 {
		n := min(len(msgs), queue.MaxBatch)
		if err := p.queue.Send(ctx, msgs[:n]...); err != nil {
			return fmt.Errorf("send %d lane messages: %w", n, err)
		}
		msgs = msgs[n:]
	}
	return nil
}

// finish ends a RUNNING task and hands its thread to the next pending task.
// It runs in a write context: a lane's caller may be cancelled meanwhile,
// and the dispatch must still go out.
func (p *Pool) finish(ctx context.Context, t task.Task, status task.Status) error {
	ctx = metatile.WriteContext(ctx)
	done, err := p.tasks.Finish(ctx, t.ID, status, time.Now())
	if apperr.Is(err, apperr.Conflict) {
		return nil // killed meanwhile, or finished by a duplicate
	}
	if err != nil {
		return fmt.Errorf("finish task %d: %w", t.ID, err)
	}
	p.log.Info("task finished", "task", t.ID, "layer", t.Layer, "status", status.String(), "tiles", done.Done)
	if _, err := p.Dispatch(ctx); err != nil {
		p.log.Error("dispatch after finish", "task", t.ID, "err", err)
	}
	return nil
}

// Recover re-enqueues every RUNNING task at its checkpoint and dispatches
// pending ones. The embedded backend calls it at start-up, because its
// in-process queue did not survive the previous process.
func (p *Pool) Recover(ctx context.Context) error {
	return p.sweep(ctx, 0)
}

// Sweep re-enqueues RUNNING tasks whose heartbeat is older than
// StaleAfter, and dispatches pending tasks whose threads may have freed.
func (p *Pool) Sweep(ctx context.Context) error {
	return p.sweep(ctx, p.opts.StaleAfter)
}

func (p *Pool) sweep(ctx context.Context, staleAfter time.Duration) error {
	tasks, err := p.tasks.List(ctx, time.Now())
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	now := time.Now()
	var msgs []queue.Message
	for _, t := range tasks {
		if t.Status != task.Running || now.Sub(t.Heartbeat) < staleAfter {
			continue
		}
		// Refresh the heartbeat first so the next sweep does not resend,
		// conditional on the cursor so a live worker's progress wins.
		if _, err := p.tasks.Checkpoint(ctx, task.Checkpoint{ID: t.ID, From: t.Cursor, To: t.Cursor}, now); err != nil {
			if apperr.Is(err, apperr.Conflict) {
				continue
			}
			return fmt.Errorf("sweep task %d: %w", t.ID, err)
		}
		p.log.Warn("lane re-enqueued", "task", t.ID, "cursor", t.Cursor, "heartbeat_age", now.Sub(t.Heartbeat).String())
		msgs = append(msgs, queue.Message{TaskID: t.ID, Cursor: t.Cursor})
		// Its worker may have died with tiles stored and not counted.
		p.accounts.MarkDirty(ctx, t.Layer, fmt.Sprintf("lane of task %d re-enqueued", t.ID))
	}
	if err := p.send(ctx, msgs); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if _, err := p.Dispatch(ctx); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// laneCap is the most RUNNING tasks a layer may have (0: no cap; see
// metatile.UpstreamShares).
func (p *Pool) laneCap(layerName string) int {
	l, ok := p.layers.Layer(layerName)
	if !ok {
		return 0
	}
	lanes, _ := metatile.UpstreamShares(l, p.planner.sourceOf(l))
	return lanes
}
