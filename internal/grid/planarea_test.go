package grid

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// setArea is an area given tile by tile, for tests.
type setArea map[[3]int64]bool

func (a setArea) Lines(z int, order Order, r TileRange) (Lines, error) {
	u0, v0 := frame(order, r.MinX, r.MinY)
	u1, v1 := frame(order, r.MaxX, r.MaxY)
	var out Lines
	for u := u0; u <= u1; u++ {
		var spans []Span
		for v := v0; v <= v1; v++ {
			x, y := v, u
			if order == ByColumns {
				x, y = u, v
			}
			if a[[3]int64{int64(z), x, y}] {
				spans = append(spans, Span{v, v})
			}
		}
		out.Add(u, MergeSpans(spans))
	}
	return out, nil
}

// rangeArea is every tile of the range.
type rangeArea struct{}

func (rangeArea) Lines(z int, order Order, r TileRange) (Lines, error) {
	u0, v0 := frame(order, r.MinX, r.MinY)
	u1, v1 := frame(order, r.MaxX, r.MaxY)
	var out Lines
	for u := u0; u <= u1; u++ {
		out.Add(u, []Span{{v0, v1}})
	}
	return out, nil
}

// TestPlanAreaOfTheWholeRangeIsThePlan: an area holding every tile of the
// request plans the same metatiles, in the same order, as the plain plan.
func TestPlanAreaOfTheWholeRangeIsThePlan(t *testing.T) {
	for _, tt := range smallPlanCases(t) {
		for _, order := range []Order{ByRows, ByColumns} {
			t.Run(fmt.Sprintf("%s/order%d", tt.name, order), func(t *testing.T) {
				want := mustPlanOrdered(t, tt.s, tt.bounds, tt.zStart, tt.zStop, tt.metaW, tt.metaH, order)
				got, err := NewPlanArea(tt.s, tt.bounds, tt.zStart, tt.zStop, tt.metaW, tt.metaH, order, rangeArea{})
				if err != nil {
					t.Fatal(err)
				}
				// The plain plan counts whole widened metatiles; the
				// area only the request's range. Compare the numbering.
				if got.Metatiles() != want.Metatiles() {
					t.Fatalf("Metatiles() = %d, want %d", got.Metatiles(), want.Metatiles())
				}
				for i := range want.Metatiles() {
					if g, w := got.Meta(i), want.Meta(i); g.Tiles != w.Tiles || g.Index != w.Index {
						t.Fatalf("Meta(%d) = %+v, want %+v", i, g, w)
					}
				}
			})
		}
	}
}

// TestPlanAreaMatchesBruteForce checks a plan restricted to random sets of
// tiles against an enumeration of every metatile block of each level.
func TestPlanAreaMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, tt := range smallPlanCases(t) {
		for _, density := range []float64{0.02, 0.3, 0.9} {
			for _, order := range []Order{ByRows, ByColumns} {
				t.Run(fmt.Sprintf("%s/%.2f/order%d", tt.name, density, order), func(t *testing.T) {
					area := setArea{}
					for z := tt.zStart; z <= tt.zStop; z++ {
						// Some tiles outside the request's range too:
						// they must not count.
						cols, rows := tt.s.GridSet.Size(z)
						for x := range cols {
							for y := range rows {
								if rng.Float64() < density {
									area[[3]int64{int64(z), x, y}] = true
								}
							}
						}
					}
					testPlanArea(t, tt, order, area)
				})
			}
		}
	}
}

func testPlanArea(t *testing.T, tt planCase, order Order, area setArea) {
	t.Helper()
	p, err := NewPlanArea(tt.s, tt.bounds, tt.zStart, tt.zStop, tt.metaW, tt.metaH, order, area)
	if err != nil {
		t.Fatal(err)
	}
	plain := mustPlanOrdered(t, tt.s, tt.bounds, tt.zStart, tt.zStop, tt.metaW, tt.metaH, order)
	// Brute force: the plain plan's metatiles that hold an area tile in
	// the request's range, with those tiles.
	type meta struct {
		tiles TileRange
		has   [][2]int64
	}
	var want []meta
	for i := range plain.Metatiles() {
		m := plain.Meta(i)
		r := tt.s.Range(tt.bounds, m.Tiles.Z)
		var has [][2]int64
		for x, y := range m.Tiles.All() {
			if r.Contains(x, y) && area[[3]int64{int64(m.Tiles.Z), x, y}] {
				has = append(has, [2]int64{x, y})
			}
		}
		if len(has) > 0 {
			want = append(want, meta{m.Tiles, has})
		}
	}
	if p.Metatiles() != int64(len(want)) {
		t.Fatalf("Metatiles() = %d, want %d", p.Metatiles(), len(want))
	}
	var sum, levels int64
	for i, w := range want {
		if got := p.TilesBefore(int64(i)); got != sum {
			t.Fatalf("TilesBefore(%d) = %d, want %d", i, got, sum)
		}
		m := p.Meta(int64(i))
		if m.Index != int64(i) || m.Tiles != w.tiles {
			t.Fatalf("Meta(%d) = %+v, want tiles %+v", i, m, w.tiles)
		}
		if m.Count() != int64(len(w.has)) {
			t.Fatalf("Meta(%d).Count() = %d, want %d", i, m.Count(), len(w.has))
		}
		var got [][2]int64
		for x, y := range m.All() {
			got = append(got, [2]int64{x, y})
		}
		if fmt.Sprint(got) != fmt.Sprint(w.has) {
			t.Fatalf("Meta(%d).All() = %v, want %v", i, got, w.has)
		}
		sum += int64(len(w.has))
	}
	if p.Tiles() != sum || p.TilesBefore(p.Metatiles()) != sum {
		t.Fatalf("Tiles() = %d, TilesBefore(end) = %d, want %d", p.Tiles(), p.TilesBefore(p.Metatiles()), sum)
	}
	for z := tt.zStart; z <= tt.zStop; z++ {
		l, _ := p.Level(z)
		levels += l.Count
	}
	if levels != sum {
		t.Fatalf("levels count %d tiles, want %d", levels, sum)
	}
	var lanes int64
	for _, l := range p.Split(3) {
		lanes += l.Tiles
	}
	if lanes != sum {
		t.Fatalf("lanes hold %d tiles, want %d", lanes, sum)
	}
}

func TestLinesIntersect(t *testing.T) {
	a := Lines{K: []int64{2, 3, 5, 1 << 40}, Spans: [][]Span{{{0, 3}, {6, 9}}, {{1, 1}}, {{0, 100}}, {{0, 9}}}}
	b := Lines{K: []int64{3, 4, 5, 6, 1 << 40}, Spans: [][]Span{{{0, 5}}, {{2, 3}}, {{5, 7}, {9, 12}}, {{0, 0}}, {{9, 20}}}}
	got := Intersect(a, b)
	want := Lines{K: []int64{3, 5, 1 << 40}, Spans: [][]Span{{{1, 1}}, {{5, 7}, {9, 12}}, {{9, 9}}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Intersect = %v, want %v", got, want)
	}
	if got.Count() != 1+3+4+1 {
		t.Fatalf("Count = %d", got.Count())
	}
}
