package quotatest

import (
	"slices"
	"testing"
	"time"

	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// LevelPages reads every page of level z of set with LevelPages, limit
// pages a call, checking that no call returns more than limit.
func LevelPages(t *testing.T, s quota.PageStore, set tilestore.SetName, z, limit int) []quota.Page {
	t.Helper()
	var out []quota.Page
	after := ""
	for calls := 0; ; calls++ {
		if calls > 10_000 {
			t.Fatalf("LevelPages(%s, %d) did not end", set.ID(), z)
		}
		ps, next, err := s.LevelPages(t.Context(), set, z, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) > limit {
			t.Fatalf("LevelPages(%s, %d, limit %d) returned %d pages", set.ID(), z, limit, len(ps))
		}
		out = append(out, ps...)
		if next == "" {
			return out
		}
		after = next
	}
}

// runLevel checks LevelPages against Pages: a level's pages are those of
// the layer's pages of its set and level, in page id order, whatever the
// limit, with sets, levels and layers whose ids share prefixes beside
// them ("1|" and "12|", a grid set and a longer one, a layer and a
// longer one), and empty and deleted pages among them.
func runLevel(t *testing.T, newStore func(t *testing.T) quota.UsageStore) {
	s := newStore(t)
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	sets := []tilestore.SetName{
		{Layer: "a", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"},
		{Layer: "a", GridSetID: "EPSG:4326x", FormatID: "png", ParametersID: "default"},
		{Layer: "a", GridSetID: "EPSG:4326", FormatID: "jpeg", ParametersID: "default"},
		{Layer: "a", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "0123456789abcdef0123456789abcdef01234567"},
		{Layer: "ab", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"},
	}
	levels := []int{1, 2, 12, 13}
	var ds []quota.PageDelta
	for si, set := range sets {
		for _, z := range levels {
			// 0 to 24 pages a level, ids out of numeric order (x 2, 10, 11…).
			for i := range (si*7 + z*5) % 25 {
				ds = append(ds, quota.PageDelta{Page: quota.PageKey{Set: set, Z: z, X: int64(i*3 + 2), Y: int64(i % 4)}, Tiles: 1, Bytes: 4096})
			}
		}
	}
	if err := s.ApplyDeltas(t.Context(), ds, t0); err != nil {
		t.Fatal(err)
	}
	// Some emptied (a store may keep them), one deleted.
	var gone []quota.PageDelta
	for i, d := range ds {
		if i%9 == 4 {
			gone = append(gone, quota.PageDelta{Page: d.Page, Tiles: -d.Tiles, Bytes: -d.Bytes})
		}
	}
	if err := s.ApplyDeltas(t.Context(), gone, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeletePage(t.Context(), ds[1].Page); err != nil {
		t.Fatal(err)
	}
	for _, set := range sets {
		all, err := s.Pages(t.Context(), set.Layer)
		if err != nil {
			t.Fatal(err)
		}
		for _, z := range append(levels, 0, 3) {
			var want []quota.Page
			for _, p := range all {
				if p.Key.Set == set && p.Key.Z == z {
					want = append(want, p)
				}
			}
			for _, limit := range []int{1, 2, 3, 7, 1000} {
				got := LevelPages(t, s, set, z, limit)
				if !slices.Equal(ids(got), ids(want)) {
					t.Errorf("%s z%d, limit %d:\n got  %v\n want %v", set.ID(), z, limit, ids(got), ids(want))
					continue
				}
				for i := range got {
					if got[i] != want[i] {
						t.Errorf("%s z%d: page %+v, as listed by Pages %+v", set.ID(), z, got[i], want[i])
						break
					}
				}
			}
		}
	}

	t.Run("AfterAPageDeletedMeanwhile", func(t *testing.T) {
		// The page a call ended on is deleted before the next call.
		set, z := sets[0], 13
		first, next, err := s.LevelPages(t.Context(), set, z, "", 2)
		if err != nil || len(first) == 0 || next == "" {
			t.Fatalf("first call: %d pages, next %q, %v; want some and more", len(first), next, err)
		}
		var want []string
		for _, p := range LevelPages(t, s, set, z, 1000) {
			if p.Key.ID() == next {
				if _, _, err := s.DeletePage(t.Context(), p.Key); err != nil {
					t.Fatal(err)
				}
			} else if p.Key.ID() > next {
				want = append(want, p.Key.ID())
			}
		}
		if got := ids(levelPagesAfter(t, s, set, z, next)); !slices.Equal(got, want) {
			t.Errorf("after %s (deleted): got %v, want %v", next, got, want)
		}
	})

	t.Run("AfterOfAnotherLevelIsRefused", func(t *testing.T) {
		other := quota.PageKey{Set: sets[0], Z: 1, X: 2, Y: 0}.ID()
		if _, _, err := s.LevelPages(t.Context(), sets[0], 12, other, 10); err == nil {
			t.Fatalf("LevelPages of z12 after %s: no error", other)
		}
	})
}

// levelPagesAfter reads the pages of level z of set after the page after,
// 3 a call.
func levelPagesAfter(t *testing.T, s quota.PageStore, set tilestore.SetName, z int, after string) []quota.Page {
	t.Helper()
	var out []quota.Page
	for calls := 0; ; calls++ {
		if calls > 10_000 {
			t.Fatalf("LevelPages(%s, %d) did not end", set.ID(), z)
		}
		ps, next, err := s.LevelPages(t.Context(), set, z, after, 3)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ps...)
		if next == "" {
			return out
		}
		after = next
	}
}
