package pmtiles_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/pmtiles"
)

// TestWalkAndCount: Count of a range of levels is the tiles Tiles gives
// there, and Walk of those levels after any number skipped gives the rest
// of Tiles' sequence there, leaf directories included.
func TestWalkAndCount(t *testing.T) {
	ctx := context.Background()
	set := archivetest.RandomTiles(rand.New(rand.NewPCG(5, 6)), 9, 30000)
	var buf bytes.Buffer
	w, err := pmtiles.Create(t.TempDir(), &buf, pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for k, data := range set {
		if err := w.Put(ctx, k.Z, k.X, k.Y, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MaxZoom: 9}); err != nil {
		t.Fatal(err)
	}
	r, err := pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(buf.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	if err := r.Tiles(ctx, func(z int, x, y int64, data []byte) error {
		all = append(all, fmt.Sprintf("%d/%d/%d %s", z, x, y, data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int{{0, 31}, {0, 9}, {3, 5}, {9, 9}, {8, 12}, {10, 12}} {
		var want []string
		for _, s := range all {
			var z int
			fmt.Sscanf(s, "%d/", &z)
			if z >= c[0] && z <= c[1] {
				want = append(want, s)
			}
		}
		n, err := r.Count(ctx, c[0], c[1])
		if err != nil || n != int64(len(want)) {
			t.Errorf("Count(%d, %d) = %d, %v; want %d", c[0], c[1], n, err, len(want))
		}
		for _, skip := range []int{0, 1, len(want) / 3, len(want) - 1, len(want)} {
			if skip < 0 {
				continue
			}
			var got []string
			if err := r.Walk(ctx, c[0], c[1], int64(skip), func(z int, x, y int64, data []byte) error {
				got = append(got, fmt.Sprintf("%d/%d/%d %s", z, x, y, data))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if skip > len(want) {
				continue
			}
			if fmt.Sprint(got) != fmt.Sprint(want[skip:]) {
				t.Errorf("Walk(%d, %d) after %d: %d tiles, want %d", c[0], c[1], skip, len(got), len(want)-skip)
			}
		}
	}
}
