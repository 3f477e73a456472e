// Package awsconf builds AWS client configuration from the SDK's own
// environment conventions, so the same binary talks to AWS, to MinIO and to
// local emulators without code changes:
//
//   - AWS_REGION (default us-east-1), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//     AWS_SESSION_TOKEN, or any other credential source the SDK knows;
//   - AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS (read by the SDK itself),
//     AWS_ENDPOINT_URL_S3 (read here for minio-go; path-style for non-AWS hosts).
package awsconf

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Load returns the SDK configuration from the environment.
func Load(ctx context.Context, lookup func(string) (string, bool)) (aws.Config, error) {
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
