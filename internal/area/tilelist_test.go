package area

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/apperr"
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

// repeat reads text n times without holding it n times.
type repeat struct {
	text   string
	n, off int
}

func (r *repeat) Read(p []byte) (int, error) {
	w := 0
	for w < len(p) && r.n > 0 {
		c := copy(p[w:], r.text[r.off:])
		w, r.off = w+c, r.off+c
		if r.off == len(r.text) {
			r.off, r.n = 0, r.n-1
		}
	}
	if w == 0 {
		return 0, io.EOF
	}
	return w, nil
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	before := m.TotalAlloc
	f()
	runtime.ReadMemStats(&m)
	return m.TotalAlloc - before
}

// TestTileListDuplicatesAsTheyArrive: duplicates cost nothing held,
// whatever their number: the list keeps its distinct metatiles and a
// bounded batch of keys pending (4 MiB, 12 MiB allocated growing), and
// parses its lines without allocating.
func TestTileListDuplicatesAsTheyArrive(t *testing.T) {
	g := builtin(t, "EPSG:900913")
	var diagonal strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&diagonal, "12/%d/%d\n", i, i)
	}
	for _, tt := range []struct {
		name      string
		text      string
		n         int
		o         ListOptions
		metatiles int
	}{
		{"0/0/0 2 million times", "0/0/0\n", 2_000_000, ListOptions{ParentsTo: -1, ChildrenTo: -1}, 1},
		// Metatiles of the diagonal: 250 at z12, 125 at z11, 63, 32, ...
		{"1,000 tiles of z12 with their parents, 500 times", diagonal.String(), 500, ListOptions{ParentsTo: 0, ChildrenTo: -1}, 250 + 125 + 63 + 32 + 16 + 8 + 4 + 2 + 1 + 1 + 1 + 1 + 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.MetaW, tt.o.MetaH = 4, 4
			var l *TileList
			var err error
			alloc := allocated(func() { l, err = ReadTileList(&repeat{text: tt.text, n: tt.n}, g, tt.o) })
			if err != nil {
				t.Fatal(err)
			}
			if l.Metatiles() != tt.metatiles {
				t.Fatalf("%d metatiles, want %d", l.Metatiles(), tt.metatiles)
			}
			if alloc > 16<<20 {
				t.Fatalf("%.1f MiB allocated, want at most 16 MiB (the batch of keys pending)", float64(alloc)/(1<<20))
			}
		})
	}
}

// TestTileListLimitsAsTheyArrive: each limit refuses the line that
// passes it, naming the line, the limit and what the list reached, and
// a list of duplicates at its limit is taken.
func TestTileListLimitsAsTheyArrive(t *testing.T) {
	g := builtin(t, "EPSG:900913")
	o := ListOptions{ParentsTo: -1, ChildrenTo: -1, MetaW: 4, MetaH: 4}
	for _, tt := range []struct {
		name string
		text string
		n    int
		o    func(*ListOptions)
		want string
	}{
		{"lines, blank ones included", "0/0/0\n\n", 50, func(o *ListOptions) { o.MaxLines = 99 },
			"tile list line 100: the list has more than 99 lines (the limit of a list)"},
		// 1/0/0 and 1/1/1 are distinct quarters: 1 + 1 + 1 + 4 + 16 +
		// 64 metatiles, counted at each line but the metatiles of z1
		// and z2 they share: 87 + 10 × 85 at line 11.
		{"work", "1/0/0\n1/1/1\n", 100, func(o *ListOptions) { o.ChildrenTo, o.MaxWork = 6, 870 },
			"tile list line 11: the list's lines name more than 870 metatiles with their parents and children, duplicates included (the limit of a list's work): 937 with this line's"},
		// 0/0/0's children to z6: 1 + 1 + 1 + 4 + 16 + 64 + 256.
		{"one line's children", "0/0/0\n", 1, func(o *ListOptions) { o.ChildrenTo, o.MaxMetatiles = 6, 342 },
			"tile list line 1: the list names more than 342 metatiles (the limit of a list): this line names 343 with its parents and children"},
		// 87 + 85 metatiles, then 85 more with 1/0/1.
		{"a line's new children", "1/0/0\n1/1/1\n1/0/1\n", 1, func(o *ListOptions) { o.ChildrenTo, o.MaxMetatiles = 6, 87+85+1 },
			"tile list line 3: the list names more than 173 metatiles (the limit of a list): 257 with this line's tiles, parents and children"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := o
			tt.o(&o)
			_, err := ReadTileList(&repeat{text: tt.text, n: tt.n}, g, o)
			if !apperr.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an Invalid error naming %q", err, tt.want)
			}
		})
	}
	// At the limit, lines of metatiles held already are taken, whatever
	// their ranges and the batch.
	for _, batch := range []int{1, 2, 1000} {
		o := ListOptions{ParentsTo: -1, ChildrenTo: 6, MetaW: 4, MetaH: 4, MaxMetatiles: 343, batch: batch}
		l, err := ReadTileList(&repeat{text: "1/1/1\n0/0/0\n2/3/3\n3/7/7\n1/0/1\n", n: 20}, g, o)
		if err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		if l.Metatiles() != 343 {
			t.Fatalf("batch %d: %d metatiles, want 343", batch, l.Metatiles())
		}
	}
}
