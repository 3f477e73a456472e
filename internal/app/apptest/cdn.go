package apptest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"
	"github.com/aws/aws-sdk-go-v2/service/cloudfront/types"

	"tilecache/internal/awsconf"
	"tilecache/internal/cdn/cloudfront"
	"tilecache/internal/testkit/testenv"
)

// CDN is a CloudFront distribution of one test in the local AWS stack's
// CloudFront-compatible server (moto_server), so that its invalidations
// are its own.
type CDN struct {
	ID  string
	inv *cloudfront.Invalidator
}

// NewCDN creates a distribution for the test (or skips, see
// testenv.RequireCloudFront). Start an app on it with
// Options.Env["TILECACHE_CDN_DISTRIBUTION_ID"] = c.ID.
func NewCDN(t testing.TB) *CDN {
	t.Helper()
	testenv.RequireCloudFront(t)
	cfg, err := awsconf.Load(t.Context(), func(k string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	client := cf.NewFromConfig(cfg)
	out, err := client.CreateDistribution(t.Context(), &cf.CreateDistributionInput{DistributionConfig: &types.DistributionConfig{
		CallerReference: aws.String(testenv.Name(t, "cdn")),
		Comment:         aws.String("tilecache test " + t.Name()),
		Enabled:         aws.Bool(true),
		Origins: &types.Origins{Quantity: aws.Int32(1), Items: []types.Origin{{
			Id: aws.String("tiles"), DomainName: aws.String("127.0.0.1"),
			CustomOriginConfig: &types.CustomOriginConfig{HTTPPort: aws.Int32(80), HTTPSPort: aws.Int32(443),
				OriginProtocolPolicy: types.OriginProtocolPolicyHttpOnly},
		}}},
		DefaultCacheBehavior: &types.DefaultCacheBehavior{TargetOriginId: aws.String("tiles"),
			ViewerProtocolPolicy: types.ViewerProtocolPolicyAllowAll, CachePolicyId: aws.String("658327ea-f89d-4fab-a63d-7e88639e58f6")},
	}})
	var id string
	switch {
	case err == nil:
		id = aws.ToString(out.Distribution.Id)
	case strings.Contains(err.Error(), "DistributionAlreadyExists") && strings.Contains(err.Error(), "Already exists: "):
		// The SDK retried a request whose answer was lost after the server
		// had created the distribution: its message names it.
		id = strings.Fields(err.Error()[strings.LastIndex(err.Error(), "Already exists: ")+len("Already exists: "):])[0]
	default:
		t.Fatalf("create a distribution in the local CloudFront: %v", err)
	}
	return &CDN{ID: id, inv: cloudfront.NewFromConfig(cfg, id)}
}

// Invalidations returns the paths of every invalidation of the
// distribution, oldest first.
func (c *CDN) Invalidations(t testing.TB) [][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	list, err := c.inv.List(ctx)
	if err != nil {
		t.Fatalf("list invalidations: %v", err)
	}
	slices.SortStableFunc(list, func(a, b cloudfront.Invalidation) int { return a.CreateTime.Compare(b.CreateTime) })
	out := make([][]string, len(list))
	for i, inv := range list {
		out[i] = inv.Paths
	}
	return out
}

// Covers reports whether a CDN path covers a request path as CloudFront
// matches them: a trailing "*" matches any rest, otherwise equality.
func Covers(path, request string) bool {
	if p, ok := strings.CutSuffix(path, "*"); ok {
		return strings.HasPrefix(request, p)
	}
	return path == request
}
