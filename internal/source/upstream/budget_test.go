package upstream_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"tilecache/internal/source/upstream"
)

// TestBudgetBoundsBytesInFlight: with a budget of 3 images, 8 decoders at
// once hold at most 3 images' bytes; one larger than the budget takes it
// all; a cancelled wait returns the context's error; nil bounds nothing.
func TestBudgetBoundsBytesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		img := upstream.DecodedSize(1024, 1024)
		b := upstream.NewBudget(3 * img)
		var inFlight, peak atomic.Int64
		done := make(chan struct{})
		for range 8 {
			go func() {
				defer func() { done <- struct{}{} }()
				release, err := b.Acquire(t.Context(), img)
				if err != nil {
					t.Error(err)
					return
				}
				n := inFlight.Add(img)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Second) // decoding
				inFlight.Add(-img)
				release()
			}()
		}
		for range 8 {
			<-done
		}
		if got := peak.Load(); got != 3*img {
			t.Errorf("peak bytes in flight: got %d, want %d (3 images)", got, 3*img)
		}
		release, err := b.Acquire(t.Context(), 100*img)
		if err != nil {
			t.Fatalf("an image larger than the budget: %v, want it to take the whole budget", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := b.Acquire(ctx, img); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a wait while the budget is taken: got %v, want the context's deadline", err)
		}
		release()
		var none *upstream.Budget
		if r, err := none.Acquire(t.Context(), 1<<40); err != nil {
			t.Errorf("nil budget: %v", err)
		} else {
			r()
		}
		if upstream.NewBudget(0) != nil {
			t.Error("NewBudget(0): want nil (no bound)")
		}
	})
}
