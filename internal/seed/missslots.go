// Render on miss: the layer's render slots (its share of the upstream's
// cap), waited for within a bound.

package seed

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// missSlot takes one of the layer's upstream slots for renders on miss
// (see upstreamShares), waiting at most MissWait, and returns its release;
// ErrBusy when none freed in time. In this process, at most the layer's
// slot count of misses try for a slot at once (the rest wait in line
// here); across processes the slots are claims in the task store, read
// with a growing pause and claimed only when seen free, and they expire if
// their holder dies.
func (e *Engine) missSlot(ctx context.Context, layerName string) (release func(), err error) {
	_, n := e.upstreamShares(layerName)
	if n == 0 {
		return func() {}, nil
	}
	wctx, cancel := context.WithTimeout(ctx, e.opts.MissWait)
	defer cancel()
	sem := e.localSlots(layerName, n)
	select {
	case sem <- struct{}{}:
	case <-wctx.Done():
		return nil, busy(ctx, layerName)
	}
	claims := e.opts.Claims
	if claims == nil {
		return func() { <-sem }, nil
	}
	owner := leaseToken()
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		for i := range n {
			key := "upstream#" + layerName + "#" + strconv.Itoa(i)
			holder, note, _, err := claims.Peek(wctx, key, time.Now())
			if err == nil && holder == "" && note == "" {
				var ok bool
				ok, err = claims.Claim(wctx, key, owner, e.opts.ClaimTTL, time.Now())
				if ok {
					return func() {
						defer func() { <-sem }()
						uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
						defer cancel()
						if err := claims.Unclaim(uctx, key, owner); err != nil {
							e.log.Warn("release a render slot", "layer", layerName, "err", err)
						}
					}, nil
				}
			}
			if err != nil && wctx.Err() == nil {
				<-sem
				return nil, fmt.Errorf("claim a render slot of layer %s: %w", layerName, err)
			}
		}
		if sleepErr(wctx, wait) != nil {
			<-sem
			return nil, busy(ctx, layerName)
		}
	}
}

// busy is the error of a miss that found no render slot: ErrBusy, or a
// timeout when the caller's own time ran out.
func busy(ctx context.Context, layerName string) error {
	if ctx.Err() != nil {
		return failure(failTimeout, fmt.Errorf("wait for a render slot of layer %s: %w", layerName, ctx.Err()))
	}
	return ErrBusy
}

// localSlots returns the in-process semaphore of a layer's render slots.
func (e *Engine) localSlots(layerName string, n int) chan struct{} {
	e.slotsMu.Lock()
	defer e.slotsMu.Unlock()
	if e.slots == nil {
		e.slots = map[string]chan struct{}{}
	}
	sem, ok := e.slots[layerName]
	if !ok {
		sem = make(chan struct{}, n)
		e.slots[layerName] = sem
	}
	return sem
}

func sleepErr(ctx context.Context, d time.Duration) error {
	sleep(ctx, d)
	return ctx.Err()
}
