// Package awsconf builds AWS client configuration from the SDK's own
// environment conventions, so the same binary talks to AWS, to MinIO and to
// local emulators without code changes:
//
//   - AWS_REGION (default us-east-1), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//     AWS_SESSION_TOKEN, or any other credential source the SDK knows;
//   - AWS_ENDPOINT_URL_S3 (read here for minio-go; path-style for non-AWS hosts),
//     AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_CLOUDFRONT
//     (ServiceEndpoint, read through the same lookup, so that a program's
//     configuration, not only its process environment, says where its
//     clients connect).
//
// # Retries
//
// Every client made from Load's configuration retries by one policy (Retry,
// given with WithRetry; the defaults otherwise): the SDK's
// standard retryer with full-jitter backoff, enough attempts for
// throttling, a time budget per call and no retry quota. The tile store
// applies the same policy to its S3 requests. Each attempt answered with
// throttling counts in metrics.AWSThrottled and each retry in
// metrics.AWSRetries, by service.
package awsconf

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Option adjusts Load.
type Option func(*options)

type options struct {
	retry Retry
}

// WithRetry sets the clients' retry policy; its zero fields take the
// defaults (see Retry).
func WithRetry(r Retry) Option { return func(o *options) { o.retry = r } }

// Load returns the SDK configuration from the environment, with the retry
// policy of the options (see Retry; the defaults without WithRetry).
func Load(ctx context.Context, lookup func(string) (string, bool), opt ...Option) (aws.Config, error) {
	var o options
	for _, f := range opt {
		f(&o)
	}
	var opts []func(*config.LoadOptions) error
	if v, ok := lookup("AWS_REGION"); !ok || v == "" {
		if v, ok := lookup("AWS_DEFAULT_REGION"); !ok || v == "" {
			opts = append(opts, config.WithRegion("us-east-1"))
		}
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	applyRetry(&cfg, o.retry)
	return cfg, nil
}

// S3Endpoint describes where minio-go connects.
type S3Endpoint struct {
	Host      string // host[:port]
	Secure    bool
	PathStyle bool // true for anything but AWS's own hosts
}

// ParseS3Endpoint reads AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL); empty means
// AWS S3 in region.
func ParseS3Endpoint(lookup func(string) (string, bool), region string) (S3Endpoint, error) {
	raw, _ := lookup("AWS_ENDPOINT_URL_S3")
	if raw == "" {
		raw, _ = lookup("AWS_ENDPOINT_URL")
	}
	if raw == "" {
		return S3Endpoint{Host: "s3." + region + ".amazonaws.com", Secure: true}, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return S3Endpoint{}, fmt.Errorf("AWS_ENDPOINT_URL_S3 %q is not an http(s) URL", raw)
	}
	return S3Endpoint{Host: u.Host, Secure: u.Scheme == "https", PathStyle: !strings.HasSuffix(u.Hostname(), ".amazonaws.com")}, nil
}

// ServiceEndpoint returns the endpoint for the clients of one service,
// named as in its environment variable ("DYNAMODB", "SQS", "CLOUDFRONT"):
// AWS_ENDPOINT_URL_<SERVICE>, else AWS_ENDPOINT_URL, read through lookup;
// nil for the service's own AWS endpoint. Set as the client's BaseEndpoint
// (an option applied after the SDK's own reading of the process
// environment), it makes the lookup the one source of the endpoint.
func ServiceEndpoint(lookup func(string) (string, bool), service string) *string {
	if v, ok := lookup("AWS_ENDPOINT_URL_" + service); ok && v != "" {
		return &v
	}
	if v, ok := lookup("AWS_ENDPOINT_URL"); ok && v != "" {
		return &v
	}
	return nil
}
