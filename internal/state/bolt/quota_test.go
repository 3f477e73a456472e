package bolt_test

import (
	"errors"
	"path/filepath"
	"testing"

	"tilecache/internal/quota"
	"tilecache/internal/quota/quotatest"
)

func TestQuotaConfigPersistsAndUpdatesAtomically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	s, err := openAll(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.QuotaConfig(t.Context())
	if err != nil || got.DiskBlockSize != quota.Default().DiskBlockSize || got.Enabled {
		t.Fatalf("fresh store: got %+v, %v; want the defaults", got, err)
	}
	enabled := true
	if _, err := s.UpdateQuotaConfig(t.Context(), func(c quota.Config) (quota.Config, error) {
		return c.Apply(quota.Patch{Enabled: &enabled})
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := s.UpdateQuotaConfig(t.Context(), func(c quota.Config) (quota.Config, error) {
		c.Enabled = false
		return c, boom
	}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the function's error", err)
	}
	s.Close()
	s, err = openAll(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, _ := s.QuotaConfig(t.Context()); !got.Enabled {
		t.Fatalf("after reopen: got %+v, want enabled (and the failed update not applied)", got)
	}
}

func TestUsageConformance(t *testing.T) {
	quotatest.Run(t, func(t *testing.T) quota.UsageStore { return newStore(t).(*adapters) })
}
