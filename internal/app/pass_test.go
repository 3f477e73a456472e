package app_test

import (
	"testing"

	"tilecache/internal/app/apptest"
)

// `make test` runs this package twice: every test on the embedded backend,
// then again with TILECACHE_TEST_BACKEND=aws, the program on the local AWS
// stack. A test that checks something only one backend has says so with
// one of these, and is skipped (saying why) in the other pass.

// awsPass skips a test outside the AWS pass.
func awsPass(t *testing.T) {
	t.Helper()
	if !apptest.AWSPass() {
		t.Skip("multi-process test: runs in the AWS pass (TILECACHE_TEST_BACKEND=aws, part of make test)")
	}
}

// embeddedPass skips a test in the AWS pass: what it checks passes
// through no backend adapter in a way the other tests do not already cover
// on both (what names it: an encoding, a map client or page reading what
// the program serves, a source's requests upstream, the lane-message
// intake, which is on the local AWS stack in any pass). Running it again on
// the AWS stack would only spend the stack's CPU (`make test` is
// CPU-bound on 2 cores).
func embeddedPass(t *testing.T, what string) {
	t.Helper()
	if apptest.AWSPass() {
		t.Skip("runs in the embedded pass only: " + what + " is the same on every backend")
	}
}
