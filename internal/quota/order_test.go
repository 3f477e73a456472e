package quota_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// TestOrderKeySortsAsOrder: sorting pages by their OrderKey gives
// Order's order, for both policies, on random pages with many ties (times
// drawn from a few seconds, equal hits, zero times).
func TestOrderKeySortsAsOrder(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var pages []quota.Page
	for i := range 500 {
		set := tilestore.SetName{Layer: []string{"a", "b", "a:b"}[rnd.IntN(3)], GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
		p := quota.Page{Key: quota.PageKey{Set: set, Z: rnd.IntN(20), X: int64(rnd.IntN(1 << 12)), Y: int64(i)},
			Created: t0.Add(time.Duration(rnd.IntN(5)) * time.Minute), Tiles: 1, Bytes: 1}
		switch rnd.IntN(4) {
		case 0: // never read
		case 1: // read before its creation (another process's clock)
			p.LastAccess, p.Hits = p.Created.Add(-time.Second), int64(rnd.IntN(3))
		default:
			p.LastAccess, p.Hits = p.Created.Add(time.Duration(rnd.IntN(10))*time.Minute), int64(rnd.IntN(5))
		}
		if rnd.IntN(50) == 0 {
			p.Created = time.Time{}
		}
		pages = append(pages, p)
	}
	for _, policy := range []string{quota.PolicyLRU, quota.PolicyLFU} {
		want := slices.Clone(pages)
		quota.Order(want, policy)
		got := slices.Clone(pages)
		slices.SortFunc(got, func(a, b quota.Page) int {
			return strings.Compare(quota.OrderKey(a, policy), quota.OrderKey(b, policy))
		})
		for i := range got {
			if got[i].Key != want[i].Key {
				t.Fatalf("%s: position %d: by key %s, by Order %s", policy, i, quota.OrderKey(got[i], policy), quota.OrderKey(want[i], policy))
			}
		}
	}
}
