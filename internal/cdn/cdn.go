// Package cdn defines the CDN port: dropping cached copies of tiles and
// documents from a content delivery network after the bucket behind it
// changed.
//
// Adapters live in subpackages named after what they wrap (cloudfront);
// Nop is the adapter of the local program, which has no CDN in front of
// it. Every adapter must pass the conformance suite in cdntest.
//
// Purger sits between the code that changes stored objects and the port:
// it turns changed keys and tile ranges into a few wildcard paths, batches
// them and sends them in the background with retries, so an invalidation
// never fails or blocks the operation that caused it.
package cdn

import "context"

// Invalidator is the CDN port.
type Invalidator interface {
	// Invalidate asks the CDN to drop its cached copies of paths: URL paths
	// from the distribution's root, each starting with "/", percent-encoded
	// where RFC 3986 requires it, and possibly ending in "*" (a wildcard
	// over everything that starts with the rest). callerRef identifies the
	// request: sending the same callerRef and paths again must not create a
	// second invalidation (a retry after a lost answer is safe). It returns
	// the CDN's id of the invalidation. Errors are wrapped with context and
	// classified with apperr: Unavailable for throttling and unreachable
	// endpoints (worth retrying later), Invalid for a request the CDN
	// refuses (retrying will not help).
	Invalidate(ctx context.Context, callerRef string, paths []string) (id string, err error)
}

// Nop is the Invalidator of a deployment without a CDN: it drops nothing
// and answers the id "".
type Nop struct{}

// Invalidate implements Invalidator.
func (Nop) Invalidate(context.Context, string, []string) (string, error) { return "", nil }

var _ Invalidator = Nop{}
