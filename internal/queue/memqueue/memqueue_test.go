package memqueue_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/queue"
	"tilecache/internal/queue/memqueue"
	"tilecache/internal/queue/queuetest"
)

func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queue.Queue { return memqueue.New() })
}

// The tests below use synctest's fake clock: time only moves when every
// goroutine in the bubble is blocked, so timing checks are exact.

func mustReceive(t *testing.T, q *memqueue.Queue, max int, wait, vis time.Duration) []queue.Delivery {
	t.Helper()
	ds, err := q.Receive(t.Context(), max, wait, vis)
	if err != nil {
		t.Fatalf("Receive error: %v", err)
	}
	return ds
}

func checkLen(t *testing.T, q *memqueue.Queue, wantReady, wantInFlight int) {
	t.Helper()
	if ready, inFlight := q.Len(); ready != wantReady || inFlight != wantInFlight {
		t.Errorf("Len(): got ready %d, in flight %d; want %d, %d", ready, inFlight, wantReady, wantInFlight)
	}
}

func TestStaleHandles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		q := memqueue.New()
		if err := q.Send(ctx, queue.Message{TaskID: 1, Cursor: 2}); err != nil {
			t.Fatal(err)
		}
		first := mustReceive(t, q, 1, 0, time.Second)[0]
		time.Sleep(time.Second)
		// Expired but not yet redelivered: the handle is already stale.
		if err := q.Extend(ctx, first, time.Minute); !apperr.Is(err, apperr.Conflict) {
			t.Errorf("Extend with an expired handle: got %v, want kind %v", err, apperr.Conflict)
		}
		second := mustReceive(t, q, 1, 0, time.Minute)[0]
		if second.Attempt != 2 || second.Handle == first.Handle {
			t.Fatalf("redelivery: got %+v, want attempt 2 with a new handle (first %+v)", second, first)
		}
		tests := []struct {
			name string
			call func() error
		}{
			{"Ack with the first handle", func() error { return q.Ack(ctx, first) }},
			{"Extend with the first handle", func() error { return q.Extend(ctx, first, time.Hour) }},
			{"Ack with an unknown handle", func() error { return q.Ack(ctx, queue.Delivery{Handle: "nope"}) }},
		}
		for _, tt := range tests {
			if err := tt.call(); !apperr.Is(err, apperr.Conflict) {
				t.Errorf("%s: got %v, want kind %v", tt.name, err, apperr.Conflict)
			}
		}
		checkLen(t, q, 0, 1) // the stale handles did not touch the redelivered message
		if err := q.Ack(ctx, second); err != nil {
			t.Fatalf("Ack with the current handle: %v", err)
		}
		if err := q.Ack(ctx, second); !apperr.Is(err, apperr.Conflict) {
			t.Errorf("second Ack with the same handle: got %v, want kind %v", err, apperr.Conflict)
		}
		checkLen(t, q, 0, 0)
	})
}

func TestHandlesDifferBetweenQueues(t *testing.T) {
	ctx := t.Context()
	a, b := memqueue.New(), memqueue.New()
	for _, q := range []*memqueue.Queue{a, b} {
		if err := q.Send(ctx, queue.Message{TaskID: 1}); err != nil {
			t.Fatal(err)
		}
	}
	da := mustReceive(t, a, 1, 0, time.Minute)[0]
	mustReceive(t, b, 1, 0, time.Minute)
	if err := b.Ack(ctx, da); !apperr.Is(err, apperr.Conflict) {
		t.Errorf("Ack on another queue: got %v, want kind %v", err, apperr.Conflict)
	}
	checkLen(t, b, 0, 1)
}

func TestVisibilityTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		q := memqueue.New()
		if err := q.Send(ctx, queue.Message{TaskID: 9}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		mustReceive(t, q, 1, 0, 3*time.Second)
		checkLen(t, q, 0, 1)

		// A waiting receiver is woken exactly when the timeout expires.
		again := mustReceive(t, q, 1, time.Minute, time.Second)
		if got := time.Since(start); len(again) != 1 || got != 3*time.Second {
			t.Errorf("waiting Receive: got %d deliveries after %v, want 1 after %v", len(again), got, 3*time.Second)
		}
		if again[0].Attempt != 2 {
			t.Errorf("redelivery: got Attempt %d, want 2", again[0].Attempt)
		}

		// Extend to 5s at 0.5s: still in flight at 5.4s, back at 5.5s.
		time.Sleep(500 * time.Millisecond)
		if err := q.Extend(ctx, again[0], 5*time.Second); err != nil {
			t.Fatalf("Extend error: %v", err)
		}
		time.Sleep(4900 * time.Millisecond)
		checkLen(t, q, 0, 1)
		time.Sleep(100 * time.Millisecond)
		checkLen(t, q, 1, 0)
	})
}

func TestExtendShorterWakesReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		q := memqueue.New()
		if err := q.Send(ctx, queue.Message{TaskID: 9}); err != nil {
			t.Fatal(err)
		}
		d := mustReceive(t, q, 1, 0, time.Hour)[0]
		start := time.Now()
		go func() {
			time.Sleep(time.Second)
			if err := q.Extend(ctx, d, 0); err != nil { // give it back now
				t.Errorf("Extend error: %v", err)
			}
		}()
		got := mustReceive(t, q, 1, time.Minute, time.Hour)
		if elapsed := time.Since(start); len(got) != 1 || elapsed != time.Second {
			t.Errorf("Receive: got %d deliveries after %v, want 1 after %v", len(got), elapsed, time.Second)
		}
	})
}

func TestReceiveWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		q := memqueue.New()
		start := time.Now()
		if ds := mustReceive(t, q, 1, 5*time.Second, time.Minute); len(ds) != 0 || time.Since(start) != 5*time.Second {
			t.Errorf("Receive on an empty queue: got %d deliveries after %v, want 0 after 5s", len(ds), time.Since(start))
		}

		start = time.Now()
		go func() {
			time.Sleep(2 * time.Second)
			if err := q.Send(ctx, queue.Message{TaskID: 1}, queue.Message{TaskID: 2}); err != nil {
				t.Errorf("Send error: %v", err)
			}
		}()
		if ds := mustReceive(t, q, 10, time.Minute, time.Minute); len(ds) != 2 || time.Since(start) != 2*time.Second {
			t.Errorf("Receive woken by Send: got %d deliveries after %v, want 2 after 2s", len(ds), time.Since(start))
		}
	})
}

func TestFIFO(t *testing.T) {
	ctx := t.Context()
	q := memqueue.New()
	for i := range 25 {
		if err := q.Send(ctx, queue.Message{TaskID: 1, Cursor: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for want := range int64(25) {
		d := mustReceive(t, q, 1, 0, time.Minute)[0]
		if d.Message.Cursor != want {
			t.Fatalf("Receive: got cursor %d, want %d", d.Message.Cursor, want)
		}
	}
	checkLen(t, q, 0, 25)
}

func TestInvalidArguments(t *testing.T) {
	ctx := t.Context()
	q := memqueue.New()
	if err := q.Send(ctx, queue.Message{TaskID: 1}); err != nil {
		t.Fatal(err)
	}
	d := mustReceive(t, q, 1, 0, time.Minute)[0]
	tests := []struct {
		name string
		call func() error
	}{
		{"Receive max 0", func() error { _, err := q.Receive(ctx, 0, 0, time.Second); return err }},
		{"Receive negative visibility", func() error { _, err := q.Receive(ctx, 1, 0, -time.Second); return err }},
		{"Extend negative visibility", func() error { return q.Extend(ctx, d, -time.Second) }},
	}
	for _, tt := range tests {
		if err := tt.call(); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("%s: got %v, want kind %v", tt.name, err, apperr.Invalid)
		}
	}
	if err := q.Send(ctx); err != nil {
		t.Errorf("Send of no messages: got %v, want nil", err)
	}
}

func TestCancelledCallsChangeNothing(t *testing.T) {
	q := memqueue.New()
	if err := q.Send(t.Context(), queue.Message{TaskID: 1}); err != nil {
		t.Fatal(err)
	}
	d := mustReceive(t, q, 1, 0, time.Minute)[0]
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := q.Send(ctx, queue.Message{TaskID: 2}); err == nil {
		t.Error("Send with a cancelled context: got nil error")
	}
	if err := q.Ack(ctx, d); err == nil {
		t.Error("Ack with a cancelled context: got nil error")
	}
	if err := q.Extend(ctx, d, 0); err == nil {
		t.Error("Extend with a cancelled context: got nil error")
	}
	checkLen(t, q, 0, 1)
}

func BenchmarkSendReceiveAck(b *testing.B) {
	for _, n := range []int{1, queue.MaxBatch} {
		b.Run(fmt.Sprintf("batch %d", n), func(b *testing.B) {
			ctx := b.Context()
			q := memqueue.New()
			msgs := make([]queue.Message, n)
			b.ReportAllocs()
			for b.Loop() {
				if err := q.Send(ctx, msgs...); err != nil {
					b.Fatal(err)
				}
				ds, err := q.Receive(ctx, n, 0, time.Minute)
				if err != nil || len(ds) != n {
					b.Fatalf("Receive: got %d, %v", len(ds), err)
				}
				for _, d := range ds {
					if err := q.Ack(ctx, d); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func BenchmarkSendReceiveAckParallel(b *testing.B) {
	ctx := b.Context()
	q := memqueue.New()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := q.Send(ctx, queue.Message{TaskID: 1}); err != nil {
				b.Error(err)
				return
			}
			ds, err := q.Receive(ctx, 1, time.Second, time.Minute)
			if err != nil || len(ds) != 1 {
				b.Errorf("Receive: got %d, %v", len(ds), err)
				return
			}
			if err := q.Ack(ctx, ds[0]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
