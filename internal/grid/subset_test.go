package grid

import (
	"math"
	"strings"
	"testing"
)

// mustSubset returns the subset of a built-in grid set with the given
// coverage (nil for the whole extent) or fails the test.
func mustSubset(tb testing.TB, g *GridSet, coverage *Extent) *Subset {
	tb.Helper()
	s, err := NewSubset(g, coverage, nil, nil)
	if err != nil {
		tb.Fatalf("NewSubset(%s, %v) = %v", g.ID, coverage, err)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func TestNewSubset(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	tests := []struct {
		name     string
		g        *GridSet
		coverage *Extent
		min, max *int
		want     Subset // when wantErr is ""
		wantErr  string
	}{
		{"defaults", g, nil, nil, nil, Subset{GridSet: g, Coverage: g.Extent, MinZoom: 0, MaxZoom: 21}, ""},
		{"narrowed", g, &Extent{-10, -10, 10, 10}, ptr(2), ptr(9),
			Subset{GridSet: g, Coverage: Extent{-10, -10, 10, 10}, MinZoom: 2, MaxZoom: 9}, ""},
		{"coverage beyond grid", g, &Extent{170, 80, 200, 100}, nil, ptr(21),
			Subset{GridSet: g, Coverage: Extent{170, 80, 200, 100}, MinZoom: 0, MaxZoom: 21}, ""},
		{"one level", g, nil, ptr(21), ptr(21), Subset{GridSet: g, Coverage: g.Extent, MinZoom: 21, MaxZoom: 21}, ""},
		{"nil grid set", nil, nil, nil, nil, Subset{}, "grid set is missing"},
		{"invalid grid set", &GridSet{ID: "x"}, nil, nil, nil, Subset{}, "EPSG code 0"},
		{"invalid coverage", g, &Extent{1, 1, 0, 2}, nil, nil, Subset{}, "coverage 1,1,0,2 is not finite"},
		{"coverage outside", g, &Extent{190, 0, 200, 10}, nil, nil, Subset{}, "lies outside"},
		{"coverage touching", g, &Extent{180, 0, 200, 10}, nil, nil, Subset{}, "lies outside"},
		{"negative min", g, nil, ptr(-1), nil, Subset{}, "min zoom -1 is outside the levels 0 to 21"},
		{"max too high", g, nil, nil, ptr(22), Subset{}, "max zoom 22 is outside the levels 0 to 21"},
		{"min above max", g, nil, ptr(5), ptr(4), Subset{}, "min zoom 5 is greater than max zoom 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewSubset(tt.g, tt.coverage, tt.min, tt.max)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("NewSubset() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewSubset() error = %v, want nil", err)
			}
			if *got != tt.want {
				t.Errorf("NewSubset() = %+v, want %+v", *got, tt.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
		})
	}
}

func TestSubsetZeroCoverageIsWholeExtent(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	s := &Subset{GridSet: g, MaxZoom: 21}
	if got := s.Extent(); got != g.Extent {
		t.Errorf("Extent() = %v, want %v", got, g.Extent)
	}
	for _, z := range []int{0, 3, 21} {
		if got, want := s.CoverageRange(z), g.GridRange(z); got != want {
			t.Errorf("CoverageRange(%d) = %+v, want %+v", z, got, want)
		}
	}
}

// TestRangeContractExamples checks the examples of contract section 10.2.
func TestRangeContractExamples(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	s := mustSubset(t, g, nil)
	if w, h := g.Span(12); w != 0.0439453125 || h != 0.0439453125 {
		t.Fatalf("Span(12) = %v x %v, want 0.0439453125 x 0.0439453125", w, h)
	}
	tests := []struct {
		name   string
		bounds Extent
		want   TileRange
		tiles  int64
	}{
		{"south-west quarter", Extent{-180, -90, 0, 0}, TileRange{12, 0, 0, 4095, 2047}, 8388608},
		{"whole level", g.Extent, TileRange{12, 0, 0, 8191, 4095}, 33554432},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.Range(tt.bounds, 12)
			if got != tt.want {
				t.Errorf("Range(%v, 12) = %+v, want %+v", tt.bounds, got, tt.want)
			}
			if n := got.Count(); n != tt.tiles {
				t.Errorf("Range(%v, 12).Count() = %d, want %d", tt.bounds, n, tt.tiles)
			}
			// Already whole 4x4 metatiles: the plan has the same tiles.
			for _, m := range []int{1, 4} {
				p, err := NewPlan(s, tt.bounds, 12, 12, m, m)
				if err != nil {
					t.Fatalf("NewPlan(%dx%d) = %v", m, m, err)
				}
				if n := p.Tiles(); n != tt.tiles {
					t.Errorf("NewPlan(%dx%d).Tiles() = %d, want %d", m, m, n, tt.tiles)
				}
				if n, want := p.Metatiles(), tt.tiles/int64(m*m); n != want {
					t.Errorf("NewPlan(%dx%d).Metatiles() = %d, want %d", m, m, n, want)
				}
			}
		})
	}
}

