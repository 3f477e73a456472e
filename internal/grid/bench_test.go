package grid

import "testing"

// deepPlan is a whole-world EPSG:900913 plan to level 30 with 4x4 metatiles.
func deepPlan(b *testing.B) *Plan {
	g := mustBuiltin(b, EPSG900913)
	return mustPlan(b, mustSubset(b, g, nil), g.Extent, 0, 30, 4, 4)
}

// benchIndices spreads indices over the whole plan, deepest levels included.
func benchIndices(p *Plan) []int64 {
	out := make([]int64, 1024)
	n := p.Metatiles()
	for k := range out {
		out[k] = n / int64(len(out)) * int64(k)
	}
	out[len(out)-1] = n - 1
	return out
}

func BenchmarkPlanMeta(b *testing.B) {
	p := deepPlan(b)
	idx := benchIndices(p)
	b.ReportAllocs()
	var k int
	var sink int64
	for b.Loop() {
		sink += p.Meta(idx[k&1023]).Tiles.MinX
		k++
	}
	_ = sink
}

func BenchmarkPlanTilesBefore(b *testing.B) {
	p := deepPlan(b)
	idx := benchIndices(p)
	b.ReportAllocs()
	var k int
	var sink int64
	for b.Loop() {
		sink += p.TilesBefore(idx[k&1023])
		k++
	}
	_ = sink
}

func BenchmarkSubsetRange(b *testing.B) {
	g := mustBuiltin(b, EPSG900913)
	s := mustSubset(b, g, &Extent{-1e7, -5e6, 1e7, 5e6})
	bounds := Extent{-2e6, -1e6, 3e6, 4e6}
	b.ReportAllocs()
	var k int
	var sink int64
	for b.Loop() {
		sink += s.Range(bounds, k%31).MaxX
		k++
	}
	_ = sink
}

func BenchmarkNewPlanDeep(b *testing.B) {
	g := mustBuiltin(b, EPSG900913)
	s := mustSubset(b, g, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewPlan(s, g.Extent, 0, 30, 4, 4); err != nil {
			b.Fatal(err)
		}
	}
}
