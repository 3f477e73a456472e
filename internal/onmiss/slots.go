// Render on miss: the layer's render slots (its share of the upstream's
// cap), waited for within a bound.

package onmiss

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/source"
	"tilecache/internal/token"
)

// missSlot takes one of the layer's upstream slots for renders on miss
// (see metatile.UpstreamShares), waiting at most Options.Wait, and returns its release;
// ErrBusy when none freed in time. In this process, at most the layer's
// slot count of misses try for a slot at once (the rest wait in line
// here); across processes the slots are claims in the task store, read
// with a growing pause and claimed only when seen free, and they expire if
// their holder dies.
func (rn *Renderer) missSlot(ctx context.Context, l *layer.Layer, src source.Source) (release func(), err error) {
	layerName := l.Name
	_, n := metatile.UpstreamShares(l, src)
	if n == 0 {
		return func() {}, nil
	}
	wctx, cancel := context.WithTimeout(ctx, rn.opts.Wait)
	defer cancel()
	sem := rn.localSlots(layerName, n)
	select {
	case sem <- struct{}{}:
	case <-wctx.Done():
		return nil, busy(ctx, layerName)
	}
	claims := rn.opts.Claims
	if claims == nil {
		return func() { <-sem }, nil
	}
	owner := token.New()
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		for i := range n {
			key := "upstream#" + layerName + "#" + strconv.Itoa(i)
			holder, note, _, err := claims.Peek(wctx, key, rn.opts.Now())
			if err == nil && holder == "" && note == "" {
				var ok bool
				ok, err = claims.Claim(wctx, key, owner, rn.opts.ClaimTTL, rn.opts.Now())
				if ok {
					return func() {
						defer func() { <-sem }()
						uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
						defer cancel()
						if err := claims.Unclaim(uctx, key, owner); err != nil {
							rn.log.Warn("release a render slot", "layer", layerName, "err", err)
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
func (rn *Renderer) localSlots(layerName string, n int) chan struct{} {
	rn.slotsMu.Lock()
	defer rn.slotsMu.Unlock()
	if rn.slots == nil {
		rn.slots = map[string]chan struct{}{}
	}
	sem, ok := rn.slots[layerName]
	if !ok {
		sem = make(chan struct{}, n)
		rn.slots[layerName] = sem
	}
	return sem
}
