package quotatest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// RandomTable fills s with a random page table over layers and returns
// nothing: pages created in batches sharing one creation time (ties broken
// by creation, then id), reads flushed at random times (some before the
// page's creation, some never), pages emptied, deleted and re-created, one
// layer recounted. seed makes it reproducible.
func RandomTable(t *testing.T, s quota.UsageStore, seed uint64, layers []string, perLayer int) {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 0x5ca1e))
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func() time.Time { return t0.Add(time.Duration(rnd.IntN(600)) * time.Second) }
	var keys []quota.PageKey
	for _, l := range layers {
		set := tilestore.SetName{Layer: l, GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}
		for i := 0; i < perLayer; i++ {
			keys = append(keys, quota.PageKey{Set: set, Z: rnd.IntN(4), X: int64(i), Y: int64(rnd.IntN(3))})
		}
	}
	ctx := t.Context()
	// Creation in batches of up to 10 pages at one time.
	for i := 0; i < len(keys); {
		n := min(1+rnd.IntN(10), len(keys)-i)
		var ds []quota.PageDelta
		for _, k := range keys[i : i+n] {
			ds = append(ds, quota.PageDelta{Page: k, Tiles: 1 + rnd.Int64N(50), Bytes: 4096 * (1 + rnd.Int64N(200))})
		}
		if err := s.ApplyDeltas(ctx, ds, at()); err != nil {
			t.Fatal(err)
		}
		i += n
	}
	// Three flushes of reads of random pages.
	for f := 0; f < 3; f++ {
		var as []quota.Access
		for _, k := range keys {
			if rnd.IntN(3) == 0 {
				as = append(as, quota.Access{Page: k, Hits: 1 + rnd.Int64N(40), Last: at()})
			}
		}
		if err := s.RecordAccess(ctx, as); err != nil {
			t.Fatal(err)
		}
	}
	// Some pages emptied, some deleted, some grown.
	for _, k := range keys {
		switch rnd.IntN(12) {
		case 0:
			ps, err := s.Pages(ctx, k.Set.Layer)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if p.Key == k {
					if err := s.ApplyDeltas(ctx, []quota.PageDelta{{Page: k, Tiles: -p.Tiles, Bytes: -p.Bytes}}, at()); err != nil {
						t.Fatal(err)
					}
				}
			}
		case 1:
			if _, _, err := s.DeletePage(ctx, k); err != nil {
				t.Fatal(err)
			}
		case 2:
			if err := s.ApplyDeltas(ctx, []quota.PageDelta{{Page: k, Tiles: 1, Bytes: 4096}}, at()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The first layer recounted: half its pages kept (new counts), some
	// dropped, one new.
	l := layers[0]
	ls, err := s.Layers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var version int64
	for _, u := range ls {
		if u.Layer == l {
			version = u.Version
		}
	}
	ps, err := s.Pages(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	var counts []quota.PageDelta
	for _, p := range ps {
		if rnd.IntN(4) > 0 {
			counts = append(counts, quota.PageDelta{Page: p.Key, Tiles: p.Tiles + rnd.Int64N(2), Bytes: p.Bytes})
		}
	}
	fresh := keys[0]
	fresh.Z = 9
	counts = append(counts, quota.PageDelta{Page: fresh, Tiles: 1, Bytes: 4096})
	slices.SortFunc(counts, func(a, b quota.PageDelta) int { return cmpString(a.Page.ID(), b.Page.ID()) })
	if err := s.ReplaceLayer(ctx, l, version, counts, at()); err != nil {
		t.Fatal(err)
	}
	// Reads after the recount, of pages it kept and the new one.
	var as []quota.Access
	for _, c := range counts {
		if rnd.IntN(3) == 0 {
			as = append(as, quota.Access{Page: c.Page, Hits: 1 + rnd.Int64N(40), Last: at()})
		}
	}
	if err := s.RecordAccess(ctx, as); err != nil {
		t.Fatal(err)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// InOrder reads all of a layer's pages with PagesInOrder, limit pages a
// call at most (limits drawn at random from 1 to maxLimit).
func InOrder(t *testing.T, s quota.PageStore, layer, policy string, maxLimit int, rnd *rand.Rand) []quota.Page {
	t.Helper()
	var out []quota.Page
	cursor := ""
	for calls := 0; ; calls++ {
		if calls > 10_000 {
			t.Fatalf("PagesInOrder(%s, %s) did not end", layer, policy)
		}
		ps, next, err := s.PagesInOrder(t.Context(), layer, policy, cursor, 1+rnd.IntN(maxLimit))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ps...)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// ids returns the page ids of ps.
func ids(ps []quota.Page) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Key.ID()
	}
	return out
}

// runOrder is the differential test of PagesInOrder against Order (the
// in-memory sort of every page) on random page tables.
func runOrder(t *testing.T, newStore func(t *testing.T) quota.UsageStore) {
	layers := []string{"a", "b:c"}
	for seed := uint64(1); seed <= 2; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := newStore(t)
			RandomTable(t, s, seed, layers, 24)
			rnd := rand.New(rand.NewPCG(seed, 7))
			for _, policy := range []string{quota.PolicyLRU, quota.PolicyLFU} {
				var all []quota.Page
				for _, l := range layers {
					want, err := s.Pages(t.Context(), l)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, want...)
					quota.Order(want, policy)
					got := InOrder(t, s, l, policy, 7, rnd)
					if !slices.Equal(ids(got), ids(want)) {
						t.Errorf("%s order of layer %s:\n got  %v\n want %v", policy, l, ids(got), ids(want))
					}
					for i := range min(len(got), len(want)) {
						if got[i] != want[i] {
							t.Errorf("%s: page %d as read in order %+v, as listed %+v", policy, i, got[i], want[i])
							break
						}
					}
				}
				// Merged over the layers, as a global clean-up reads them.
				quota.Order(all, policy)
				o := quota.NewOrderedPages(s, layers, policy)
				var merged []quota.Page
				for {
					p, ok, err := o.Next(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					if !ok {
						break
					}
					merged = append(merged, p)
				}
				if !slices.Equal(ids(merged), ids(all)) {
					t.Errorf("%s order over layers %v:\n got  %v\n want %v", policy, layers, ids(merged), ids(all))
				}
				if o.Read() != int64(len(all)) {
					t.Errorf("%s: read %d pages for %d", policy, o.Read(), len(all))
				}
			}
		})
	}
}
