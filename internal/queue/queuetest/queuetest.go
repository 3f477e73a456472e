// Package queuetest is the conformance suite for queue.Queue adapters, in
// the style of go-cloud's drivertest: the in-process memqueue and the SQS
// adapter run the same tests through Run.
//
// The suite is written so that an SQS-compatible server can pass it:
//   - visibility timeouts that must expire are whole seconds (SQS counts in
//     seconds), and timing checks allow a second of slack;
//   - deliveries are compared as sets, never in order, and a message that
//     should arrive is polled for with repeated Receives, since SQS may
//     return fewer messages than are available;
//   - Ack of a stale handle may succeed or fail with apperr.Conflict, as the
//     port allows.
//
// Subtests run in parallel, each on a fresh, empty queue from newQueue
// (called with the subtest's *testing.T), so newQueue must be safe for
// concurrent use. The whole suite takes a few seconds, mostly waiting for
// visibility timeouts.
package queuetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/queue"
)

const (
	// shortWait is the wait of Receives that poll.
	shortWait = 200 * time.Millisecond
	// visibility is the timeout of messages that tests expect to reappear:
	// whole seconds, SQS's granularity.
	visibility = time.Second
	// slack is how late an SQS-compatible server may make a message visible
	// again.
	slack = time.Second
	// late is how late a call may return on a loaded machine (tests run
	// with -race, in parallel) or from a remote server.
	late = 3 * time.Second
	// longVisibility is the timeout of messages that must not reappear
	// during a test.
	longVisibility = time.Minute
	// deliveryTimeout bounds waiting for messages that should arrive.
	deliveryTimeout = 10 * time.Second
)

// Run runs the conformance suite against the queues newQueue makes.
func Run(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, newQueue func(t *testing.T) queue.Queue)
	}{
		{"RoundTrip", testRoundTrip},
		{"ReceiveAtMostMax", testReceiveAtMostMax},
		{"ReceiveNothing", testReceiveNothing},
		{"Redelivery", testRedelivery},
		{"AckedNeverReappears", testAckedNeverReappears},
		{"Extend", testExtend},
		{"SendTooMany", testSendTooMany},
		{"SendInvalid", testSendInvalid},
		{"ContextEnds", testContextEnds},
		{"Concurrent", testConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.run(t, newQueue)
		})
	}
}

// receiveN polls until n deliveries have arrived and returns them; it fails
// the test if they do not arrive within timeout.
func receiveN(t *testing.T, q queue.Queue, n int, vis, timeout time.Duration) []queue.Delivery {
	t.Helper()
	var got []queue.Delivery
	deadline := time.Now().Add(timeout)
	for len(got) < n {
		if time.Now().After(deadline) {
			t.Fatalf("received %d of %d messages within %v", len(got), n, timeout)
		}
		ds, err := q.Receive(t.Context(), min(queue.MaxBatch, n-len(got)), shortWait, vis)
		if err != nil {
			t.Fatalf("Receive error: %v", err)
		}
		got = append(got, ds...)
	}
	return got
}

// expectNone polls for d and fails the test if anything is delivered. A
// delivery that returns at or after visibleFrom (when the message may
// legitimately be visible again; zero for never) means the test process
// stalled, and skips the test as inconclusive rather than failing it.
func expectNone(t *testing.T, q queue.Queue, d time.Duration, visibleFrom time.Time) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return
		}
		ds, err := q.Receive(t.Context(), queue.MaxBatch, min(left, shortWait), longVisibility)
		if err != nil {
			t.Fatalf("Receive error: %v", err)
		}
		if len(ds) > 0 {
			if !visibleFrom.IsZero() && !time.Now().Before(visibleFrom) {
				inconclusive(t, "Receive returned %+v after the message could be visible again", ds)
			}
			t.Fatalf("Receive: got %+v, want nothing (%v before the end of the quiet period)", ds, time.Until(end))
		}
	}
}

// inconclusive skips a timing test whose process was too slow to judge.
func inconclusive(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Skipf("timing inconclusive, the test process stalled: "+format, args...)
}

