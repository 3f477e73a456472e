package dynamo

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"tilecache/internal/quota"
	"tilecache/internal/state/dynamo/dynamotest"
)

func TestQuotaConfig(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	s := sh.store(t)
	ctx := t.Context()
	got, err := s.QuotaConfig(ctx)
	if err != nil || got.DiskBlockSize != quota.Default().DiskBlockSize || got.Enabled {
		t.Fatalf("fresh store: got %+v, %v; want the defaults", got, err)
	}
	enabled := true
	if _, err := s.UpdateQuotaConfig(ctx, func(c quota.Config) (quota.Config, error) {
		return c.Apply(quota.Patch{Enabled: &enabled})
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateQuotaConfig(ctx, func(c quota.Config) (quota.Config, error) {
		c.Enabled = false
		return c, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the function's error", err)
	}
	// Another store on the same table and namespace sees the stored value.
	again := all(New(dynamotest.Client(t), s.table, WithNamespace(s.ns)))
	if got, err := again.QuotaConfig(ctx); err != nil || !got.Enabled {
		t.Fatalf("from another store: got %+v, %v; want enabled (and the failed update not applied)", got, err)
	}
	// Concurrent updates are each applied exactly once.
	const n = 8
	base := quota.Default().GlobalQuota
	var wg sync.WaitGroup
	var calls atomic.Int64
	for range n {
		wg.Go(func() {
			_, err := s.UpdateQuotaConfig(ctx, func(c quota.Config) (quota.Config, error) {
				calls.Add(1)
				c.GlobalQuota++
				return c, nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err = again.QuotaConfig(ctx)
	if err != nil || got.GlobalQuota != base+n || !got.Enabled {
		t.Fatalf("after %d concurrent increments: got %+v, %v; want global quota %d", n, got, err, base+n)
	}
	t.Logf("%d concurrent updates took %d calls of fn", n, calls.Load())
	// Namespaces keep configurations apart.
	if got, _ := sh.store(t).QuotaConfig(ctx); got.Enabled {
		t.Fatal("another namespace sees the configuration")
	}
}
