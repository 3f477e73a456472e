package grid

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// bruteMetatiles enumerates a plan's metatiles the slow way, in the
// specified order: for each level, every metatile-aligned block that
// intersects the level's range, rows from the bottom, columns from the left
// (ByRows) or columns from the left, rows from the bottom (ByColumns),
// clipped to the grid.
func bruteMetatiles(s *Subset, bounds Extent, zStart, zStop, mw, mh int, order Order) []TileRange {
	var out []TileRange
	w, h := int64(mw), int64(mh)
	for z := zStart; z <= zStop; z++ {
		r := s.Range(bounds, z)
		cols, rows := s.GridSet.Size(z)
		block := func(x, y int64) {
			out = append(out, TileRange{Z: z, MinX: x, MinY: y, MaxX: min(x+w-1, cols-1), MaxY: min(y+h-1, rows-1)})
		}
		if order == ByColumns {
			for x := r.MinX / w * w; x <= r.MaxX; x += w {
				for y := r.MinY / h * h; y <= r.MaxY; y += h {
					block(x, y)
				}
			}
			continue
		}
		for y := r.MinY / h * h; y <= r.MaxY; y += h {
			for x := r.MinX / w * w; x <= r.MaxX; x += w {
				block(x, y)
			}
		}
	}
	return out
}

// mustPlan makes a plan or fails the test.
func mustPlan(tb testing.TB, s *Subset, bounds Extent, zStart, zStop, mw, mh int) *Plan {
	tb.Helper()
	return mustPlanOrdered(tb, s, bounds, zStart, zStop, mw, mh, ByRows)
}

func mustPlanOrdered(tb testing.TB, s *Subset, bounds Extent, zStart, zStop, mw, mh int, order Order) *Plan {
	tb.Helper()
	p, err := NewPlanOrdered(s, bounds, zStart, zStop, mw, mh, order)
	if err != nil {
		tb.Fatalf("NewPlan(%v, %d..%d, %dx%d) = %v", bounds, zStart, zStop, mw, mh, err)
	}
	return p
}

type planCase struct {
	name           string
	s              *Subset
	bounds         Extent
	zStart, zStop  int
	metaW, metaH   int
	wantMetatiles  int64 // 0: not checked
	wantTiles      int64 // 0: not checked
	wantLevels     []TileRange
	wantFirstMetas []TileRange // leading metatiles, nil: not checked
}

