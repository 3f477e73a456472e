package s3store_test

import (
	"fmt"
	"strings"
	"testing"

	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// TestDeleteStopsAtFailedRequest: one DeleteObjects request in flight at a
// time; the second is denied, so the third never starts. The count is the
// first request's keys, and the error names the second request's first key
// and how many keys failed.
func TestDeleteStopsAtFailedRequest(t *testing.T) {
	f, ep := newFakeS3(t, func(kind string, n int) fault {
		if kind == "delete" && n == 2 {
			return forbidden
		}
		return serve
	})
	s := newFakeStore(t, ep, s3store.Options{Retry: fastRetry, DeleteConcurrency: 1})
	keys := make([]string, 2*tilestore.DeleteBatch+500)
	for i := range keys {
		keys[i] = fmt.Sprintf("l/g/png/default/0/%d/0.png", i)
	}
	n, err := s.Delete(t.Context(), keys)
	if n != tilestore.DeleteBatch {
		t.Errorf("Delete counted %d keys, want %d (the first request's)", n, tilestore.DeleteBatch)
	}
	want := fmt.Sprintf("(%d failed, first %q)", tilestore.DeleteBatch, keys[tilestore.DeleteBatch])
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Access Denied") {
		t.Errorf("Delete: got %v, want S3's denial containing %s", err, want)
	}
	if got := f.requests("delete"); got != 2 {
		t.Errorf("%d DeleteObjects requests, want 2 (none after the failure)", got)
	}
}