func mustSend(t *testing.T, q queue.Queue, msgs ...queue.Message) {
	t.Helper()
	if err := q.Send(t.Context(), msgs...); err != nil {
		t.Fatalf("Send(%d messages) error: %v", len(msgs), err)
	}
}

func mustAck(t *testing.T, q queue.Queue, d queue.Delivery) {
	t.Helper()
	if err := q.Ack(t.Context(), d); err != nil {
		t.Fatalf("Ack(%+v) error: %v", d, err)
	}
}

func messagesOf(ds []queue.Delivery) []queue.Message {
	msgs := make([]queue.Message, len(ds))
	for i, d := range ds {
		msgs[i] = d.Message
	}
	return sorted(msgs)
}

func sorted(msgs []queue.Message) []queue.Message {
	return slices.SortedFunc(slices.Values(msgs), func(a, b queue.Message) int {
		return cmp.Or(cmp.Compare(a.TaskID, b.TaskID), cmp.Compare(a.Cursor, b.Cursor))
	})
}

func testRoundTrip(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	q := newQueue(t)
	sent := []queue.Message{
		{TaskID: 1, Cursor: 0}, // the smallest valid message
		{TaskID: 2, Cursor: 7},
		{TaskID: 42, Cursor: 1<<53 + 1}, // not representable as a float64
		{TaskID: 1<<53 + 1, Cursor: 3},
		{TaskID: math.MaxInt64, Cursor: math.MaxInt64},
	}
	before := time.Now().Add(-2 * time.Second) // SQS stamps in milliseconds, on its own clock
	mustSend(t, q, sent...)
	got := receiveN(t, q, len(sent), longVisibility, deliveryTimeout)
	if msgs, want := messagesOf(got), sorted(sent); !slices.Equal(msgs, want) {
		t.Errorf("received messages: got %+v, want %+v", msgs, want)
	}
	handles := make(map[string]bool)
	for _, d := range got {
		if d.Attempt != 1 {
			t.Errorf("first delivery of %+v: got Attempt %d, want 1", d.Message, d.Attempt)
		}
		if d.Sent.Before(before) || d.Sent.After(time.Now().Add(2*time.Second)) {
			t.Errorf("delivery of %+v: Sent %v, want the time it was sent (the lane's lag)", d.Message, d.Sent)
		}
		if d.Handle == "" || handles[d.Handle] {
			t.Errorf("delivery of %+v: got handle %q, want a non-empty, unique handle", d.Message, d.Handle)
		}
		handles[d.Handle] = true
	}
	for _, d := range got {
		mustAck(t, q, d)
	}
}

func testReceiveAtMostMax(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	for _, max := range []int{1, 3, queue.MaxBatch} {
		t.Run(fmt.Sprintf("max %d", max), func(t *testing.T) {
			t.Parallel()
			q := newQueue(t)
			sent := make([]queue.Message, queue.MaxBatch) // a full batch is accepted
			for i := range sent {
				sent[i] = queue.Message{TaskID: 7, Cursor: int64(i)}
			}
			mustSend(t, q, sent...)
			var got []queue.Delivery
			deadline := time.Now().Add(deliveryTimeout)
			for len(got) < len(sent) && time.Now().Before(deadline) {
				ds, err := q.Receive(t.Context(), max, shortWait, longVisibility)
				if err != nil {
					t.Fatalf("Receive(max %d) error: %v", max, err)
				}
				if len(ds) > max {
					t.Errorf("Receive(max %d): got %d deliveries, want at most %d", max, len(ds), max)
				}
				got = append(got, ds...)
			}
			if msgs, want := messagesOf(got), sorted(sent); !slices.Equal(msgs, want) {
				t.Errorf("received messages: got %+v, want %+v", msgs, want)
			}
		})
	}
}

