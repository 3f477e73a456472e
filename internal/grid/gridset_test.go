package grid

import (
	"math"
	"strings"
	"testing"
)

// mustBuiltin returns a built-in grid set or fails the test.
func mustBuiltin(tb testing.TB, id string) *GridSet {
	tb.Helper()
	g, ok := Builtin(id)
	if !ok {
		tb.Fatalf("Builtin(%q) not found", id)
	}
	return g
}

// topLeftGrid is a custom top-left grid set whose height is not a whole
// number of tiles: 10 × 8 tiles of 100 units at level 0, the bottom row
// reaching 50 units below the extent.
func topLeftGrid() *GridSet {
	return &GridSet{
		ID:          "custom-tl",
		EPSG:        3035,
		Extent:      Extent{0, 0, 1000, 750},
		TileWidth:   100,
		TileHeight:  100,
		Resolutions: []float64{1, 0.5, 0.25},
		TopLeft:     true,
	}
}

func TestGridSetValidate(t *testing.T) {
	good := func() *GridSet { return mustBuiltin(t, EPSG4326) }
	tests := []struct {
		name   string
		mutate func(g *GridSet)
		want   string // substring of the error, "" for none
	}{
		{"builtin", func(*GridSet) {}, ""},
		{"empty id", func(g *GridSet) { g.ID = "" }, "id is empty"},
		{"epsg", func(g *GridSet) { g.EPSG = 0 }, "EPSG code 0"},
		{"flat extent", func(g *GridSet) { g.Extent.MaxX = g.Extent.MinX }, "extent"},
		{"nan extent", func(g *GridSet) { g.Extent.MinY = math.NaN() }, "extent"},
		{"tile width", func(g *GridSet) { g.TileWidth = 0 }, "tile size 0x256"},
		{"tile height", func(g *GridSet) { g.TileHeight = -1 }, "tile size 256x-1"},
		{"no resolutions", func(g *GridSet) { g.Resolutions = nil }, "no resolutions"},
		{"zero resolution", func(g *GridSet) { g.Resolutions = []float64{1, 0} }, "resolution 0 of level 1"},
		{"inf resolution", func(g *GridSet) { g.Resolutions = []float64{math.Inf(1)} }, "not finite"},
		{"equal", func(g *GridSet) { g.Resolutions = []float64{1, 0.5, 0.5} }, "not strictly decreasing: level 2"},
		{"increasing", func(g *GridSet) { g.Resolutions = []float64{1, 2} }, "not strictly decreasing: level 1"},
		{"too many tiles", func(g *GridSet) { g.Resolutions = halvings(0.703125, 40) }, "more than 2^62 tiles"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := good()
			tt.mutate(g)
			err := g.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Errorf("Validate() = nil, want error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("Validate() = %q, want it to contain %q", err, tt.want)
			}
		})
	}
	var nilGrid *GridSet
	if err := nilGrid.Validate(); err == nil {
		t.Errorf("nil.Validate() = nil, want error")
	}
}

func TestBuiltins(t *testing.T) {
	tests := []struct {
		id     string
		epsg   int
		extent Extent
		levels int
		r0     float64
		sizeOf func(z int) (int64, int64)
	}{
		{EPSG4326, 4326, Extent{-180, -90, 180, 90}, 22, 0.703125,
			func(z int) (int64, int64) { return 1 << (z + 1), 1 << z }},
		{EPSG900913, 900913, Extent{-20037508.34, -20037508.34, 20037508.34, 20037508.34}, 31, 156543.03390625,
			func(z int) (int64, int64) { return 1 << z, 1 << z }},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			g := mustBuiltin(t, tt.id)
			// Every level is checked, which includes 0 and the last one.
			if err := g.Validate(); err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if g.ID != tt.id || g.EPSG != tt.epsg || g.Extent != tt.extent || g.TopLeft ||
				g.TileWidth != 256 || g.TileHeight != 256 {
				t.Errorf("got %+v, want id %s, EPSG %d, extent %v, 256x256, bottom-left", g, tt.id, tt.epsg, tt.extent)
			}
			if got := g.Levels(); got != tt.levels {
				t.Errorf("Levels() = %d, want %d", got, tt.levels)
			}
			for z, r := range g.Resolutions {
				if want := tt.r0 / math.Exp2(float64(z)); r != want {
					t.Errorf("resolution %d = %v, want %v", z, r, want)
				}
			}
			for z := range g.Levels() {
				cols, rows := g.Size(z)
				wc, wr := tt.sizeOf(z)
				if cols != wc || rows != wr {
					t.Errorf("Size(%d) = %d x %d, want %d x %d", z, cols, rows, wc, wr)
				}
			}
		})
	}
	if _, ok := Builtin("EPSG:3857"); ok {
		t.Errorf(`Builtin("EPSG:3857") found, want not found (3857 is a CRS alias, not a grid set id)`)
	}
	if _, ok := Builtin("epsg:4326"); ok {
		t.Errorf(`Builtin("epsg:4326") found, want exact match only`)
	}
}

