package mbtiles_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"tilecache/internal/archive"
	"tilecache/internal/archive/mbtiles"
)

// TestWalkAndCount: Count of a range of levels is the tiles there, and
// Walk after any number skipped gives the rest of one fixed sequence.
func TestWalkAndCount(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.mbtiles")
	w, err := mbtiles.Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for z := range 5 {
		for x := range int64(1) << z {
			for y := range int64(1) << z {
				if err := w.Put(ctx, z, x, y, fmt.Appendf(nil, "%d/%d/%d", z, x, y)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MaxZoom: 4}); err != nil {
		t.Fatal(err)
	}
	r, err := mbtiles.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	walk := func(minZ, maxZ int, skip int64) []string {
		var got []string
		if err := r.Walk(ctx, minZ, maxZ, skip, func(z int, x, y int64, data []byte) error {
			if string(data) != fmt.Sprintf("%d/%d/%d", z, x, y) {
				return fmt.Errorf("tile %d/%d/%d holds %s", z, x, y, data)
			}
			got = append(got, string(data))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, c := range [][2]int{{0, 4}, {2, 3}, {4, 9}} {
		all := walk(c[0], c[1], 0)
		want := 0
		for z := c[0]; z <= min(c[1], 4); z++ {
			want += 1 << (2 * z)
		}
		if n, err := r.Count(ctx, c[0], c[1]); err != nil || n != int64(want) || len(all) != want {
			t.Errorf("levels %v: Count %d (%v), walked %d, want %d", c, n, err, len(all), want)
		}
		for _, skip := range []int{1, want / 2, want} {
			if got := walk(c[0], c[1], int64(skip)); fmt.Sprint(got) != fmt.Sprint(all[skip:]) {
				t.Errorf("levels %v after %d: %d tiles, want the last %d of the walk", c, skip, len(got), want-skip)
			}
		}
	}
}