func smallPlanCases(tb testing.TB) []planCase {
	g4326 := mustBuiltin(tb, EPSG4326)
	world := mustSubset(tb, g4326, nil)
	usa := mustSubset(tb, g4326, &Extent{-130, 20, -60, 55})
	tl := mustSubset(tb, topLeftGrid(), nil)
	merc := mustSubset(tb, mustBuiltin(tb, EPSG900913), nil)
	return []planCase{
		{name: "4326 z0 4x4: one metatile of 2x1 tiles", s: world, bounds: g4326.Extent, zStart: 0, zStop: 0, metaW: 4, metaH: 4,
			wantMetatiles: 1, wantTiles: 2, wantLevels: []TileRange{{0, 0, 0, 1, 0}},
			wantFirstMetas: []TileRange{{0, 0, 0, 1, 0}}},
		{name: "4326 z1 4x4", s: world, bounds: g4326.Extent, zStart: 1, zStop: 1, metaW: 4, metaH: 4,
			wantMetatiles: 1, wantTiles: 8, wantLevels: []TileRange{{1, 0, 0, 3, 1}}},
		{name: "4326 z2 3x3 clipped at last column and row", s: world, bounds: g4326.Extent, zStart: 2, zStop: 2, metaW: 3, metaH: 3,
			wantMetatiles: 6, wantTiles: 32, wantLevels: []TileRange{{2, 0, 0, 7, 3}},
			wantFirstMetas: []TileRange{{2, 0, 0, 2, 2}, {2, 3, 0, 5, 2}, {2, 6, 0, 7, 2}, {2, 0, 3, 2, 3}, {2, 3, 3, 5, 3}, {2, 6, 3, 7, 3}}},
		{name: "4326 z3 4x4 widened beyond the bounds", s: world, bounds: Extent{-10, -10, 10, 10}, zStart: 3, zStop: 3, metaW: 4, metaH: 4,
			wantMetatiles: 4, wantTiles: 64, wantLevels: []TileRange{{3, 4, 0, 11, 7}}},
		{name: "4326 z0..3 1x1", s: world, bounds: g4326.Extent, zStart: 0, zStop: 3, metaW: 1, metaH: 1,
			wantMetatiles: 2 + 8 + 32 + 128, wantTiles: 2 + 8 + 32 + 128},
		{name: "4326 z0..4 4x4", s: world, bounds: g4326.Extent, zStart: 0, zStop: 4, metaW: 4, metaH: 4,
			wantMetatiles: 1 + 1 + 2 + 8 + 32, wantTiles: 2 + 8 + 32 + 128 + 512},
		{name: "4326 z0..5 5x7", s: world, bounds: g4326.Extent, zStart: 0, zStop: 5, metaW: 5, metaH: 7},
		{name: "usa z2..7 4x4", s: usa, bounds: Extent{-124, 22, -66, 50}, zStart: 2, zStop: 7, metaW: 4, metaH: 4},
		{name: "usa z0..6 3x2 bounds outside", s: usa, bounds: Extent{100, -80, 120, -70}, zStart: 0, zStop: 6, metaW: 3, metaH: 2},
		{name: "top-left z0..2 3x3", s: tl, bounds: Extent{120, 80, 730, 610}, zStart: 0, zStop: 2, metaW: 3, metaH: 3},
		{name: "900913 z3..9 2x3", s: merc, bounds: Extent{-1e6, 2e6, 3e6, 5e6}, zStart: 3, zStop: 9, metaW: 2, metaH: 3},
		{name: "900913 z0..5 1x1", s: merc, bounds: merc.Extent(), zStart: 0, zStop: 5, metaW: 1, metaH: 1,
			wantMetatiles: 1 + 4 + 16 + 64 + 256 + 1024, wantTiles: 1 + 4 + 16 + 64 + 256 + 1024},
	}
}

// TestPlanMatchesBruteForce checks Meta(i) and TilesBefore(i) for every i of
// small plans against a brute-force enumeration in the specified order,
// numbered by rows and by columns.
func TestPlanMatchesBruteForce(t *testing.T) {
	for _, tt := range smallPlanCases(t) {
		for _, order := range []Order{ByRows, ByColumns} {
			t.Run(fmt.Sprintf("%s/order%d", tt.name, order), func(t *testing.T) {
				testPlanMatchesBruteForce(t, tt, order)
			})
		}
	}
}