func testReceiveNothing(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	tests := []struct {
		wait       time.Duration
		minElapsed time.Duration // checked for whole seconds only: SQS may round shorter waits down
	}{
		{0, 0},
		{shortWait, 0},
		{time.Second, time.Second - 50*time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("wait %v", tt.wait), func(t *testing.T) {
			t.Parallel()
			q := newQueue(t)
			start := time.Now()
			ds, err := q.Receive(t.Context(), queue.MaxBatch, tt.wait, longVisibility)
			elapsed := time.Since(start)
			if err != nil {
				t.Fatalf("Receive on an empty queue: got error %v, want none", err)
			}
			if len(ds) != 0 {
				t.Errorf("Receive on an empty queue: got %+v, want nothing", ds)
			}
			if maxElapsed := tt.wait + late; elapsed < tt.minElapsed || elapsed > maxElapsed {
				t.Errorf("Receive(wait %v) on an empty queue returned after %v, want between %v and %v", tt.wait, elapsed, tt.minElapsed, maxElapsed)
			}
		})
	}
}

func testRedelivery(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	q := newQueue(t)
	m := queue.Message{TaskID: 3, Cursor: 99}
	mustSend(t, q, m)
	start := time.Now()
	first := receiveN(t, q, 1, visibility, deliveryTimeout)[0]
	if first.Message != m || first.Attempt != 1 {
		t.Fatalf("first delivery: got %+v, want message %+v, attempt 1", first, m)
	}
	if time.Since(start) < visibility/2 {
		expectNone(t, q, shortWait, start.Add(visibility)) // still invisible
	}

	second := receiveN(t, q, 1, longVisibility, visibility+slack+deliveryTimeout)[0]
	if elapsed := time.Since(start); elapsed < visibility-50*time.Millisecond {
		t.Errorf("redelivery came %v after the first Receive started, want no sooner than the visibility timeout %v", elapsed, visibility)
	}
	if second.Message != m {
		t.Errorf("redelivery: got message %+v, want %+v", second.Message, m)
	}
	if second.Attempt != 2 {
		t.Errorf("redelivery: got Attempt %d, want 2", second.Attempt)
	}
	if second.Handle == first.Handle {
		t.Errorf("redelivery: got the first delivery's handle %q again, want a new one", second.Handle)
	}
	mustAck(t, q, second)
	if err := q.Ack(t.Context(), first); err != nil && !apperr.Is(err, apperr.Conflict) {
		t.Errorf("Ack with the expired first handle: got error %v, want nil or kind %v", err, apperr.Conflict)
	}
}

func testAckedNeverReappears(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	q := newQueue(t)
	acked := queue.Message{TaskID: 1, Cursor: 1}
	kept := queue.Message{TaskID: 1, Cursor: 2}
	mustSend(t, q, acked, kept)
	for _, d := range receiveN(t, q, 2, visibility, deliveryTimeout) {
		if d.Message == acked {
			mustAck(t, q, d)
		}
	}
	// The unacked message comes back; the acked one must not.
	d := receiveN(t, q, 1, longVisibility, visibility+slack+deliveryTimeout)[0]
	if d.Message != kept {
		t.Fatalf("after the visibility timeout: got %+v, want only the unacked %+v", d.Message, kept)
	}
	expectNone(t, q, visibility/2, time.Time{})
	mustAck(t, q, d)
}

func testExtend(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	q := newQueue(t)
	m := queue.Message{TaskID: 5, Cursor: 0}
	mustSend(t, q, m)
	start := time.Now()
	d := receiveN(t, q, 1, visibility, deliveryTimeout)[0]
	time.Sleep(visibility / 2)
	extendAt := time.Now()
	if err := q.Extend(t.Context(), d, 3*visibility); err != nil {
		if time.Since(start) >= visibility {
			inconclusive(t, "Extend error %v came after the original visibility timeout", err)
		}
		t.Fatalf("Extend error: %v", err)
	}
	// Without the extension the message would be back by now (plus slack).
	expectNone(t, q, time.Until(start.Add(visibility+slack+visibility/2)), extendAt.Add(3*visibility))
	if err := q.Ack(t.Context(), d); err != nil {
		t.Errorf("Ack within the extended visibility: got error %v, want none", err)
	}
}

func testSendTooMany(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	q := newQueue(t)
	msgs := make([]queue.Message, queue.MaxBatch+1)
	for i := range msgs {
		msgs[i] = queue.Message{TaskID: 1, Cursor: int64(i)}
	}
	err := q.Send(t.Context(), msgs...)
	if !apperr.Is(err, apperr.Invalid) {
		t.Errorf("Send(%d messages): got error %v, want kind %v", len(msgs), err, apperr.Invalid)
	}
	expectNone(t, q, shortWait, time.Time{}) // none of the batch was sent
}

