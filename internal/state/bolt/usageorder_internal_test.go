package bolt

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/quota"
	"tilecache/internal/quota/quotatest"
)

// TestOrderBuiltForOldUsage: usage recorded before the store kept the
// expiration order (no order bucket) gets it built from the pages, by a
// read in order as by a write, and read in the order of the in-memory sort.
func TestOrderBuiltForOldUsage(t *testing.T) {
	s, err := openAll(filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	layers := []string{"a", "b"}
	quotatest.RandomTable(t, s, 21, layers, 25)
	drop := func() {
		t.Helper()
		if err := s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucketUsage).DeleteBucket(bucketOrder) }); err != nil {
			t.Fatal(err)
		}
	}
	check := func() {
		t.Helper()
		rnd := rand.New(rand.NewPCG(3, 4))
		for _, l := range layers {
			for _, policy := range []string{quota.PolicyLRU, quota.PolicyLFU} {
				want, err := s.Pages(t.Context(), l)
				if err != nil {
					t.Fatal(err)
				}
				quota.Order(want, policy)
				got := quotatest.InOrder(t, s, l, policy, 6, rnd)
				if !slices.Equal(got, want) {
					t.Fatalf("%s order of layer %s: got %d pages, want %d in the sorted order", policy, l, len(got), len(want))
				}
			}
		}
	}
	drop()
	check() // built by the read
	drop()
	// Built by a write: a read flush of one page of b moves it.
	ps, err := s.Pages(t.Context(), "b")
	if err != nil || len(ps) == 0 {
		t.Fatalf("pages of b: %d, %v", len(ps), err)
	}
	if err := s.RecordAccess(t.Context(), []quota.Access{{Page: ps[0].Key, Hits: 3, Last: ps[0].Used().Add(1)}}); err != nil {
		t.Fatal(err)
	}
	check()
}
