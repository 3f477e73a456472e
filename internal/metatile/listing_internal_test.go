package metatile

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/grid"
)

// TestDigitGroups checks the key groups of a level listing against brute
// force: every column the lane visits is in a listed group, no group is
// listed without one, and each group counts the tiles of exactly the
// level's columns it holds.
func TestDigitGroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		maxX := rng.Int64N(5000)
		full := grid.TileRange{MinX: rng.Int64N(maxX + 1), MaxX: maxX, MinY: 0, MaxY: rng.Int64N(50)}
		a, b := full.MinX+rng.Int64N(full.MaxX-full.MinX+1), full.MinX+rng.Int64N(full.MaxX-full.MinX+1)
		cov := grid.TileRange{MinX: min(a, b), MaxX: max(a, b), MinY: full.MinY, MaxY: full.MaxY}
		groups := digitGroups(full, cov)
		of := func(x int64) string {
			if x == 0 {
				return "0/"
			}
			return strconv.FormatInt(x, 10)[:1]
		}
		want := map[string]int64{}
		visits := map[string]bool{}
		for x := full.MinX; x <= full.MaxX; x++ {
			want[of(x)] += full.MaxY - full.MinY + 1
			if x >= cov.MinX && x <= cov.MaxX {
				visits[of(x)] = true
			}
		}
		listed := map[string]bool{}
		for _, g := range groups {
			listed[g.prefix] = true
			if !visits[g.prefix] {
				t.Fatalf("full %v cov %v: group %q listed without a column to visit", full, cov, g.prefix)
			}
			if g.tiles != want[g.prefix] {
				t.Fatalf("full %v cov %v: group %q holds %d tiles, want %d", full, cov, g.prefix, g.tiles, want[g.prefix])
			}
		}
		for p := range visits {
			if !listed[p] {
				t.Fatalf("full %v cov %v: columns starting %q are visited but not listed", full, cov, strings.TrimSuffix(p, "/"))
			}
		}
	}
}
