package grid

import (
	"math"
	"testing"
)

func TestExtentValid(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name string
		e    Extent
		want bool
	}{
		{"world", Extent{-180, -90, 180, 90}, true},
		{"zero value", Extent{}, false},
		{"flat x", Extent{1, 0, 1, 5}, false},
		{"flat y", Extent{0, 5, 1, 5}, false},
		{"inverted x", Extent{2, 0, 1, 5}, false},
		{"inverted y", Extent{0, 6, 1, 5}, false},
		{"nan", Extent{nan, 0, 1, 1}, false},
		{"inf max", Extent{0, 0, inf, 1}, false},
		{"-inf min", Extent{0, -inf, 1, 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.e.Valid(); got != tt.want {
				t.Errorf("%v.Valid() = %v, want %v", tt.e, got, tt.want)
			}
		})
	}
}

func TestExtentIntersects(t *testing.T) {
	a := Extent{0, 0, 10, 10}
	tests := []struct {
		name string
		o    Extent
		want bool
	}{
		{"same", a, true},
		{"inside", Extent{2, 2, 3, 3}, true},
		{"around", Extent{-1, -1, 11, 11}, true},
		{"overlap corner", Extent{9, 9, 20, 20}, true},
		{"touch east edge", Extent{10, 0, 20, 10}, false},
		{"touch north edge", Extent{0, 10, 10, 20}, false},
		{"touch corner", Extent{10, 10, 20, 20}, false},
		{"apart", Extent{11, 11, 20, 20}, false},
		{"overlap x only", Extent{2, 12, 3, 13}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Intersects(tt.o); got != tt.want {
				t.Errorf("%v.Intersects(%v) = %v, want %v", a, tt.o, got, tt.want)
			}
			if got := tt.o.Intersects(a); got != tt.want {
				t.Errorf("%v.Intersects(%v) = %v, want %v (symmetry)", tt.o, a, got, tt.want)
			}
		})
	}
}

func TestTileRangeCountContains(t *testing.T) {
	tests := []struct {
		name  string
		r     TileRange
		count int64
		in    [][2]int64
		out   [][2]int64
	}{
		{"single", TileRange{3, 5, 2, 5, 2}, 1, [][2]int64{{5, 2}}, [][2]int64{{4, 2}, {5, 3}}},
		{"block", TileRange{1, 0, 0, 3, 1}, 8, [][2]int64{{0, 0}, {3, 1}, {2, 0}}, [][2]int64{{4, 0}, {0, 2}, {-1, 0}}},
		{"empty x", TileRange{1, 2, 0, 1, 1}, 0, nil, [][2]int64{{1, 0}, {2, 0}}},
		{"empty y", TileRange{1, 0, 2, 1, 1}, 0, nil, [][2]int64{{0, 1}, {0, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Count(); got != tt.count {
				t.Errorf("%+v.Count() = %d, want %d", tt.r, got, tt.count)
			}
			for _, p := range tt.in {
				if !tt.r.Contains(p[0], p[1]) {
					t.Errorf("%+v.Contains(%d, %d) = false, want true", tt.r, p[0], p[1])
				}
			}
			for _, p := range tt.out {
				if tt.r.Contains(p[0], p[1]) {
					t.Errorf("%+v.Contains(%d, %d) = true, want false", tt.r, p[0], p[1])
				}
			}
			var n int64
			for x, y := range tt.r.All() {
				if !tt.r.Contains(x, y) {
					t.Errorf("All() yielded (%d, %d) outside %+v", x, y, tt.r)
				}
				n++
			}
			if n != tt.count {
				t.Errorf("All() yielded %d tiles, want %d", n, tt.count)
			}
		})
	}
}

func TestTileRangeAllOrder(t *testing.T) {
	r := TileRange{Z: 2, MinX: 1, MinY: 4, MaxX: 2, MaxY: 5}
	var got [][2]int64
	for x, y := range r.All() {
		got = append(got, [2]int64{x, y})
	}
	want := [][2]int64{{1, 4}, {2, 4}, {1, 5}, {2, 5}}
	if len(got) != len(want) {
		t.Fatalf("All() yielded %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("All() position %d: got %v, want %v", i, got[i], want[i])
		}
	}
	n := 0
	for range r.All() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("All() after break: got %d iterations, want 1", n)
	}
}

func TestTileRangeIntersect(t *testing.T) {
	a := TileRange{Z: 3, MinX: 0, MinY: 0, MaxX: 4, MaxY: 4}
	tests := []struct {
		name string
		o    TileRange
		want TileRange
		ok   bool
	}{
		{"overlap", TileRange{3, 2, 3, 9, 9}, TileRange{3, 2, 3, 4, 4}, true},
		{"inside", TileRange{3, 1, 1, 2, 2}, TileRange{3, 1, 1, 2, 2}, true},
		{"apart", TileRange{3, 5, 0, 9, 4}, TileRange{3, 5, 0, 4, 4}, false},
		{"other level", TileRange{4, 0, 0, 4, 4}, TileRange{3, 0, 0, -1, -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := a.Intersect(tt.o)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Intersect(%+v) = %+v, %v; want %+v, %v", tt.o, got, ok, tt.want, tt.ok)
			}
		})
	}
}
