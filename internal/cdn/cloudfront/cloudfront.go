// Package cloudfront is the cdn.Invalidator adapter for Amazon CloudFront
// (and for CloudFront-compatible servers such as moto, which the tests
// use).
//
// Invalidate is one CreateInvalidation of the whole path list. CloudFront
// itself makes a repeated request idempotent: the same caller reference
// with the same paths returns the first invalidation (see the cdn port).
//
// # Limits
//
// CloudFront takes at most MaxPaths paths in one invalidation and has at
// most 3,000 paths, or MaxWildcardPaths paths ending in "*", in progress
// per distribution at once. The caller batches (cdn.Purger does); this
// adapter refuses a request that could never succeed (more than MaxPaths
// paths, more than MaxWildcardPaths wildcards) with apperr.Invalid, and
// reports CloudFront's TooManyInvalidationsInProgress, which passes once
// earlier invalidations complete, as apperr.Unavailable.
//
// # Paths
//
// CloudFront compares invalidation paths with request paths as they are
// (case-sensitive, encoded form) and wants non-ASCII and the characters
// RFC 1738 calls unsafe percent-encoded, and nothing else. The port asks
// callers for paths encoded as RFC 3986 requires; this adapter also
// encodes what RFC 3986 allows raw but RFC 1738 does not ("~" becomes %7E)
// and, leniently, what a caller left unencoded but can only mean one thing
// (a space, non-ASCII bytes, control characters, and "\"#<>[\\]^`{|}").
// Existing %XX escapes, ":" (as in "demo:world" and "EPSG:4326"), "@",
// "&", "+", "=" and the other characters a path may hold are sent as they
// are. It refuses, with apperr.Invalid, a path that does not start with
// "/", a "%" not followed by two hex digits, a "*" anywhere but at the end
// (CloudFront's only wildcard), and a path longer than MaxPathLength once
// encoded.
package cloudfront

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"

	"tilecache/internal/apperr"
	"tilecache/internal/cdn"
)

// CloudFront's limits (see the package comment).
const (
	// MaxPaths is the most paths one invalidation may hold.
	MaxPaths = 3000
	// MaxWildcardPaths is the most paths ending in "*" a distribution may
	// have in progress at once, so also the most one invalidation may hold.
	MaxWildcardPaths = 15
	// MaxPathLength is the longest path CloudFront accepts, in bytes once
	// encoded.
	MaxPathLength = 4000
)

// Invalidator is a cdn.Invalidator for one CloudFront distribution. It is
// safe for concurrent use.
type Invalidator struct {
	client       *cf.Client
	distribution string
}

var _ cdn.Invalidator = (*Invalidator)(nil)

// New returns the adapter for the distribution with id distributionID. It
// makes no calls.
func New(client *cf.Client, distributionID string) *Invalidator {
	return &Invalidator{client: client, distribution: distributionID}
}

// NewFromConfig returns the adapter with a client made from cfg (see
// awsconf.Load): the SDK reads the endpoint of an emulator from
// AWS_ENDPOINT_URL_CLOUDFRONT (or AWS_ENDPOINT_URL). optFns adjust the
// client's options.
func NewFromConfig(cfg aws.Config, distributionID string, optFns ...func(*cf.Options)) *Invalidator {
	return New(cf.NewFromConfig(cfg, optFns...), distributionID)
}

// DistributionID returns the id of the adapter's distribution.
func (v *Invalidator) DistributionID() string { return v.distribution }

// Invalidate implements cdn.Invalidator. An empty path list makes no call
// and returns the id "". Paths are encoded and checked as the package
// comment says before anything is sent.
func (v *Invalidator) Invalidate(ctx context.Context, callerRef string, paths []string) (string, error) {
	if len(paths) == 0 {
		return "", nil
	}
	what := fmt.Sprintf("invalidate %d path%s in CloudFront distribution %s", len(paths), plural(len(paths)), v.distribution)
	if v.distribution == "" {
		return "", apperr.Invalidf("%s: no distribution id configured", what)
	}
	if callerRef == "" {
		return "", apperr.Invalidf("%s: empty caller reference", what)
	}
	items, err := encodePaths(paths)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	out, err := v.client.CreateInvalidation(ctx, &cf.CreateInvalidationInput{
		DistributionId: aws.String(v.distribution),
		InvalidationBatch: &types.InvalidationBatch{
			CallerReference: aws.String(callerRef),
			Paths:           &types.Paths{Quantity: aws.Int32(int32(len(items))), Items: items},
		},
	}, sendOnce)
	if err != nil {
		return "", fail(ctx, err, what)
	}
	if out.Invalidation == nil || aws.ToString(out.Invalidation.Id) == "" {
		return "", fmt.Errorf("%s: CloudFront answered without an invalidation id", what)
	}
	return *out.Invalidation.Id, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