func testPlanMatchesBruteForce(t *testing.T, tt planCase, order Order) {
	p := mustPlanOrdered(t, tt.s, tt.bounds, tt.zStart, tt.zStop, tt.metaW, tt.metaH, order)
	if p.Order() != order {
		t.Fatalf("Order() = %d, want %d", p.Order(), order)
	}
	want := bruteMetatiles(tt.s, tt.bounds, tt.zStart, tt.zStop, tt.metaW, tt.metaH, order)
	if got := p.Metatiles(); got != int64(len(want)) {
		t.Fatalf("Metatiles() = %d, want %d", got, len(want))
	}
	if tt.wantMetatiles != 0 && p.Metatiles() != tt.wantMetatiles {
		t.Errorf("Metatiles() = %d, want %d", p.Metatiles(), tt.wantMetatiles)
	}
	if tt.wantTiles != 0 && p.Tiles() != tt.wantTiles {
		t.Errorf("Tiles() = %d, want %d", p.Tiles(), tt.wantTiles)
	}
	if tt.wantLevels != nil {
		got := p.Levels()
		if len(got) != len(tt.wantLevels) {
			t.Fatalf("Levels() = %+v, want %+v", got, tt.wantLevels)
		}
		for i := range got {
			if got[i] != tt.wantLevels[i] {
				t.Errorf("Levels()[%d] = %+v, want %+v", i, got[i], tt.wantLevels[i])
			}
		}
	}
	for i, w := range tt.wantFirstMetas {
		if order != ByRows {
			break
		}
		if got := p.Meta(int64(i)).Tiles; got != w {
			t.Errorf("Meta(%d).Tiles = %+v, want %+v", i, got, w)
		}
	}
	var sum int64
	for i, w := range want {
		if got := p.TilesBefore(int64(i)); got != sum {
			t.Errorf("TilesBefore(%d) = %d, want %d", i, got, sum)
		}
		m := p.Meta(int64(i))
		if m.Index != int64(i) || m.Tiles != w {
			t.Errorf("Meta(%d) = %+v, want index %d tiles %+v", i, m, i, w)
		}
		sum += w.Count()
		// The request's tiles: its range's, not the widened metatile's.
		in, _ := w.Intersect(tt.s.Range(tt.bounds, w.Z))
		n := int64(0)
		for x, y := range m.All() {
			if !in.Contains(x, y) {
				t.Errorf("Meta(%d).All() yields %d,%d outside the request's range %+v", i, x, y, in)
			}
			n++
		}
		if n != in.Count() {
			t.Errorf("Meta(%d).All() yields %d tiles, want %d", i, n, in.Count())
		}
		for x, y := range w.All() {
			if m.Has(x, y) != in.Contains(x, y) || !m.InArea(x, y) {
				t.Errorf("Meta(%d).Has(%d, %d) = %v, InArea %v; want %v, true", i, x, y, m.Has(x, y), m.InArea(x, y), in.Contains(x, y))
			}
		}
	}
	var requested int64
	for i := range p.Metatiles() {
		for range p.Meta(i).All() {
			requested++
		}
	}
	if p.Requested() != requested {
		t.Errorf("Requested() = %d, want the %d tiles the metatiles' All yield", p.Requested(), requested)
	}
	if got := p.TilesBefore(p.Metatiles()); got != sum || got != p.Tiles() {
		t.Errorf("TilesBefore(Metatiles()) = %d, want %d = Tiles() %d", got, sum, p.Tiles())
	}
	var levelSum int64
	for _, r := range p.Levels() {
		levelSum += r.Count()
	}
	if levelSum != p.Tiles() {
		t.Errorf("sum of Levels() counts = %d, want Tiles() %d", levelSum, p.Tiles())
	}
}

func TestPlanSplit(t *testing.T) {
	for _, tt := range smallPlanCases(t) {
		p := mustPlan(t, tt.s, tt.bounds, tt.zStart, tt.zStop, tt.metaW, tt.metaH)
		for n := 1; n <= 7; n++ {
			lanes := p.Split(n)
			if len(lanes) != n {
				t.Fatalf("%s: Split(%d) gave %d lanes, want %d", tt.name, n, len(lanes), n)
			}
			var next, tiles int64
			lo, hi := p.Metatiles()/int64(n), (p.Metatiles()+int64(n)-1)/int64(n)
			for k, l := range lanes {
				if l.Start != next {
					t.Errorf("%s: Split(%d)[%d].Start = %d, want %d", tt.name, n, k, l.Start, next)
				}
				if size := l.End - l.Start; size < lo || size > hi {
					t.Errorf("%s: Split(%d)[%d] has %d metatiles, want %d to %d", tt.name, n, k, size, lo, hi)
				}
				var want int64
				for i := l.Start; i < l.End; i++ {
					want += p.Meta(i).Tiles.Count()
				}
				if l.Tiles != want {
					t.Errorf("%s: Split(%d)[%d].Tiles = %d, want %d", tt.name, n, k, l.Tiles, want)
				}
				next, tiles = l.End, tiles+l.Tiles
			}
			if next != p.Metatiles() {
				t.Errorf("%s: Split(%d) ends at %d, want %d", tt.name, n, next, p.Metatiles())
			}
			if tiles != p.Tiles() {
				t.Errorf("%s: Split(%d) lanes hold %d tiles, want %d", tt.name, n, tiles, p.Tiles())
			}
		}
	}
}

