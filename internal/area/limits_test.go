package area

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
)

// The hostile probes: small requests that made the area code allocate
// without bound. Each is answered in well under a second and under 32 MiB
// allocated: refused (apperr.Invalid naming the limit) or, when what it
// asks for is small, planned.

// probeCeiling is the most a probe may allocate, and the most a request
// may hold at once.
const probeCeiling = 32 << 20

// allocCeiling is the most a request may allocate over its run: levels
// planned one after the other reuse what the one before freed.
const allocCeiling = 256 << 20

// cost is what a call allocated (bytes, over its whole run, whatever was
// freed meanwhile), the most it held at once beyond what was held before
// (the live heap, sampled every 100µs and at its end: a lower bound of
// the true peak, by at most what is allocated between two samples), and
// how long it took.
type cost struct {
	alloc, peak uint64
	took        time.Duration
}

func (c cost) String() string {
	return fmt.Sprintf("%.2f MiB allocated, %.2f MiB held at most, %v", float64(c.alloc)/(1<<20), float64(c.peak)/(1<<20), c.took.Round(10*time.Microsecond))
}

// measure runs f alone and returns its cost.
func measure(f func()) cost {
	runtime.GC()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(heap)
	base, allocs := heap[0].Value.Uint64(), heap[1].Value.Uint64()
	var peak atomic.Uint64
	sample := func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > base && v-base > peak.Load() {
			peak.Store(v - base)
		}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	start := time.Now()
	f()
	took := time.Since(start)
	close(done)
	<-stopped
	sample()
	metrics.Read(heap)
	return cost{alloc: heap[1].Value.Uint64() - allocs, peak: peak.Load(), took: took}
}

// deepGrid is a custom grid set whose second level has 10^7 columns and
// rows of tiles, so that the children of its one level-0 tile are 10^14.
func deepGrid() *grid.GridSet {
	return &grid.GridSet{ID: "deep", EPSG: 3857, TileWidth: 256, TileHeight: 256,
		Extent: grid.Extent{MinX: 0, MinY: 0, MaxX: 2.56e9, MaxY: 2.56e9}, Resolutions: []float64{1e7, 1}}
}

// plan plans levels zs to ze of area a in g, 4×4 metatiles, within the
// bounds b.
func plan(g *grid.GridSet, b grid.Extent, zs, ze int, a grid.Area) (*grid.Plan, error) {
	sub, err := grid.NewSubset(g, nil, nil, nil)
	if err != nil {
		return nil, err
	}
	return grid.NewPlanArea(sub, b, zs, ze, 4, 4, grid.ByRows, a)
}

// prepareText parses and prepares text for g, buffered by d metres.
func prepareText(g *grid.GridSet, text string, d float64) (*Shape, error) {
	geom, srs, err := Parse(text)
	if err != nil {
		return nil, err
	}
	return Prepare(g, []Spec{{Geometry: geom, SRS: srs, Buffer: d, ZoomStart: -1, ZoomStop: -1}})
}

// zigzag is a polygon of n vertices going from latitude -80 to 80 and
// back, 0.01° of longitude apart: densified every 0.25° of latitude into
// the Mercator, it would have 640 vertices an edge.
func zigzag(n int) string {
	var b strings.Builder
	b.WriteString("POLYGON((")
	for i := range n {
		lat := -80.0
		if i%2 == 1 {
			lat = 80
		}
		fmt.Fprintf(&b, "%g %g,", float64(i)*0.01, lat)
	}
	b.WriteString("0 -80))")
	return b.String()
}

// line is a linestring of n vertices along the equator, 0.001° apart.
func line(n int) string {
	var b strings.Builder
	b.WriteString("LINESTRING(")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%g 0", float64(i)*0.001)
	}
	b.WriteString(")")
	return b.String()
}

// probe is one hostile request: run returns its answer.
type probe struct {
	name string
	run  func() error
	want string // a part of the refusal; "" when it is planned
}

