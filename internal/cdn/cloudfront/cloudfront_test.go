package cloudfront

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"

	"tilecache/internal/apperr"
	"tilecache/internal/awsconf"
	"tilecache/internal/cdn"
	"tilecache/internal/cdn/cdntest"
	"tilecache/internal/testkit/testenv"
)

var (
	cfgOnce sync.Once
	cfg     aws.Config
	cfgErr  error
)

// testInvalidator returns an adapter for the distribution of the local AWS
// stack (TILECACHE_CDN_DISTRIBUTION_ID behind AWS_ENDPOINT_URL_CLOUDFRONT),
// or skips.
func testInvalidator(t *testing.T) *Invalidator {
	t.Helper()
	_, dist := testenv.RequireCloudFront(t)
	return NewFromConfig(testConfig(t), dist)
}

func testConfig(t *testing.T) aws.Config {
	t.Helper()
	cfgOnce.Do(func() { cfg, cfgErr = awsconf.Load(context.Background(), os.LookupEnv) })
	if cfgErr != nil {
		t.Fatal(cfgErr)
	}
	return cfg
}

// emulated reports whether endpoint is not CloudFront itself.
func emulated(endpoint string) bool {
	u, err := url.Parse(endpoint)
	return err != nil || !strings.HasSuffix(u.Hostname(), ".amazonaws.com")
}

func newRef() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "cloudfront-test-" + hex.EncodeToString(b)
}

// fetched holds the invalidations lister has read, by distribution and id.
var fetched sync.Map

// lister is the suite's cdntest.Lister. It reads each invalidation once:
// an invalidation's caller reference and paths never change, and the
// stack's distribution keeps those of every earlier run and test, so
// reading them all back (List) would make each check slower than the last.
func lister(ctx context.Context, inv cdn.Invalidator) ([]cdntest.Invalidation, error) {
	v := inv.(*Invalidator)
	var out []cdntest.Invalidation
	pages := cf.NewListInvalidationsPaginator(v.client, &cf.ListInvalidationsInput{DistributionId: aws.String(v.distribution)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fail(ctx, err, "list invalidations of CloudFront distribution "+v.distribution)
		}
		if page.InvalidationList == nil {
			continue
		}
		for _, s := range page.InvalidationList.Items {
			key := v.distribution + "/" + aws.ToString(s.Id)
			if got, ok := fetched.Load(key); ok {
				out = append(out, got.(cdntest.Invalidation))
				continue
			}
			got, err := v.Get(ctx, aws.ToString(s.Id))
			if err != nil {
				return nil, err
			}
			rec := cdntest.Invalidation{ID: got.ID, CallerRef: got.CallerRef, Paths: got.Paths}
			fetched.Store(key, rec)
			out = append(out, rec)
		}
	}
	return out, nil
}

func TestEndpointFromEnvironment(t *testing.T) {
	endpoint, _ := testenv.RequireCloudFront(t)
	inv := testInvalidator(t)
	if got := aws.ToString(inv.client.Options().BaseEndpoint); got != endpoint {
		t.Fatalf("client endpoint %q, want AWS_ENDPOINT_URL_CLOUDFRONT %q", got, endpoint)
	}
}

// TestConformance runs the port's suite against the stack's distribution.
// moto (the local stack's CloudFront) makes a new invalidation for a
// repeated caller reference, where CloudFront returns the first one: the
// quirk NoCallerRefIdempotency.
func TestConformance(t *testing.T) {
	endpoint, _ := testenv.RequireCloudFront(t)
	var quirks []cdntest.Quirk
	if emulated(endpoint) {
		quirks = append(quirks, cdntest.NoCallerRefIdempotency)
	}
	cdntest.Run(t, func(t *testing.T) cdn.Invalidator { return testInvalidator(t) }, lister, quirks...)
}

func TestUnknownDistribution(t *testing.T) {
	testenv.RequireCloudFront(t)
	inv := NewFromConfig(testConfig(t), "ENOSUCHDISTRIBUTION")
	id, err := inv.Invalidate(t.Context(), newRef(), []string{"/demo:world/*"})
	if !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("Invalidate on an unknown distribution: got (%q, %v) of kind %v, want kind %v", id, err, apperr.KindOf(err), apperr.Invalid)
	}
	if msg := apperr.Message(err); !strings.Contains(msg, "distribution ENOSUCHDISTRIBUTION: the distribution does not exist") {
		t.Errorf("message %q does not name the missing distribution", msg)
	}
}

func TestGet(t *testing.T) {
	inv := testInvalidator(t)
	r := newRef()
	paths := []string{"/demo:world/EPSG:4326/png/default/7/*", "/demo:world/EPSG:4326/png/default/8/1/2.png"}
	id, err := inv.Invalidate(t.Context(), r, paths)
	if err != nil {
		t.Fatal(err)
	}
	got, err := inv.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%q) error: %v", id, err)
	}
	if got.ID != id || got.CallerRef != r || !slices.Equal(got.Paths, paths) {
		t.Errorf("Get(%q): got %+v, want id %q, caller reference %q, paths %q", id, got, id, r, paths)
	}
	if got.Status == "" || got.CreateTime.IsZero() {
		t.Errorf("Get(%q): got status %q and create time %v, want both set", id, got.Status, got.CreateTime)
	}

	_, err = inv.Get(t.Context(), "ENOSUCHINVALIDATION")
	if !apperr.Is(err, apperr.NotFound) {
		t.Errorf("Get of an unknown invalidation: got %v of kind %v, want kind %v", err, apperr.KindOf(err), apperr.NotFound)
	}
}

// TestEncodingOnTheWire sends paths a caller left unencoded and checks what
// the server recorded.
func TestEncodingOnTheWire(t *testing.T) {
	inv := testInvalidator(t)
	r := newRef()
	id, err := inv.Invalidate(t.Context(), r, []string{"/a b/café~x/[1]/*", "/demo:world/EPSG:4326/png/%7Eok"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := inv.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/a%20b/caf%C3%A9%7Ex/%5B1%5D/*", "/demo:world/EPSG:4326/png/%7Eok"}
	if !slices.Equal(got.Paths, want) {
		t.Errorf("recorded paths:\n got %q\nwant %q", got.Paths, want)
	}
}