func TestPlanSplitMoreLanesThanMetatiles(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	p := mustPlan(t, mustSubset(t, g, nil), g.Extent, 0, 1, 4, 4) // 2 metatiles
	got := p.Split(4)
	want := []Lane{{0, 1, 2}, {1, 2, 8}, {2, 2, 0}, {2, 2, 0}}
	if len(got) != len(want) {
		t.Fatalf("Split(4) = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Split(4)[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := p.Split(0); got != nil {
		t.Errorf("Split(0) = %+v, want nil", got)
	}
}

func TestNewPlanErrors(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	s, err := NewSubset(g, nil, ptr(2), ptr(10))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		s             *Subset
		bounds        Extent
		zStart, zStop int
		mw, mh        int
		want          string
	}{
		{"nil subset", nil, g.Extent, 2, 3, 4, 4, "grid subset is missing"},
		{"subset without grid set", &Subset{}, g.Extent, 2, 3, 4, 4, "grid set is missing"},
		{"bad bounds", s, Extent{1, 0, 1, 1}, 2, 3, 4, 4, "bounds 1,0,1,1 are not finite"},
		{"start after stop", s, g.Extent, 5, 3, 4, 4, "zoomStart 5 is greater than zoomStop 3"},
		{"start below subset", s, g.Extent, 1, 3, 4, 4, "zoomStart 1 is outside the zoom levels 2 to 10"},
		{"stop above subset", s, g.Extent, 2, 11, 4, 4, "zoomStop 11 is outside the zoom levels 2 to 10"},
		{"meta width", s, g.Extent, 2, 3, 0, 4, "metatile size 0x4"},
		{"meta height", s, g.Extent, 2, 3, 4, -1, "metatile size 4x-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.s, tt.bounds, tt.zStart, tt.zStop, tt.mw, tt.mh)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewPlan() = %v, %v; want error containing %q", p, err, tt.want)
			}
		})
	}
}

func TestPlanIndexOutOfRangePanics(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	p := mustPlan(t, mustSubset(t, g, nil), g.Extent, 0, 2, 1, 1)
	tests := []struct {
		name string
		call func()
	}{
		{"Meta(-1)", func() { p.Meta(-1) }},
		{"Meta(Metatiles())", func() { p.Meta(p.Metatiles()) }},
		{"TilesBefore(-1)", func() { p.TilesBefore(-1) }},
		{"TilesBefore(Metatiles()+1)", func() { p.TilesBefore(p.Metatiles() + 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic, want a panic", tt.name)
				}
			}()
			tt.call()
		})
	}
}

// checkIndex checks metatile i of p against TilesBefore, the plan's level
// ranges and the numbering order, without enumerating the plan.
func checkIndex(tb testing.TB, p *Plan, i int64) {
	tb.Helper()
	m := p.Meta(i)
	if m.Index != i {
		tb.Fatalf("Meta(%d).Index = %d, want %d", i, m.Index, i)
	}
	if got, want := m.Tiles.Count(), p.TilesBefore(i+1)-p.TilesBefore(i); got != want || got <= 0 {
		tb.Fatalf("Meta(%d) = %+v holds %d tiles, want TilesBefore(i+1)-TilesBefore(i) = %d > 0", i, m, got, want)
	}
	levels := p.Levels()
	first := levels[0].Z
	r := levels[m.Tiles.Z-first]
	mw, mh := p.MetaSize()
	w, h := int64(mw), int64(mh)
	if (m.Tiles.MinX-r.MinX)%w != 0 || (m.Tiles.MinY-r.MinY)%h != 0 ||
		m.Tiles.MaxX != min(m.Tiles.MinX+w-1, r.MaxX) || m.Tiles.MaxY != min(m.Tiles.MinY+h-1, r.MaxY) {
		tb.Fatalf("Meta(%d) = %+v is not a metatile of level range %+v (%dx%d)", i, m, r, mw, mh)
	}
	// Recompute the index from the position: the inverse of Meta.
	var index int64
	for _, l := range levels[:m.Tiles.Z-first] {
		index += ((l.MaxX-l.MinX)/w + 1) * ((l.MaxY-l.MinY)/h + 1)
	}
	cols, rows := (r.MaxX-r.MinX)/w+1, (r.MaxY-r.MinY)/h+1
	if p.Order() == ByColumns {
		index += (m.Tiles.MinX-r.MinX)/w*rows + (m.Tiles.MinY-r.MinY)/h
	} else {
		index += (m.Tiles.MinY-r.MinY)/h*cols + (m.Tiles.MinX-r.MinX)/w
	}
	if index != i {
		tb.Fatalf("Meta(%d) = %+v sits at index %d", i, m, index)
	}
}

