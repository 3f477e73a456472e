package area

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/grid"
)

func readList(t *testing.T, g *grid.GridSet, text string, o ListOptions) *TileList {
	t.Helper()
	if o.MetaW == 0 {
		o.MetaW, o.MetaH = 4, 4
	}
	l, err := ReadTileList(strings.NewReader(text), g, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tilesOf lists the tiles of level z in the list, row by row.
func tilesOf(t *testing.T, l *TileList, z int, order grid.Order) []string {
	t.Helper()
	r := l.grid.GridRange(z)
	lines, err := l.Lines(z, order, r)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for x, y := range r.All() {
		u, v := y, x
		if order == grid.ByColumns {
			u, v = x, y
		}
		if lines.Has(u, v) {
			out = append(out, fmt.Sprintf("%d/%d/%d", z, x, y))
		}
	}
	return out
}

func TestTileListMetatiles(t *testing.T) {
	g := builtin(t, "EPSG:900913")
	// z3 has 8 rows: XYZ row 1 is TMS row 6, in metatile row 1 (rows 4-7);
	// columns 5 and 6 share metatile column 1 (columns 4-7).
	l := readList(t, g, "# expired\n3/5/1\n\n3 6 1\n3/5/1\n", ListOptions{XYZ: true, ParentsTo: -1, ChildrenTo: -1})
	if l.Metatiles() != 1 {
		t.Fatalf("%d metatiles, want 1", l.Metatiles())
	}
	var want []string
	for y := 4; y <= 7; y++ {
		for x := 4; x <= 7; x++ {
			want = append(want, fmt.Sprintf("3/%d/%d", x, y))
		}
	}
	for _, order := range []grid.Order{grid.ByRows, grid.ByColumns} {
		if got := tilesOf(t, l, 3, order); !slices.Equal(got, want) {
			t.Fatalf("order %d: %v, want %v", order, got, want)
		}
	}
	// The list survives a round trip.
	back, err := UnmarshalTileList(l.Marshal(), g)
	if err != nil {
		t.Fatal(err)
	}
	if got := tilesOf(t, back, 3, grid.ByRows); !slices.Equal(got, want) {
		t.Fatalf("after a round trip: %v", got)
	}
}

func TestTileListParentsAndChildren(t *testing.T) {
	g := builtin(t, "EPSG:900913")
	// TMS 4/9/9 with metatiles of 1×1: parents 3/4/4, 2/2/2; children
	// at z5: columns 18-19, rows 18-19.
	l := readList(t, g, "4/9/9\n", ListOptions{ParentsTo: 2, ChildrenTo: 5, MetaW: 1, MetaH: 1})
	want := map[int][]string{
		1: nil,
		2: {"2/2/2"},
		3: {"3/4/4"},
		4: {"4/9/9"},
		5: {"5/18/18", "5/19/18", "5/18/19", "5/19/19"},
		6: nil,
	}
	for z, w := range want {
		if got := tilesOf(t, l, z, grid.ByRows); !slices.Equal(got, w) {
			t.Errorf("z%d: %v, want %v", z, got, w)
		}
	}
	if lo, hi := l.Zooms(); lo != 2 || hi != 5 {
		t.Errorf("Zooms() = %d, %d", lo, hi)
	}
}

func TestTileListErrors(t *testing.T) {
	g := builtin(t, "EPSG:900913")
	for _, tt := range []struct{ text, want string }{
		{"3/5\n", `line 1: "3/5" is not z/x/y`},
		{"1/0/0\n3/a/1\n", `line 2: "3/a/1" is not z/x/y: "a" is not an integer`},
		{"3/8/0\n", "tile 3/8/0 is outside grid set EPSG:900913 (8 columns, 8 rows at level 3)"},
		{"40/0/0\n", "zoom level 40 is not a level of grid set EPSG:900913"},
		{"# nothing\n\n", "the tile list names no tile"},
	} {
		_, err := ReadTileList(strings.NewReader(tt.text), g, ListOptions{MetaW: 4, MetaH: 4, ParentsTo: -1, ChildrenTo: -1})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.text, err, tt.want)
		}
	}
	_, err := ReadTileList(strings.NewReader("10/0/0\n10/100/100\n10/500/500\n"), g, ListOptions{MetaW: 1, MetaH: 1, ParentsTo: -1, ChildrenTo: -1, MaxMetatiles: 1})
	if err == nil || !strings.Contains(err.Error(), "more than 1 metatiles") {
		t.Errorf("too many metatiles: %v", err)
	}
}