// TestRangeEdges checks that an edge lying on a tile edge does not pull in
// the next tile, and that one just beyond it does.
func TestRangeEdges(t *testing.T) {
	g4326 := mustBuiltin(t, EPSG4326)
	s4326 := mustSubset(t, g4326, nil)
	g900913 := mustBuiltin(t, EPSG900913)
	s900913 := mustSubset(t, g900913, nil)
	const w12 = 0.0439453125
	const h = 20037508.34
	tests := []struct {
		name   string
		s      *Subset
		bounds Extent
		z      int
		want   TileRange
	}{
		{"one tile at origin", s4326, Extent{0, 0, w12, w12}, 12, TileRange{12, 4096, 2048, 4096, 2048}},
		{"three tiles exact multiples", s4326, Extent{3 * w12, 5 * w12, 6 * w12, 7 * w12}, 12,
			TileRange{12, 4096 + 3, 2048 + 5, 4096 + 5, 2048 + 6}},
		{"max just past edge", s4326, Extent{0, 0, w12 * 1.001, w12}, 12, TileRange{12, 4096, 2048, 4097, 2048}},
		{"min just before edge", s4326, Extent{-w12 * 0.001, 0, w12, w12}, 12, TileRange{12, 4095, 2048, 4096, 2048}},
		{"inside one tile", s4326, Extent{0.01, 0.01, 0.02, 0.02}, 12, TileRange{12, 4096, 2048, 4096, 2048}},
		{"line on an edge", s4326, Extent{0, 0, 0, w12}, 12, TileRange{12, 4096, 2048, 4096, 2048}},
		{"point on a corner", s4326, Extent{0, 0, 0, 0}, 12, TileRange{12, 4096, 2048, 4096, 2048}},
		{"z0 east half", s4326, Extent{0, -90, 180, 90}, 0, TileRange{0, 1, 0, 1, 0}},
		{"z0 west half", s4326, Extent{-180, -90, 0, 90}, 0, TileRange{0, 0, 0, 0, 0}},
		// 20037508.34/2^k is not exact in binary: the float noise must not
		// pull in a neighbour.
		{"900913 z1 north-east", s900913, Extent{0, 0, h, h}, 1, TileRange{1, 1, 1, 1, 1}},
		{"900913 z2 quarter", s900913, Extent{-h / 2, 0, 0, h / 2}, 2, TileRange{2, 1, 2, 1, 2}},
		{"900913 z20 column", s900913, Extent{0, -h, 2 * h / (1 << 20), h}, 20,
			TileRange{20, 1 << 19, 0, 1 << 19, 1<<20 - 1}},
		{"900913 z30 one tile", s900913, g900913.TileExtent(30, 123456789, 987654321), 30,
			TileRange{30, 123456789, 987654321, 123456789, 987654321}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Range(tt.bounds, tt.z); got != tt.want {
				t.Errorf("Range(%v, %d) = %+v, want %+v", tt.bounds, tt.z, got, tt.want)
			}
		})
	}
}

