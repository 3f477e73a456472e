package dynamo

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/task"
)

// TestPoolUnderConcurrency promotes from many goroutines at once and checks
// that the pool is never exceeded and no task is promoted twice.
func TestPoolUnderConcurrency(t *testing.T) {
	dynamotest.Client(t)
	s := newShared(t).store(t)
	now := time.Now()
	const pool, tasks, workers = 3, 20, 10
	if _, _, err := s.Create(t.Context(), task.Job{Header: task.Header{Layer: "a"}}, lanes(tasks), now); err != nil {
		t.Fatal(err)
	}
	// Phase 1: everybody promotes at once.
	promoted := promoteAtOnce(t, s, pool, workers, now)
	// Phase 2: workers promote and finish until everything is done, while a
	// monitor watches the pool count.
	peak := watchPool(t, s)
	promoteUntilDone(t, s, pool, tasks, workers, promoted, now)
	if p := peak(); p > pool {
		t.Fatalf("pool count reached %d, above the pool of %d", p, pool)
	} else {
		t.Logf("peak pool count %d of %d", p, pool)
	}
	if len(promoted) != tasks {
		t.Fatalf("got %d tasks promoted, want %d", len(promoted), tasks)
	}
	for id, n := range promoted {
		if n != 1 {
			t.Errorf("task %d promoted %d times", id, n)
		}
	}
	if n, err := s.Running(t.Context()); err != nil || n != 0 {
		t.Fatalf("pool count at the end %d, %v; want 0", n, err)
	}
}

// promoteAtOnce promotes from workers goroutines at once and checks that
// pool tasks were promoted, each once, and are RUNNING; it returns how
// many times each task was promoted.
func promoteAtOnce(t *testing.T, s *adapters, pool, workers int, now time.Time) map[int64]int {
	t.Helper()
	ctx := t.Context()
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
	if n, err := s.Running(ctx); err != nil || n != int64(pool) {
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
	return promoted
}

// watchPool reads the pool count over and over until the returned
// function is called; that returns the highest count read.
func watchPool(t *testing.T, s *adapters) (peak func() int64) {
	t.Helper()
	stop := make(chan struct{})
	var high atomic.Int64
	var monitor sync.WaitGroup
	monitor.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := s.Running(t.Context())
			if err != nil {
				t.Error(err)
				return
			}
			if n > high.Load() {
				high.Store(n)
			}
		}
	})
	return func() int64 {
		close(stop)
		monitor.Wait()
		return high.Load()
	}
}

// promoteUntilDone finishes the tasks promoted (all RUNNING) from workers
// goroutines, which promote and finish more until all tasks are done,
// counting the promotions in promoted. A worker that finds nothing to
// promote (the pool full) waits for another to finish a task.
func promoteUntilDone(t *testing.T, s *adapters, pool, tasks, workers int, promoted map[int64]int, now time.Time) {
	t.Helper()
	ctx := t.Context()
	var mu sync.Mutex // of promoted and finished
	// finished is closed, and replaced, each time a task is finished.
	finished := make(chan struct{})
	nextFinish := func() <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		return finished
	}
	var done atomic.Int64
	finish := func(id int64) {
		defer func() {
			done.Add(1)
			mu.Lock()
			close(finished)
			finished = make(chan struct{})
			mu.Unlock()
		}()
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
	first := make([]int64, 0, len(promoted))
	for id := range promoted {
		first = append(first, id)
	}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			if i < len(first) {
				finish(first[i])
			}
			for done.Load() < int64(tasks) && !t.Failed() {
				wake := nextFinish()
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
				}
				if len(p) == 0 {
					select {
					case <-wake:
					case <-ctx.Done():
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
