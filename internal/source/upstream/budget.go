package upstream

import (
	"context"
	"fmt"
	"net/netip"

	"golang.org/x/sync/semaphore"
)

// Budget bounds the bytes of decoded images in flight in a process,
// across layers and lanes: a source acquires the size of the image it is
// about to decode and releases it once the tiles are cut and encoded, so
// however many lanes render at once, decoded pixels never take more than
// the budget (TILECACHE_DECODE_MEMORY). Checking a vector tile takes from
// the same budget what the check may allocate (Pipeline.Vector). A nil
// *Budget bounds nothing.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
}

// NewBudget returns a budget of size bytes; size ≤ 0 gives nil (no bound).
func NewBudget(size int64) *Budget {
	if size <= 0 {
		return nil
	}
	return &Budget{sem: semaphore.NewWeighted(size), size: size}
}

// Acquire waits until n bytes are free (an image larger than the whole
// budget waits for all of it) or ctx ends, and returns the release.
func (b *Budget) Acquire(ctx context.Context, n int64) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	n = min(max(n, 1), b.size)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, fmt.Errorf("wait for %d bytes of the decode budget: %w", n, err)
	}
	return func() { b.sem.Release(n) }, nil
}

// DecodedSize is the most bytes Decode takes for a w×h image (RGBA).
func DecodedSize(w, h int) int64 { return int64(w) * int64(h) * 4 }

// Shared is what the sources of one process share.
type Shared struct {
	// Budget bounds the decoded images and vector tile checks in flight
	// (nil: no bound).
	Budget *Budget
	// Allow lists the networks every layer's upstream may be at, whatever
	// their class (TILECACHE_UPSTREAM_ALLOW; see AddressPolicy).
	Allow []netip.Prefix
}

// Addresses returns the policy of a layer's upstream: the networks s
// allows, or every address when fileOptIn (a layer of the layer file
// whose source sets allowPrivateUpstream).
func (s Shared) Addresses(fileOptIn bool) AddressPolicy {
	return AddressPolicy{Allow: s.Allow, Any: fileOptIn}
}
