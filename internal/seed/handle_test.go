package seed_test

// Tests of Worker.Handle, the one intake of lane messages that RunWorkers
// and the worker function (app.Program.HandleSQS) share: the panic
// recovery, the lane-lag metric, and the ack or redelivery that follows
// from what Handle returns.

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/metrics"
	"tilecache/internal/queue"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/seed"
	"tilecache/internal/state/bolt"
	"tilecache/internal/task"
)

// panickyTasks is a task store whose next panics Gets panic, as a bug
// anywhere under Work would: nothing real can be made to panic there.
type panickyTasks struct {
	task.Store
	panics atomic.Int32
}

func (s *panickyTasks) Get(ctx context.Context, id int64) (task.Task, error) {
	if s.panics.Add(-1) >= 0 {
		panic("boom: a bug under Work")
	}
	return s.Store.Get(ctx, id)
}

// newHandleEngine returns an engine on an empty task store whose first
// panics Gets panic, a memqueue, and the engine's log. The lane messages
// of these tests name tasks that do not exist, so neither layers nor
// sources nor tiles are ever reached. Call it inside the bubble.
func newHandleEngine(t *testing.T, panics int32, opts seed.Options) (*seed.Engine, *memqueue.Queue, *handleLog) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tasks := &panickyTasks{Store: db.Tasks()}
	tasks.panics.Store(panics)
	q := memqueue.New()
	logs := &handleLog{}
	return seed.New(nil, nil, tasks, q, nil, opts, slog.New(slog.NewTextHandler(logs, nil))), q, logs
}

// handleLog collects an engine's log lines from many goroutines.
type handleLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *handleLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *handleLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lagRecorder records the values of metrics.LaneLag.
type lagRecorder struct {
	mu     sync.Mutex
	values []float64
}

func (r *lagRecorder) Record(m *metrics.Metric, v float64, _ []string) {
	if m == metrics.LaneLag {
		r.mu.Lock()
		r.values = append(r.values, v)
		r.mu.Unlock()
	}
}

func (r *lagRecorder) take() []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.values
	r.values = nil
	return v
}

func TestHandle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lag := &lagRecorder{}
		var reg metrics.Registry
		defer reg.Install(lag)()
		ctx := metrics.NewContext(t.Context(), &reg)
		e, _, logs := newHandleEngine(t, 1, seed.Options{})
		unknown := queue.Message{TaskID: 77, Cursor: 3}

		// A panic under Work is an error (deliver again), logged once with
		// its stack; the lag is recorded before the work.
		err := e.Worker.Handle(ctx, queue.Delivery{Message: unknown, Attempt: 2, Sent: time.Now().Add(-90 * time.Second)})
		if err == nil || !strings.Contains(err.Error(), "lane of task 77 panicked") {
			t.Errorf("Handle of a panicking lane: got %v, want an error saying the lane of task 77 panicked", err)
		}
		if got := logs.String(); strings.Count(got, "lane work panicked; message will be redelivered") != 1 ||
			!strings.Contains(got, "handle_test.go") || !strings.Contains(got, "attempt=2") {
			t.Errorf("the panic is not logged once with its stack and attempt:\n%.3000s", got)
		}
		if got := lag.take(); len(got) != 1 || got[0] != 90 {
			t.Errorf("LaneLag after a delivery sent 90 s ago: got %v, want [90]", got)
		}

		// The same message again: a task that does not exist is finished
		// with (ack). Without a sent time no lag is recorded.
		if err := e.Worker.Handle(ctx, queue.Delivery{Message: unknown, Attempt: 3}); err != nil {
			t.Errorf("Handle of a message for an unknown task: got %v, want nil (dropped, acked)", err)
		}
		if got := lag.take(); len(got) != 0 {
			t.Errorf("LaneLag after a delivery without a sent time: got %v, want nothing", got)
		}
		// A sent time ahead of the clock (another machine's) is no lag.
		if err := e.Worker.Handle(ctx, queue.Delivery{Message: unknown, Attempt: 1, Sent: time.Now().Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if got := lag.take(); len(got) != 1 || got[0] != 0 {
			t.Errorf("LaneLag of a delivery sent in the future: got %v, want [0]", got)
		}
	})
}

// TestRunWorkersAcksWhatHandleFinishes: RunWorkers leaves a message
// Handle failed (here: panicked) to be delivered again, and acks it once
// Handle is finished with it.
func TestRunWorkersAcksWhatHandleFinishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, q, logs := newHandleEngine(t, 1, seed.Options{Visibility: 3 * time.Second})
		if err := q.Send(t.Context(), queue.Message{TaskID: 77, Cursor: 0}); err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); e.Worker.RunWorkers(ctx, 1) }()

		synctest.Wait() // first delivery: Handle panicked
		if ready, inFlight := q.Len(); ready != 0 || inFlight != 1 {
			t.Errorf("after the panic: %d ready, %d in flight; want the message in flight, unacked", ready, inFlight)
		}
		time.Sleep(3 * time.Second) // its visibility ends: delivered again, dropped, acked
		synctest.Wait()
		if ready, inFlight := q.Len(); ready != 0 || inFlight != 0 {
			t.Errorf("after the redelivery: %d ready, %d in flight; want the message acked", ready, inFlight)
		}
		stop()
		<-done
		if got := logs.String(); !strings.Contains(got, "lane work panicked") || !strings.Contains(got, "lane message for an unknown task dropped") {
			t.Errorf("log: want the panic, then the drop of the redelivery:\n%.3000s", got)
		}
	})
}