// TestRangeClamping checks that bounds are clamped into the coverage, so a
// box outside it yields edge tiles, never an empty range.
func TestRangeClamping(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	s := mustSubset(t, g, &Extent{-10, -10, 10, 10})
	inf := math.Inf(1)
	// At z3 a tile is 22.5°: the coverage spans columns 7–8 and rows 3–4.
	cov := TileRange{3, 7, 3, 8, 4}
	if got := s.CoverageRange(3); got != cov {
		t.Fatalf("CoverageRange(3) = %+v, want %+v", got, cov)
	}
	tests := []struct {
		name   string
		bounds Extent
		want   TileRange
	}{
		{"inside", Extent{-1, -1, 1, 1}, cov},
		{"world", g.Extent, cov},
		{"infinite", Extent{-inf, -inf, inf, inf}, cov},
		{"huge", Extent{-1e300, -1e300, 1e300, 1e300}, cov},
		{"north-east outside", Extent{100, 60, 120, 80}, TileRange{3, 8, 4, 8, 4}},
		{"south-west outside", Extent{-170, -80, -160, -70}, TileRange{3, 7, 3, 7, 3}},
		{"east strip", Extent{100, -1, 120, 1}, TileRange{3, 8, 3, 8, 4}},
		{"overlapping west edge", Extent{-50, -5, -5, 5}, TileRange{3, 7, 3, 7, 4}},
		{"outside the grid", Extent{500, 500, 600, 600}, TileRange{3, 8, 4, 8, 4}},
		{"nan means coverage", Extent{math.NaN(), 0, 1, 1}, cov},
		{"inverted means coverage", Extent{1, 0, 0, 1}, cov},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.Range(tt.bounds, 3)
			if got != tt.want {
				t.Errorf("Range(%v, 3) = %+v, want %+v", tt.bounds, got, tt.want)
			}
			if got.Count() == 0 {
				t.Errorf("Range(%v, 3) is empty", tt.bounds)
			}
		})
	}
}

func TestCoverageRangeClippedToGrid(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	tests := []struct {
		name     string
		coverage Extent
		z        int
		want     TileRange
	}{
		{"beyond on every side", Extent{-200, -100, 200, 100}, 0, TileRange{0, 0, 0, 1, 0}},
		{"beyond north-east", Extent{170, 80, 200, 100}, 2, TileRange{2, 7, 3, 7, 3}},
		{"small", Extent{1, 1, 2, 2}, 2, TileRange{2, 4, 2, 4, 2}},
		{"edges on tile edges", Extent{-90, 0, 90, 45}, 2, TileRange{2, 2, 2, 5, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Subset{GridSet: g, Coverage: tt.coverage, MaxZoom: 21}
			if got := s.CoverageRange(tt.z); got != tt.want {
				t.Errorf("CoverageRange(%d) = %+v, want %+v", tt.z, got, tt.want)
			}
		})
	}
}

// TestRangeTopLeft checks a top-left grid whose height is not a whole number
// of tiles: rows come out negative from the formula and are shifted so that
// row 0 is the bottom row, which reaches below the extent.
func TestRangeTopLeft(t *testing.T) {
	g := topLeftGrid()
	s := mustSubset(t, g, nil)
	if cols, rows := g.Size(0); cols != 10 || rows != 8 {
		t.Fatalf("Size(0) = %d x %d, want 10 x 8", cols, rows)
	}
	tests := []struct {
		name   string
		bounds Extent
		z      int
		want   TileRange
	}{
		{"whole extent", g.Extent, 0, TileRange{0, 0, 0, 9, 7}},
		{"top-left tile", Extent{0, 650, 100, 750}, 0, TileRange{0, 0, 7, 0, 7}},
		// The origin is at the top, so y = 0 and y = 100 fall inside rows.
		{"bottom-left square", Extent{0, 0, 100, 100}, 0, TileRange{0, 0, 0, 0, 1}},
		{"bottom row only", Extent{0, -50, 100, 50}, 0, TileRange{0, 0, 0, 0, 0}},
		{"below the grid", Extent{0, -500, 100, -400}, 0, TileRange{0, 0, 0, 0, 0}},
		{"above the grid", Extent{0, 800, 100, 900}, 0, TileRange{0, 0, 7, 0, 7}},
		{"z1 top rows", Extent{0, 650, 100, 750}, 1, TileRange{1, 0, 13, 1, 14}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Range(tt.bounds, tt.z); got != tt.want {
				t.Errorf("Range(%v, %d) = %+v, want %+v", tt.bounds, tt.z, got, tt.want)
			}
		})
	}
	// The same grid aligned bottom-left puts the square in one row.
	bl := topLeftGrid()
	bl.TopLeft = false
	if got, want := mustSubset(t, bl, nil).Range(Extent{0, 0, 100, 100}, 0), (TileRange{0, 0, 0, 0, 0}); got != want {
		t.Errorf("bottom-left Range = %+v, want %+v", got, want)
	}
}
