// The task poll of this process's working lanes: every KillCheckEvery it
// reads the tasks of all of them, in one request where the task store can,
// and hands each lane its task (see watchLane).

package seed

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"tilecache/internal/task"
)

// taskBatchReader is a task store that reads several tasks in one request
// (the DynamoDB store's BatchGetItem); missing tasks are left out.
type taskBatchReader interface {
	GetMany(ctx context.Context, ids []int64) (map[int64]task.Task, error)
}

// pollStore is what the poll does with the task store: read a task, and
// heartbeat a busy lane's (see watchLane).
type pollStore interface {
	Get(ctx context.Context, id int64) (task.Task, error)
	Checkpoint(ctx context.Context, cp task.Checkpoint, now time.Time) (task.Task, error)
}

// taskPoll polls the tasks of this process's working lanes every every
// through tasks; the zero value of its state is idle.
type taskPoll struct {
	tasks   pollStore
	every   time.Duration
	log     *slog.Logger
	mu      sync.Mutex
	subs    map[*taskSub]struct{}
	running bool
	wake    chan struct{} // the last lane left: the loop may end now
}

// taskSub is one lane's subscription: c holds the latest read of its task.
type taskSub struct {
	id  int64
	ctx context.Context
	c   chan task.Task
}

// watchTask subscribes a working lane to the poll of task id; reads for it
// stop with ctx. Call the returned function to unsubscribe.
func (p *taskPoll) watchTask(ctx context.Context, id int64) (*taskSub, func()) {
	sub := &taskSub{id: id, ctx: ctx, c: make(chan task.Task, 1)}
	p.mu.Lock()
	if p.subs == nil {
		p.subs = map[*taskSub]struct{}{}
		p.wake = make(chan struct{}, 1)
	}
	p.subs[sub] = struct{}{}
	if !p.running {
		p.running = true
		go p.pollTasks(context.WithoutCancel(ctx))
	}
	p.mu.Unlock()
	return sub, func() {
		p.mu.Lock()
		delete(p.subs, sub)
		if len(p.subs) == 0 {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
		p.mu.Unlock()
	}
}

// pollTasks reads the subscribed tasks every KillCheckEvery until no lane
// is subscribed. ctx carries values only; each read is bounded.
func (p *taskPoll) pollTasks(ctx context.Context) {
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-p.wake:
		}
		p.mu.Lock()
		if len(p.subs) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		subs := make([]*taskSub, 0, len(p.subs))
		for s := range p.subs {
			subs = append(subs, s)
		}
		p.mu.Unlock()
		p.readTasks(ctx, subs)
	}
}

// readTasks reads the tasks of subs and hands each its own. A failed read
// hands nothing: the lanes' own writes report a store that fails.
func (p *taskPoll) readTasks(ctx context.Context, subs []*taskSub) {
	hand := func(s *taskSub, t task.Task) {
		select { // only this loop sends: after the drain the send cannot block
		case <-s.c:
		default:
		}
		s.c <- t
	}
	if br, ok := p.tasks.(taskBatchReader); ok && len(subs) > 1 {
		ids := make([]int64, len(subs))
		for i, s := range subs {
			ids[i] = s.id
		}
		rctx, cancel := context.WithTimeout(ctx, 5*p.every)
		defer cancel()
		got, err := br.GetMany(rctx, ids)
		if err != nil {
			// Warn: while the reads fail, no lane of this process sees
			// a kill (a denied BatchGetItem would otherwise go unseen).
			p.log.Warn("kill watch: read the tasks of the working lanes", "lanes", len(ids), "err", err)
			return
		}
		for _, s := range subs {
			if t, ok := got[s.id]; ok {
				hand(s, t)
			}
		}
		return
	}
	for _, s := range subs {
		t, err := p.tasks.Get(s.ctx, s.id)
		if err != nil {
			if s.ctx.Err() == nil {
				p.log.Warn("kill watch: read the task of a working lane", "task", s.id, "err", err)
			}
			continue
		}
		hand(s, t)
	}
}