// testSendInvalid: a batch holding a message that is not valid
// (queue.Message.Validate) is refused whole, so no queue ever carries a
// message its workers would refuse.
func testSendInvalid(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	q := newQueue(t)
	good := queue.Message{TaskID: 1, Cursor: 0}
	for _, bad := range []queue.Message{
		{TaskID: 0, Cursor: 0},
		{TaskID: -7, Cursor: 3},
		{TaskID: 1, Cursor: -1},
		{TaskID: math.MinInt64, Cursor: math.MinInt64},
	} {
		if err := bad.Validate(); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("%+v.Validate(): got %v, want kind %v", bad, err, apperr.Invalid)
		}
		if err := q.Send(t.Context(), good, bad); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("Send(%+v, %+v): got error %v, want kind %v", good, bad, err, apperr.Invalid)
		}
	}
	expectNone(t, q, shortWait, time.Time{}) // none of the batches was sent
}

func testContextEnds(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	const after = 100 * time.Millisecond
	tests := []struct {
		name    string
		ctx     func(parent context.Context) (context.Context, context.CancelFunc)
		wantErr error
		within  time.Duration
	}{
		{"cancelled before", func(p context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(p)
			cancel()
			return ctx, cancel
		}, context.Canceled, late},
		{"cancelled while waiting", func(p context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(p)
			time.AfterFunc(after, cancel)
			return ctx, cancel
		}, context.Canceled, after + late},
		{"deadline while waiting", func(p context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(p, after)
		}, context.DeadlineExceeded, after + late},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q := newQueue(t)
			ctx, cancel := tt.ctx(t.Context())
			defer cancel()
			start := time.Now()
			ds, err := q.Receive(ctx, queue.MaxBatch, 10*time.Second, longVisibility)
			elapsed := time.Since(start)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Receive: got %+v, error %v; want error wrapping %v", ds, err, tt.wantErr)
			}
			if elapsed > tt.within {
				t.Errorf("Receive returned %v after it started, want within %v", elapsed, tt.within)
			}
		})
	}
}

// testConcurrent runs senders and receivers at once and checks that every
// message is delivered at least once. Run it with -race.
func testConcurrent(t *testing.T, newQueue func(t *testing.T) queue.Queue) {
	q := newQueue(t)
	const (
		senders   = 5
		perSender = 100 // a multiple of queue.MaxBatch
		receivers = 5
		total     = senders * perSender
	)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	var (
		mu       sync.Mutex
		seen     = make(map[queue.Message]int)
		done     = make(chan struct{})
		doneOnce sync.Once
		wg       sync.WaitGroup
	)
	for s := range senders {
		wg.Go(func() {
			for i := 0; i < perSender; i += queue.MaxBatch {
				batch := make([]queue.Message, queue.MaxBatch)
				for j := range batch {
					batch[j] = queue.Message{TaskID: int64(s + 1), Cursor: int64(i + j)}
				}
				if err := q.Send(ctx, batch...); err != nil {
					t.Errorf("Send error: %v", err)
					return
				}
			}
		})
	}
	for range receivers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				ds, err := q.Receive(ctx, queue.MaxBatch, shortWait, longVisibility)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("Receive error: %v", err)
					}
					return
				}
				for _, d := range ds {
					if err := q.Ack(ctx, d); err != nil && ctx.Err() == nil {
						t.Errorf("Ack(%+v) error: %v", d, err)
					}
					mu.Lock()
					seen[d.Message]++
					if len(seen) == total {
						doneOnce.Do(func() { close(done) })
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()

	missing := 0
	for s := range senders {
		for i := range perSender {
			if seen[queue.Message{TaskID: int64(s + 1), Cursor: int64(i)}] == 0 {
				missing++
			}
		}
	}
	if missing > 0 || len(seen) != total {
		t.Errorf("got %d distinct messages with %d of the %d sent missing, want all of them and nothing else", len(seen), missing, total)
	}
}
