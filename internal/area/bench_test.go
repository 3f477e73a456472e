package area

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/maptile"
	"github.com/paulmach/orb/maptile/tilecover"

	"tilecache/internal/grid"
)

// norway reads Norway's outline (Natural Earth 1:110m, 88 vertices).
func norway(tb testing.TB) orb.Geometry {
	tb.Helper()
	data, err := os.ReadFile("testdata/norway.geojson")
	if err != nil {
		tb.Fatal(err)
	}
	g, _, err := Parse(string(data))
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// coastline subdivides every edge of g's rings, displacing each new
// midpoint sideways by up to a fifth of its edge's length, until the
// outline has at least n vertices: a country outline as detailed as a
// real coastline at 1:10m, deterministic.
func coastline(g orb.Geometry, n int) orb.MultiPolygon {
	rng := rand.New(rand.NewPCG(3, 5))
	mp := orb.MultiPolygon{}
	switch g := g.(type) {
	case orb.Polygon:
		mp = append(mp, g)
	case orb.MultiPolygon:
		mp = append(mp, g...)
	}
	count := func() int {
		c := 0
		for _, p := range mp {
			for _, r := range p {
				c += len(r)
			}
		}
		return c
	}
	for count() < n {
		for pi, p := range mp {
			for ri, r := range p {
				out := make(orb.Ring, 0, 2*len(r))
				for i := 0; i+1 < len(r); i++ {
					a, b := r[i], r[i+1]
					dx, dy := b[0]-a[0], b[1]-a[1]
					k := (rng.Float64()*2 - 1) * 0.2
					out = append(out, a, orb.Point{(a[0]+b[0])/2 - dy*k, (a[1]+b[1])/2 + dx*k})
				}
				mp[pi][ri] = append(out, r[len(r)-1])
			}
		}
	}
	return mp
}

func countryPlan(b *testing.B, zStop int, order grid.Order) {
	g, _ := grid.Builtin("EPSG:900913")
	sub, err := grid.NewSubset(g, nil, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	outline := coastline(norway(b), 10_000)
	shape, err := Prepare(g, []Spec{{Geometry: outline, ZoomStart: -1}})
	if err != nil {
		b.Fatal(err)
	}
	bounds, _ := shape.Bound(0, zStop)
	b.ReportAllocs()
	b.ResetTimer()
	var tiles int64
	for range b.N {
		p, err := grid.NewPlanArea(sub, bounds, 0, zStop, 4, 4, order, shape)
		if err != nil {
			b.Fatal(err)
		}
		tiles = p.Tiles()
	}
	b.ReportMetric(float64(tiles)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mtiles/s")
	b.ReportMetric(float64(tiles), "tiles")
	b.ReportMetric(float64(shape.Vertices()), "vertices")
}

// BenchmarkPlanCountry plans Norway's outline, made 10,000 vertices
// long, at z0 to 14, 16 and 18 in the spherical Mercator, numbered by rows
// (a seed) and by columns (a reseed or truncate): tiles planned per
// second, and memory (B/op) growing with rows (×4 per two levels) rather
// than tiles (×16).
func BenchmarkPlanCountry(b *testing.B) {
	for _, z := range []int{14, 16, 18} {
		for _, order := range []grid.Order{grid.ByRows, grid.ByColumns} {
			b.Run(fmt.Sprintf("z0-%d/order%d", z, order), func(b *testing.B) { countryPlan(b, z, order) })
		}
	}
}

// BenchmarkCoverReference covers the same outline at one level, z12, with
// this package's sweep and with orb's tilecover (which yields a set of
// tiles), for a ratio measured in one run.
func BenchmarkCoverReference(b *testing.B) {
	g, _ := grid.Builtin("EPSG:900913")
	outline := coastline(norway(b), 10_000)
	shape, err := Prepare(g, []Spec{{Geometry: outline, ZoomStart: -1}})
	if err != nil {
		b.Fatal(err)
	}
	const z = 12
	b.Run("sweep", func(b *testing.B) {
		b.ReportAllocs()
		var n int64
		for range b.N {
			lines, err := shape.Lines(z, grid.ByRows, g.GridRange(z))
			if err != nil {
				b.Fatal(err)
			}
			n = lines.Count()
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mtiles/s")
	})
	b.Run("orb-tilecover", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for range b.N {
			set, err := tilecover.Geometry(outline, maptile.Zoom(z))
			if err != nil {
				b.Fatal(err)
			}
			n = len(set)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mtiles/s")
	})
}

// TestCoastlineIsACountry keeps the benchmark's shape honest: at least
// 10,000 vertices, and a z10 cover within a few percent of orb's
// tilecover of the same outline.
func TestCoastlineIsACountry(t *testing.T) {
	g, _ := grid.Builtin("EPSG:900913")
	outline := coastline(norway(t), 10_000)
	shape, err := Prepare(g, []Spec{{Geometry: outline, ZoomStart: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if shape.Vertices() < 10_000 {
		t.Fatalf("%d vertices", shape.Vertices())
	}
	lines, err := shape.Lines(10, grid.ByRows, g.GridRange(10))
	if err != nil {
		t.Fatal(err)
	}
	set, err := tilecover.Geometry(outline, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, ref := float64(lines.Count()), float64(len(set)); math.Abs(got-ref)/ref > 0.05 {
		t.Fatalf("z10 cover of %v tiles, orb's tilecover %v", got, ref)
	}
}
