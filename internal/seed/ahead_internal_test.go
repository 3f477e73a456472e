package seed

import (
	"strings"
	"testing"

	"tilecache/internal/area"
	"tilecache/internal/grid"
)

// TestAheadRangeOfAnArea: in a plan restricted to an area, the columns a
// lane still visits are those of its own metatiles, not of the indices a
// whole-range plan would give them.
func TestAheadRangeOfAnArea(t *testing.T) {
	g, _ := grid.Builtin("EPSG:900913")
	sub, err := grid.NewSubset(g, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Three z5 metatiles (4×4): columns 0-3, 12-15 and 28-31.
	list, err := area.ReadTileList(strings.NewReader("5/3/29\n5/12/12\n5/30/1\n"), g, area.ListOptions{MetaW: 4, MetaH: 4, ParentsTo: -1, ChildrenTo: -1})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := grid.NewPlanArea(sub, g.Extent, 5, 5, 4, 4, grid.ByColumns, list)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Metatiles() != 3 {
		t.Fatalf("%d metatiles, want 3", plan.Metatiles())
	}
	for _, tt := range []struct {
		from, to   int64
		minX, maxX int64
	}{{0, 3, 0, 31}, {1, 2, 12, 15}, {1, 3, 12, 31}, {2, 3, 28, 31}} {
		r, ok := plan.Ahead(5, tt.from, tt.to)
		if !ok || r.MinX != tt.minX || r.MaxX != tt.maxX {
			t.Errorf("Ahead(%d, %d) = %+v, %v; want columns %d-%d", tt.from, tt.to, r, ok, tt.minX, tt.maxX)
		}
	}
	if _, ok := plan.Ahead(5, 3, 3); ok {
		t.Errorf("an empty lane has a range")
	}
}
