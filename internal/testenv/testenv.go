// Package testenv gates tests that need the local AWS stack (MinIO and the
// DynamoDB- and SQS-compatible servers that `make devstack` starts).
//
// A test calls RequireS3 / RequireDynamoDB / RequireSQS. When the endpoint
// variable is unset the test is skipped with the reason, except when
// TILECACHE_REQUIRE_DEVSTACK=1 (set by `make test`), where a missing stack
// fails the test: CI never skips silently. Under -short the tests skip.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
)

func require(t testing.TB, variable, what string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("skipping %s test under -short", what)
	}
	v := os.Getenv(variable)
	if v != "" {
		return v
	}
	if os.Getenv("TILECACHE_REQUIRE_DEVSTACK") == "1" {
		t.Fatalf("%s is not set but TILECACHE_REQUIRE_DEVSTACK=1: the local AWS stack did not start (run `make devstack`)", variable)
	}
	t.Skipf("%s is not set: start the local AWS stack with `eval \"$(make -s devstack)\"` to run %s tests", variable, what)
	return ""
}

// RequireS3 returns the S3 endpoint URL (AWS_ENDPOINT_URL_S3) or skips.
func RequireS3(t testing.TB) string { return require(t, "AWS_ENDPOINT_URL_S3", "S3") }

// RequireDynamoDB returns the DynamoDB endpoint URL or skips.
func RequireDynamoDB(t testing.TB) string {
	return require(t, "AWS_ENDPOINT_URL_DYNAMODB", "DynamoDB")
}

// RequireSQS returns the SQS endpoint URL or skips.
func RequireSQS(t testing.TB) string { return require(t, "AWS_ENDPOINT_URL_SQS", "SQS") }

var unsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// Name returns a resource name unique to this test run, built from prefix,
// the test's name and a random suffix, made of [a-z0-9-] and at most 63
// characters (valid for buckets, tables and queues alike).
func Name(t testing.TB, prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	base := strings.Trim(unsafe.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	suffix := "-" + hex.EncodeToString(b)
	name := prefix + "-" + base
	if len(name)+len(suffix) > 63 {
		name = name[:63-len(suffix)]
	}
	return strings.TrimRight(name, "-") + suffix
}