func probes(t testing.TB) []probe {
	merc, geo := builtin(t, "EPSG:900913"), builtin(t, "EPSG:4326")
	list := func(g *grid.GridSet, text string, childrenTo int) (*TileList, error) {
		return ReadTileList(strings.NewReader(text), g, ListOptions{ParentsTo: -1, ChildrenTo: childrenTo, MetaW: 4, MetaH: 4})
	}
	return []probe{
		{"tile list 0/0/0 with childrenTo=15, EPSG:900913", func() error {
			_, err := list(merc, "0/0/0\n", 15)
			return err
		}, "more than 8000000 metatiles (the limit of a list)"},
		{"tile list 0/0/0 with childrenTo=1, custom grid set of 10^14 tiles at level 1", func() error {
			_, err := list(deepGrid(), "0/0/0\n", 1)
			return err
		}, "more than 8000000 metatiles (the limit of a list)"},
		{"tile list 25/0/0, 25/0/33554431 planned at z25", func() error {
			l, err := list(merc, "25/0/0\n25/0/33554431\n", -1)
			if err != nil {
				return err
			}
			b, _ := l.Bound(25, 25)
			p, err := plan(merc, b, 25, 25, l)
			if err == nil && (p.Metatiles() != 2 || p.Tiles() != 32) {
				return fmt.Errorf("planned %d metatiles, %d tiles; want 2, 32", p.Metatiles(), p.Tiles())
			}
			return err
		}, ""},
		{"world polygon planned at z25, EPSG:900913", func() error {
			s, err := prepareText(merc, "POLYGON((-180 -85,180 -85,180 85,-180 85,-180 -85))", 0)
			if err != nil {
				return err
			}
			_, err = plan(merc, merc.Extent, 25, 25, s)
			return err
		}, "more than 131072 (the limit of one level)"},
		{"world polygon's lines at z25, EPSG:900913", func() error {
			s, err := prepareText(merc, "POLYGON((-180 -85,180 -85,180 85,-180 85,-180 -85))", 0)
			if err != nil {
				return err
			}
			_, err = s.Lines(25, grid.ByRows, merc.GridRange(25))
			return err
		}, "more than 131072 (the limit of one level)"},
		{"two small polygons 160° apart planned at z25, EPSG:900913", func() error {
			s, err := prepareText(merc, "MULTIPOLYGON(((0 -80,0.0001 -80,0.0001 -79.9999,0 -80)),((0 80,0.0001 80,0.0001 80.0001,0 80)))", 0)
			if err != nil {
				return err
			}
			b, _ := s.Bound(25, 25)
			p, err := plan(merc, b, 25, 25, s)
			if err == nil && p.Tiles() == 0 {
				return fmt.Errorf("planned no tile")
			}
			return err
		}, ""},
		{"world polygon planned at z0-z17 (the most lines a plan takes), EPSG:900913", func() error {
			s, err := prepareText(merc, "POLYGON((-180 -85,180 -85,180 85,-180 85,-180 -85))", 0)
			if err != nil {
				return err
			}
			_, err = plan(merc, merc.Extent, 0, 17, s)
			return err
		}, ""},
		{"POLYGON((0 0,1 100000,2 0,0 0)) on EPSG:900913", func() error {
			_, err := prepareText(merc, "POLYGON((0 0,1 100000,2 0,0 0))", 0)
			return err
		}, "coordinate [1 100000] is not a longitude within ±180 and a latitude within ±90"},
		{"zigzag of 2,000 vertices between ±80° on EPSG:900913", func() error {
			_, err := prepareText(merc, zigzag(2000), 0)
			return err
		}, "once densified for the transformation from EPSG:4326 to EPSG:900913"},
		{"EPSG:900913 polygon 10^11 m tall on EPSG:4326", func() error {
			_, err := prepareText(geo, "SRID=900913;POLYGON((0 0,1 1e11,2 0,0 0))", 0)
			return err
		}, "more than 100000 (the limit of a geometry)"},
		{"line of 4,000 vertices buffered by 10 m on EPSG:4326", func() error {
			_, err := prepareText(geo, line(4_000), 10)
			return err
		}, "once buffered by 10 metres, more than 100000 (the limit of a geometry)"},
		{"zigzag of 200 vertices between ±80° planned at z0-z16 on EPSG:4326", func() error {
			s, err := prepareText(geo, zigzag(200), 0)
			if err != nil {
				return err
			}
			_, err = plan(geo, geo.Extent, 0, 16, s)
			return err
		}, "more than 2097152 (the limit of one level)"},
	}
}

