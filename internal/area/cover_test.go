package area

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/planar"

	"tilecache/internal/grid"
)

func builtin(t testing.TB, id string) *grid.GridSet {
	t.Helper()
	g, ok := grid.Builtin(id)
	if !ok {
		t.Fatalf("no built-in grid set %s", id)
	}
	return g
}

// bruteCover tells, tile by tile, whether the tile's square (shrunk by a
// hair, so that touching is not meeting) meets one of the polygons: a
// polygon vertex inside the square, a square corner inside the polygon, or
// an edge of one crossing an edge of the other. It shares nothing with
// Shape.Lines but the tile-space transformation.
func bruteCover(g *grid.GridSet, polys orb.MultiPolygon, z int, x, y int64) bool {
	const e = 1e-6
	w, h := g.Span(z)
	o := g.TileExtent(z, 0, 0)
	toTile := func(p orb.Point) orb.Point { return orb.Point{(p[0] - o.MinX) / w, (p[1] - o.MinY) / h} }
	sq := [4]orb.Point{{float64(x) + e, float64(y) + e}, {float64(x+1) - e, float64(y) + e}, {float64(x+1) - e, float64(y+1) - e}, {float64(x) + e, float64(y+1) - e}}
	for _, poly := range polys {
		tp := make(orb.Polygon, len(poly))
		for i, r := range poly {
			tp[i] = make(orb.Ring, len(r))
			for j, p := range r {
				tp[i][j] = toTile(p)
			}
		}
		for _, c := range sq {
			if planar.PolygonContains(tp, c) {
				return true
			}
		}
		for _, r := range tp {
			for j := range r {
				p := r[j]
				if p[0] > sq[0][0] && p[0] < sq[2][0] && p[1] > sq[0][1] && p[1] < sq[2][1] {
					return true
				}
				if j+1 < len(r) {
					for k := range 4 {
						if segmentsCross(p, r[j+1], sq[k], sq[(k+1)%4]) {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

func segmentsCross(a, b, c, d orb.Point) bool {
	cross := func(o, p, q orb.Point) float64 { return (p[0]-o[0])*(q[1]-o[1]) - (p[1]-o[1])*(q[0]-o[0]) }
	d1, d2 := cross(c, d, a), cross(c, d, b)
	d3, d4 := cross(a, b, c), cross(a, b, d)
	return (d1 > 0) != (d2 > 0) && (d3 > 0) != (d4 > 0) && d1 != 0 && d2 != 0 && d3 != 0 && d4 != 0
}

func randomStar(rng *rand.Rand, cx, cy, r float64, n int) orb.Polygon {
	ring := make(orb.Ring, 0, n+1)
	for i := range n {
		a := 2 * math.Pi * (float64(i) + 0.8*rng.Float64()) / float64(n)
		rr := r * (0.2 + 0.8*rng.Float64())
		ring = append(ring, orb.Point{cx + rr*math.Cos(a), cy + rr*math.Sin(a)})
	}
	return orb.Polygon{append(ring, ring[0])}
}

func coverShapes(t *testing.T) map[string]struct {
	g     *grid.GridSet
	specs []Spec
} {
	rng := rand.New(rand.NewPCG(1, 2))
	g4326, gm := builtin(t, "EPSG:4326"), builtin(t, "EPSG:900913")
	star := randomStar(rng, 10, 50, 30, 40)
	holed := orb.Polygon{
		{{-60, -40}, {60, -40}, {60, 40}, {-60, 40}, {-60, -40}},
		{{-20, -10}, {20, -10}, {20, 10}, {-20, 10}, {-20, -10}},
	}
	overlap := orb.MultiPolygon{randomStar(rng, 0, 0, 40, 12), randomStar(rng, 20, 10, 40, 12)}
	strip := orb.Polygon{{{-170, -80}, {-168, -80}, {170, 79}, {168, 79.5}, {-170, -80}}}
	line := orb.LineString{{-120, 30}, {-80, 45}, {-20, 10}, {40, 60}}
	type shape = struct {
		g     *grid.GridSet
		specs []Spec
	}
	return map[string]shape{
		"4326 star":               {g4326, []Spec{{Geometry: star, ZoomStart: -1}}},
		"4326 holed":              {g4326, []Spec{{Geometry: holed, ZoomStart: -1}}},
		"4326 overlapping":        {g4326, []Spec{{Geometry: overlap, ZoomStart: -1}}},
		"4326 diagonal strip":     {g4326, []Spec{{Geometry: strip, ZoomStart: -1}}},
		"4326 buffered line":      {g4326, []Spec{{Geometry: line, Buffer: 300_000, ZoomStart: -1}}},
		"mercator star":           {gm, []Spec{{Geometry: star, ZoomStart: -1}}},
		"mercator buffered point": {gm, []Spec{{Geometry: orb.MultiPoint{{5, 60}, {-70, -30}}, Buffer: 500_000, ZoomStart: -1}}},
		"mercator per zoom": {gm, []Spec{
			{Geometry: orb.Polygon{{{-10, -10}, {10, -10}, {10, 10}, {-10, 10}, {-10, -10}}}, ZoomStart: 0, ZoomStop: 2},
			{Geometry: star, ZoomStart: 3, ZoomStop: 6},
		}},
	}
}

// TestLinesMatchBruteForce compares the tiles of each level with a
// tile-by-tile intersection test, numbered by rows and by columns.
func TestLinesMatchBruteForce(t *testing.T) {
	for name, sh := range coverShapes(t) {
		s, err := Prepare(sh.g, sh.specs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for z := 0; z <= 6; z++ {
			p := s.part(z)
			if p == nil {
				continue
			}
			r := sh.g.GridRange(z)
			for _, order := range []grid.Order{grid.ByRows, grid.ByColumns} {
				t.Run(fmt.Sprintf("%s/z%d/order%d", name, z, order), func(t *testing.T) {
					lines, err := s.Lines(z, order, r)
					if err != nil {
						t.Fatal(err)
					}
					var n int64
					for x, y := range r.All() {
						u, v := y, x
						if order == grid.ByColumns {
							u, v = x, y
						}
						got, want := lines.Has(u, v), bruteCover(sh.g, p.polys, z, x, y)
						if got != want {
							t.Fatalf("tile %d/%d/%d: in cover %v, brute force %v", z, x, y, got, want)
						}
						if want {
							n++
						}
					}
					if lines.Count() != n {
						t.Fatalf("Count() = %d, want %d", lines.Count(), n)
					}
				})
			}
		}
	}
}

// TestLinesAlignedBox: a box on tile edges takes exactly its tiles, none
// beyond its edges.
func TestLinesAlignedBox(t *testing.T) {
	g := builtin(t, "EPSG:4326")
	// z2 tiles are 45° wide: the box covers columns 4-5 and rows 2-3.
	box := orb.Polygon{{{0, 0}, {90, 0}, {90, 90}, {0, 90}, {0, 0}}}
	s, err := Prepare(g, []Spec{{Geometry: box, SRS: 4326, ZoomStart: -1}})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := s.Lines(2, grid.ByRows, g.GridRange(2))
	if err != nil {
		t.Fatal(err)
	}
	if lines.Count() != 4 || !lines.Has(2, 4) || !lines.Has(2, 5) || !lines.Has(3, 4) || !lines.Has(3, 5) {
		t.Fatalf("Lines = %v, want columns 4-5 of rows 2-3", lines)
	}
}
