package grid

import "testing"

// FuzzPlanIndex checks index ↔ metatile consistency for arbitrary bounds,
// zoom ranges, metatile sizes and indices on a bottom-left and a top-left
// grid, and against brute force when the plan is small.
func FuzzPlanIndex(f *testing.F) {
	f.Add(-124.0, 22.0, -66.0, 50.0, uint8(1), uint8(12), uint8(4), uint8(4), uint64(12345), false)
	f.Add(-180.0, -90.0, 180.0, 90.0, uint8(0), uint8(21), uint8(1), uint8(1), uint64(1<<40), false)
	f.Add(0.0, 0.0, 0.0439453125, 0.0439453125, uint8(12), uint8(12), uint8(3), uint8(5), uint64(0), false)
	f.Add(10.0, 20.0, 700.0, 600.0, uint8(0), uint8(2), uint8(3), uint8(2), uint64(7), true)
	grids := map[bool]*Subset{
		false: mustSubset(f, mustBuiltin(f, EPSG4326), nil),
		true:  mustSubset(f, topLeftGrid(), nil),
	}
	f.Fuzz(func(t *testing.T, minX, minY, maxX, maxY float64, z0, z1, mw, mh uint8, idx uint64, topLeft bool) {
		s := grids[topLeft]
		levels := s.GridSet.Levels()
		zStart, zStop := int(z0)%levels, int(z1)%levels
		if zStart > zStop {
			zStart, zStop = zStop, zStart
		}
		w, h := int(mw)%9+1, int(mh)%9+1
		bounds := Extent{minX, minY, maxX, maxY}
		for _, order := range []Order{ByRows, ByColumns} {
			checkPlan(t, s, bounds, zStart, zStop, w, h, order, idx)
		}
	})
}

// checkPlan is one case of FuzzPlanIndex in one order.
func checkPlan(t *testing.T, s *Subset, bounds Extent, zStart, zStop, w, h int, order Order, idx uint64) {
	p, err := NewPlanOrdered(s, bounds, zStart, zStop, w, h, order)
	if err != nil {
		if bounds.Valid() {
			t.Fatalf("NewPlan(%v, %d..%d, %dx%d) = %v", bounds, zStart, zStop, w, h, err)
		}
		return
	}
	if p.Metatiles() <= 0 || p.Tiles() < p.Metatiles() {
		t.Fatalf("Metatiles() = %d, Tiles() = %d", p.Metatiles(), p.Tiles())
	}
	i := int64(idx % uint64(p.Metatiles()))
	checkIndex(t, p, i)
	checkIndex(t, p, p.Metatiles()-1-i)
	if p.Metatiles() > 5000 {
		return
	}
	want := bruteMetatiles(s, bounds, zStart, zStop, w, h, order)
	if int64(len(want)) != p.Metatiles() {
		t.Fatalf("Metatiles() = %d, want %d", p.Metatiles(), len(want))
	}
	var sum int64
	for j, r := range want {
		if got := p.TilesBefore(int64(j)); got != sum {
			t.Fatalf("TilesBefore(%d) = %d, want %d", j, got, sum)
		}
		if got := p.Meta(int64(j)).Tiles; got != r {
			t.Fatalf("Meta(%d).Tiles = %+v, want %+v", j, got, r)
		}
		sum += r.Count()
	}
	if sum != p.Tiles() {
		t.Fatalf("Tiles() = %d, want %d", p.Tiles(), sum)
	}
}

// FuzzRange checks that Range covers the bounds (clipped to the grid) with
// the fewest tiles: the range's extent contains them, and its first and last
// column and row reach into them, up to the edge tolerance.
func FuzzRange(f *testing.F) {
	f.Add(-124.0, 22.0, -66.0, 50.0, uint8(7), false)
	f.Add(0.0, 0.0, 0.0439453125, 0.0439453125, uint8(12), false)
	f.Add(10.0, -40.0, 700.0, 600.0, uint8(1), true)
	grids := map[bool]*Subset{
		false: mustSubset(f, mustBuiltin(f, EPSG4326), nil),
		true:  mustSubset(f, topLeftGrid(), nil),
	}
	f.Fuzz(func(t *testing.T, minX, minY, maxX, maxY float64, zz uint8, topLeft bool) {
		s := grids[topLeft]
		g := s.GridSet
		z := int(zz) % g.Levels()
		all := g.RangeExtent(g.GridRange(z))
		b := Extent{max(minX, all.MinX), max(minY, all.MinY), min(maxX, all.MaxX), min(maxY, all.MaxY)}
		if !b.Valid() {
			return
		}
		r := s.Range(b, z)
		if r.Count() <= 0 {
			t.Fatalf("Range(%v, %d) = %+v is empty", b, z, r)
		}
		w, h := g.Span(z)
		tol := 2e-6
		e := g.RangeExtent(r)
		if b.MinX < e.MinX-tol*w || b.MaxX > e.MaxX+tol*w || b.MinY < e.MinY-tol*h || b.MaxY > e.MaxY+tol*h {
			t.Fatalf("Range(%v, %d) = %+v spans %v, which does not contain the bounds", b, z, r, e)
		}
		first, last := g.TileExtent(z, r.MinX, r.MinY), g.TileExtent(z, r.MaxX, r.MaxY)
		if b.MinX > first.MaxX+tol*w || b.MinY > first.MaxY+tol*h {
			t.Fatalf("Range(%v, %d) = %+v starts at tile %v, short of the bounds", b, z, r, first)
		}
		if r.MaxX > r.MinX && b.MaxX < last.MinX-tol*w || r.MaxY > r.MinY && b.MaxY < last.MinY-tol*h {
			t.Fatalf("Range(%v, %d) = %+v ends at tile %v, beyond the bounds", b, z, r, last)
		}
		if r.MaxX > r.MinX && b.MaxX <= last.MinX+1e-9*w && b.MaxX >= last.MinX-1e-9*w {
			t.Fatalf("Range(%v, %d) = %+v: a max edge on a tile edge pulled in column %d", b, z, r, r.MaxX)
		}
	})
}