// TestHostileProbes: each probe is answered as it should be, in well
// under a second and under probeCeiling.
func TestHostileProbes(t *testing.T) {
	for _, p := range probes(t) {
		t.Run(p.name, func(t *testing.T) {
			var err error
			c := measure(func() { err = p.run() })
			t.Logf("%s: %v; %v", p.name, err, c)
			switch {
			case p.want == "" && err != nil:
				t.Fatalf("got %v, want it planned", err)
			case p.want != "" && (!apperr.Is(err, apperr.Invalid) || !strings.Contains(apperr.Message(err), p.want)):
				t.Fatalf("got %v, want an Invalid error naming %q", err, p.want)
			}
			if c.alloc > probeCeiling {
				t.Errorf("allocated %d bytes, want at most %d", c.alloc, probeCeiling)
			}
			// Not a speed figure (that is measured in benchmarks): a bound
			// that a refusal doing work, or a plan going quadratic, would
			// break, with room for the race detector on a busy machine
			// (the largest plan takes ~1 s alone, 9 s under a full test run).
			limit := 10 * time.Second
			if p.want == "" {
				limit = time.Minute
			}
			if c.took > limit {
				t.Errorf("took %v, want under %v", c.took, limit)
			}
		})
	}
}

// TestSparseLinesMatchPerPolygon: lines far apart are swept as those of
// each polygon alone (the sweep skips the lines between them).
func TestSparseLinesMatchPerPolygon(t *testing.T) {
	g := builtin(t, "EPSG:900913")
	a, b := "((10 -60,10.001 -60,10.0005 -59.999,10 -60))", "((10 60,10.002 60,10.001 60.001,10 60))"
	both, err := prepareText(g, "MULTIPOLYGON("+a+","+b+")", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range []int{18, 25} {
		for _, order := range []grid.Order{grid.ByRows, grid.ByColumns} {
			got, err := both.Lines(z, order, g.GridRange(z))
			if err != nil {
				t.Fatal(err)
			}
			var want grid.Lines
			for _, one := range []string{a, b} {
				s, err := prepareText(g, "POLYGON"+one, 0)
				if err != nil {
					t.Fatal(err)
				}
				l, err := s.Lines(z, order, g.GridRange(z))
				if err != nil {
					t.Fatal(err)
				}
				for i, k := range l.K {
					if order == grid.ByColumns && want.Len() > 0 && k <= want.K[want.Len()-1] {
						continue // the polygons share their columns: compared below by count only
					}
					want.Add(k, l.Spans[i])
				}
			}
			if order == grid.ByRows && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("z%d: lines %v, want %v", z, got, want)
			}
			if got.Len() == 0 || got.Count() == 0 {
				t.Fatalf("z%d order %d: no tile", z, order)
			}
		}
	}
}

// TestTileListCountsBeforeKeeping: a list within its limit keeps its
// metatiles, one past it is refused, whatever the order of its lines.
func TestTileListCountsBeforeKeeping(t *testing.T) {
	g := builtin(t, "EPSG:900913")
	o := ListOptions{ParentsTo: -1, ChildrenTo: 4, MetaW: 4, MetaH: 4, MaxMetatiles: 1 + 1 + 1 + 4 + 16}
	// 0/0/0 and its children to z4: 1 + 1 + 1 + 4 + 16 metatiles.
	l, err := ReadTileList(strings.NewReader("0/0/0\n1/1/1\n"), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if l.Metatiles() != o.MaxMetatiles {
		t.Fatalf("%d metatiles, want %d", l.Metatiles(), o.MaxMetatiles)
	}
	o.MaxMetatiles--
	_, err = ReadTileList(strings.NewReader("1/1/1\n0/0/0\n"), g, o)
	if !apperr.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), "line 2: the list names more than 22 metatiles") {
		t.Fatalf("got %v, want line 2 refused naming the limit", err)
	}
	// Many distinct lines, each within the limit, past it together.
	o.ChildrenTo = -1
	o.MaxMetatiles = 3
	_, err = ReadTileList(strings.NewReader("5/0/0\n5/4/0\n5/8/0\n5/12/0\n"), g, o)
	if !apperr.Is(err, apperr.Invalid) || !strings.Contains(err.Error(), "line 4: the list names more than 3 metatiles (the limit of a list): 4 with") {
		t.Fatalf("got %v, want the fourth metatile refused", err)
	}
}