// TestHugePlan checks a whole-world plan to the deepest level of EPSG:4326
// at random indices and at every level boundary.
func TestHugePlan(t *testing.T) {
	g := mustBuiltin(t, EPSG4326)
	s := mustSubset(t, g, nil)
	// Σ_{z=0}^{21} 2^(2z+1) = 2(4^22 − 1)/3
	const wantTiles = 2 * ((1 << 44) - 1) / 3
	tests := []struct {
		meta          int
		wantMetatiles int64
	}{
		{1, wantTiles},
		// z0 and z1 are one metatile each; from z2 on 4x4 divides the level.
		{4, 1 + 1 + (wantTiles-2-8)/16},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		p := mustPlan(t, s, g.Extent, 0, 21, tt.meta, tt.meta)
		if got := p.Tiles(); got != wantTiles {
			t.Errorf("%dx%d: Tiles() = %d, want %d", tt.meta, tt.meta, got, wantTiles)
		}
		if got := p.Metatiles(); got != tt.wantMetatiles {
			t.Errorf("%dx%d: Metatiles() = %d, want %d", tt.meta, tt.meta, got, tt.wantMetatiles)
		}
		for range 20000 {
			checkIndex(t, p, rng.Int64N(p.Metatiles()))
		}
		var start int64
		for _, r := range p.Levels() {
			for _, i := range []int64{start, start + 1, start - 1} {
				if i >= 0 && i < p.Metatiles() {
					checkIndex(t, p, i)
				}
			}
			m := p.Meta(start)
			if m.Tiles.Z != r.Z || m.Tiles.MinX != r.MinX || m.Tiles.MinY != r.MinY {
				t.Errorf("%dx%d: first metatile of level %d = %+v, want it at the level's lower-left %+v",
					tt.meta, tt.meta, r.Z, m, r)
			}
			if got := p.TilesBefore(start); start > 0 && got != p.TilesBefore(start-1)+p.Meta(start-1).Tiles.Count() {
				t.Errorf("%dx%d: TilesBefore(%d) = %d is not continuous", tt.meta, tt.meta, start, got)
			}
			mw, mh := int64(tt.meta), int64(tt.meta)
			start += ((r.MaxX-r.MinX)/mw + 1) * ((r.MaxY-r.MinY)/mh + 1)
		}
		last := p.Meta(p.Metatiles() - 1).Tiles
		if want := (TileRange{21, 1<<22 - int64(tt.meta), 1<<21 - int64(tt.meta), 1<<22 - 1, 1<<21 - 1}); last != want {
			t.Errorf("%dx%d: last metatile = %+v, want %+v", tt.meta, tt.meta, last, want)
		}
		lanes := p.Split(7)
		var sum int64
		for _, l := range lanes {
			sum += l.Tiles
		}
		if sum != wantTiles {
			t.Errorf("%dx%d: Split(7) lanes hold %d tiles, want %d", tt.meta, tt.meta, sum, wantTiles)
		}
	}
}

// TestPlanCostIndependentOfDepth checks that a deep plan allocates no more
// than a shallow one and that Meta and TilesBefore do not allocate.
func TestPlanCostIndependentOfDepth(t *testing.T) {
	g := mustBuiltin(t, EPSG900913)
	s := mustSubset(t, g, nil)
	allocs := func(zStop int) float64 {
		return testing.AllocsPerRun(10, func() {
			if _, err := NewPlan(s, g.Extent, 0, zStop, 4, 4); err != nil {
				t.Fatal(err)
			}
		})
	}
	if shallow, deep := allocs(2), allocs(30); deep != shallow {
		t.Errorf("NewPlan to z30 makes %v allocations, want %v as to z2", deep, shallow)
	}
	p := mustPlan(t, s, g.Extent, 0, 30, 4, 4)
	i := p.Metatiles() - 12345
	if n := testing.AllocsPerRun(100, func() { _ = p.Meta(i) }); n != 0 {
		t.Errorf("Meta allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = p.TilesBefore(i) }); n != 0 {
		t.Errorf("TilesBefore allocates %v times, want 0", n)
	}
	checkIndex(t, p, i)
}