func TestBuiltinsAreCopies(t *testing.T) {
	all := Builtins()
	if len(all) != 2 || all[0].ID != EPSG4326 || all[1].ID != EPSG900913 {
		t.Fatalf("Builtins() = %v, want EPSG:4326 then EPSG:900913", all)
	}
	all[0].Resolutions[0] = 1
	all[0].ID = "mutated"
	again := mustBuiltin(t, EPSG4326)
	if again.Resolutions[0] != 0.703125 || again.ID != EPSG4326 {
		t.Errorf("after mutating a copy, Builtin = %+v, want the pristine grid set", again)
	}
	if Builtins()[0].Resolutions[0] != 0.703125 {
		t.Errorf("after mutating a copy, Builtins()[0].Resolutions[0] changed")
	}
}

func TestSameCRS(t *testing.T) {
	tests := []struct {
		a, b int
		want bool
	}{
		{4326, 4326, true},
		{900913, 3857, true},
		{3857, 102113, true},
		{102100, 900913, true},
		{102113, 102100, true},
		{4326, 3857, false},
		{3857, 3035, false},
		{3035, 3035, true},
		{27700, 3035, false},
	}
	for _, tt := range tests {
		if got := SameCRS(tt.a, tt.b); got != tt.want {
			t.Errorf("SameCRS(%d, %d) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestTileExtent(t *testing.T) {
	g4326 := mustBuiltin(t, EPSG4326)
	g900913 := mustBuiltin(t, EPSG900913)
	tl := topLeftGrid()
	const h = 20037508.34
	tests := []struct {
		name string
		g    *GridSet
		z    int
		x, y int64
		want Extent
	}{
		{"4326 z0 west", g4326, 0, 0, 0, Extent{-180, -90, 0, 90}},
		{"4326 z0 east", g4326, 0, 1, 0, Extent{0, -90, 180, 90}},
		{"4326 z1 north-east", g4326, 1, 3, 1, Extent{90, 0, 180, 90}},
		{"4326 z12", g4326, 12, 4096, 2048, Extent{0, 0, 0.0439453125, 0.0439453125}},
		{"900913 z0", g900913, 0, 0, 0, Extent{-h, -h, h, h}},
		{"900913 z1 south-west", g900913, 1, 0, 0, Extent{-h, -h, 0, 0}},
		{"top-left bottom row", tl, 0, 0, 0, Extent{0, -50, 100, 50}},
		{"top-left top row", tl, 0, 9, 7, Extent{900, 650, 1000, 750}},
		{"top-left z1 top row", tl, 1, 0, 14, Extent{0, 700, 50, 750}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.g.TileExtent(tt.z, tt.x, tt.y)
			if !extentNear(got, tt.want, 1e-9) {
				t.Errorf("TileExtent(%d, %d, %d) = %v, want %v", tt.z, tt.x, tt.y, got, tt.want)
			}
		})
	}
}

func extentNear(a, b Extent, tol float64) bool {
	near := func(p, q float64) bool { return math.Abs(p-q) <= tol*math.Max(1, math.Abs(q)) }
	return near(a.MinX, b.MinX) && near(a.MinY, b.MinY) && near(a.MaxX, b.MaxX) && near(a.MaxY, b.MaxY)
}

// TestTileExtentRoundTrip checks that the extent of a tile maps back to
// exactly that tile, including at the grid's corners and deepest level.
func TestTileExtentRoundTrip(t *testing.T) {
	for _, g := range append(Builtins(), topLeftGrid()) {
		s, err := NewSubset(g, nil, nil, nil)
		if err != nil {
			t.Fatalf("NewSubset(%s) = %v", g.ID, err)
		}
		for z := range g.Levels() {
			cols, rows := g.Size(z)
			for _, x := range []int64{0, 1, cols / 3, cols / 2, cols - 2, cols - 1} {
				for _, y := range []int64{0, 1, rows / 3, rows / 2, rows - 2, rows - 1} {
					if x < 0 || y < 0 || x >= cols || y >= rows {
						continue
					}
					e := g.TileExtent(z, x, y)
					want := TileRange{Z: z, MinX: x, MinY: y, MaxX: x, MaxY: y}
					if got := s.Range(e, z); got != want {
						t.Errorf("%s: Range(TileExtent(%d, %d, %d) = %v) = %+v, want %+v", g.ID, z, x, y, e, got, want)
					}
				}
			}
			// The whole level's extent maps back to the whole level.
			all := g.GridRange(z)
			if got := s.Range(g.RangeExtent(all), z); got != all {
				t.Errorf("%s: Range(RangeExtent(level %d)) = %+v, want %+v", g.ID, z, got, all)
			}
		}
	}
}
