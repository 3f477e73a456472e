package dynamo

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/task"
)

// TestPoolUnderConcurrency promotes from many goroutines at once and checks
// that the pool is never exceeded and no task is promoted twice.
func TestPoolUnderConcurrency(t *testing.T) {
	testClient(t)
	s := newShared(t).store(t)
	ctx := t.Context()
	now := time.Now()
	const pool, tasks, workers = 3, 20, 10
	if _, _, err := s.Create(ctx, task.Job{Header: task.Header{Layer: "a"}}, lanes(tasks), now); err != nil {
		t.Fatal(err)
	}
	// Phase 1: everybody promotes at once.
	var mu sync.Mutex
	promoted := map[int64]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			p, err := s.Promote(ctx, pool, nil, now)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, tk := range p {
				promoted[tk.ID]++
			}
		})
	}
	wg.Wait()
	if len(promoted) != pool {
		t.Fatalf("got %d tasks promoted (%v), want %d", len(promoted), promoted, pool)
	}
	if n, err := s.Running(ctx); err != nil || n != pool {
		t.Fatalf("pool count %d, %v; want %d", n, err, pool)
	}
	all, err := s.List(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, tk := range all {
		if tk.Status == task.Running {
			running++
			if promoted[tk.ID] != 1 {
				t.Errorf("task %d RUNNING but promoted %d times", tk.ID, promoted[tk.ID])
			}
		}
	}
	if running != pool {
		t.Fatalf("List shows %d RUNNING, want %d", running, pool)
	}
	// Phase 2: workers promote and finish until everything is done, while a
	// monitor watches the pool count.
	stop := make(chan struct{})
	var peak atomic.Int64
	var monitor sync.WaitGroup
	monitor.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := s.Running(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if n > peak.Load() {
				peak.Store(n)
			}
		}
	})
	finish := func(id int64) {
		tk, err := s.Get(ctx, id)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := s.Checkpoint(ctx, task.Checkpoint{ID: id, From: tk.Cursor, To: tk.End, Tiles: tk.Total - tk.Done}, now); err != nil {
			t.Error(err)
		}
		if _, err := s.Finish(ctx, id, task.Done, now); err != nil {
			t.Error(err)
		}
	}
	mu.Lock()
	first := make([]int64, 0, len(promoted))
	for id := range promoted {
		first = append(first, id)
	}
	mu.Unlock()
	var done atomic.Int64
	for i := range workers {
		wg.Go(func() {
			if i < len(first) {
				finish(first[i])
				done.Add(1)
			}
			for done.Load() < tasks && !t.Failed() {
				p, err := s.Promote(ctx, pool, nil, now)
				if err != nil {
					t.Error(err)
					return
				}
				for _, tk := range p {
					mu.Lock()
					promoted[tk.ID]++
					mu.Unlock()
					finish(tk.ID)
					done.Add(1)
				}
				if len(p) == 0 {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	monitor.Wait()
	if peak.Load() > pool {
		t.Fatalf("pool count reached %d, above the pool of %d", peak.Load(), pool)
	}
	if len(promoted) != tasks {
		t.Fatalf("got %d tasks promoted, want %d", len(promoted), tasks)
	}
	for id, n := range promoted {
		if n != 1 {
			t.Errorf("task %d promoted %d times", id, n)
		}
	}
	if n, err := s.Running(ctx); err != nil || n != 0 {
		t.Fatalf("pool count at the end %d, %v; want 0", n, err)
	}
	t.Logf("peak pool count %d of %d", peak.Load(), pool)
}
