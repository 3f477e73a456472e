package area

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
)

// The fuzz targets assert that the parsers of the new request inputs never
// panic and either succeed or return an apperr.Invalid, and that what
// they accept can be prepared and covered (geometries) or planned and
// read back (tile lists).

func FuzzParseGeometry(f *testing.F) {
	for _, s := range []string{
		"POLYGON((0 0,10 0,10 10,0 10,0 0))",
		"SRID=3857;MULTIPOLYGON(((0 0,1e6 0,1e6 1e6,0 0)),((2e6 2e6,3e6 2e6,3e6 3e6,2e6 2e6)))",
		"LINESTRING(-10 50,20 60)", "POINT(5 5)", "MULTIPOINT((1 1),(2 2))", "GEOMETRYCOLLECTION(POINT(1 1))",
		`{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,0]]]}`,
		`{"type":"Feature","properties":{},"geometry":{"type":"Point","coordinates":[1,2]}}`,
		`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"LineString","coordinates":[[0,0],[1,1]]}}]}`,
		`{"type":"Polygon","coordinates":[[[0,0],[1e308,0],[0,1e308],[0,0]]]}`,
		"POLYGON((0 0,0 0,0 0,0 0))", "SRID=x;POINT(0 0)", `{"type":"GeometryCollection","geometries":[]}`, "",
	} {
		f.Add(s, 1000.0)
	}
	g, _ := grid.Builtin("EPSG:4326")
	f.Fuzz(func(t *testing.T, text string, buffer float64) {
		geom, srs, err := Parse(text)
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("Parse(%q): %v is not Invalid", text, err)
			}
			return
		}
		if srs != 0 && srs != 4326 {
			srs = 4326 // only EPSG:4326 transforms into this grid set
		}
		shape, err := Prepare(g, []Spec{{Geometry: geom, SRS: srs, Buffer: buffer, ZoomStart: -1}})
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("Prepare(%q, %v): %v is not Invalid", text, buffer, err)
			}
			return
		}
		lines, err := shape.Lines(2, grid.ByRows, g.GridRange(2))
		if err != nil {
			t.Fatal(err)
		}
		if n := lines.Count(); n < 0 || n > 32 {
			t.Fatalf("%q covers %d tiles of the 32 of level 2", text, n)
		}
	})
}

func FuzzReadTileList(f *testing.F) {
	for _, s := range []string{
		"3/5/1\n3 6 1\n# comment\n\n3/5/1\n", "0/0/0", "5/31/31\n5/0/0\n", "2/4/0\n", "64/0/0\n", "1/-1/0\n",
		"a/b/c\n", "1/0\n", strings.Repeat("4/15/15\n", 50),
	} {
		f.Add(s, true, 1, 5)
	}
	g, _ := grid.Builtin("EPSG:900913")
	f.Fuzz(func(t *testing.T, text string, xyz bool, parentsTo, childrenTo int) {
		// Children of deep tiles are many: keep the targets' levels low.
		o := ListOptions{XYZ: xyz, ParentsTo: parentsTo%8 - 1, ChildrenTo: childrenTo%8 - 1, MetaW: 4, MetaH: 4, MaxMetatiles: 10_000, MaxWork: 40_000}
		l, err := ReadTileList(strings.NewReader(text), g, o)
		// Whatever the batch of keys pending, the list and its limits
		// are the same: each is checked on the distinct keys.
		for _, batch := range []int{1, 3} {
			o := o
			o.batch = batch
			lb, errb := ReadTileList(strings.NewReader(text), g, o)
			if fmt.Sprint(errb) != fmt.Sprint(err) || (err == nil && !bytes.Equal(lb.Marshal(), l.Marshal())) {
				t.Fatalf("ReadTileList(%q) with a batch of %d: %v, not %v as with the default batch", text, batch, errb, err)
			}
		}
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("ReadTileList(%q): %v is not Invalid", text, err)
			}
			return
		}
		if l.Metatiles() > o.MaxMetatiles {
			t.Fatalf("%d metatiles, more than %d", l.Metatiles(), o.MaxMetatiles)
		}
		for z, keys := range l.levels {
			if !slices.IsSorted(keys) || len(slices.Compact(slices.Clone(keys))) != len(keys) {
				t.Fatalf("level %d: keys not sorted and distinct", z)
			}
		}
		back, err := UnmarshalTileList(l.Marshal(), g)
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if !bytes.Equal(back.Marshal(), l.Marshal()) {
			t.Fatalf("round trip changed the list")
		}
		lo, hi := l.Zooms()
		for z := lo; z <= hi; z++ {
			r, ok := l.Range(z)
			if !ok {
				continue
			}
			for _, order := range []grid.Order{grid.ByRows, grid.ByColumns} {
				lines, err := l.Lines(z, order, r)
				if err != nil {
					t.Fatal(err)
				}
				if lines.Count() == 0 && len(l.levels[z]) > 0 {
					t.Fatalf("level %d: %d metatiles, no tile", z, len(l.levels[z]))
				}
			}
		}
	})
}

func FuzzUnmarshalTileList(f *testing.F) {
	g, _ := grid.Builtin("EPSG:900913")
	l, err := ReadTileList(strings.NewReader("3/5/1\n4/0/0\n"), g, ListOptions{MetaW: 4, MetaH: 4, ParentsTo: -1, ChildrenTo: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(l.Marshal())
	f.Add([]byte(listMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		if l, err := UnmarshalTileList(data, g); err == nil {
			lo, hi := l.Zooms()
			for z := lo; z <= hi; z++ {
				if r, ok := l.Range(z); ok {
					l.Lines(z, grid.ByRows, r)
				}
			}
		}
	})
}

// FuzzSeedAreaMemory plans seed requests with a geometry and with a tile
// list, as a submit, an estimate and a schedule's dry run do, and asserts
// that each holds at most probeCeiling at once and allocates at most
// allocCeiling, whatever it asks for: the limits are checked before the
// work they bound. Lists are read with a limit of 100,000 metatiles
// (their keys are the memory a list may hold).
func FuzzSeedAreaMemory(f *testing.F) {
	for _, s := range []struct {
		geom   string
		buffer float64
		list   string
		pz, cz int8
		zs, ze uint8
	}{
		{"POLYGON((-180 -85,180 -85,180 85,-180 85,-180 -85))", 0, "25/0/0\n25/0/33554431\n", -1, -1, 25, 25},
		{"POLYGON((-180 -85,180 -85,180 85,-180 85,-180 -85))", 0, "0/0/0\n", -1, 15, 0, 17},
		{"POLYGON((0 0,1 100000,2 0,0 0))", 0, "10/5/5\n", 0, 12, 3, 9},
		{zigzag(2000), 0, "3/1/1\n", 1, 5, 5, 6},
		{zigzag(150), 0, "3/1/1\n", 1, 5, 0, 12},
		{"SRID=900913;POLYGON((0 0,1 1e11,2 0,0 0))", 0, "1/0/0\n", -1, -1, 1, 1},
		{line(1000), 10, "2/1/1\n2/2/2\n", -1, 3, 10, 12},
		{"MULTIPOLYGON(((0 -80,0.0001 -80,0.0001 -79.9999,0 -80)),((0 80,0.0001 80,0.0001 80.0001,0 80)))", 0, "18/0/0\n18/262143/262143\n", -1, 20, 20, 25},
		{"POINT(5 45)", 100, "5/31/31\n", 0, -1, 0, 5},
	} {
		f.Add(s.geom, s.buffer, true, s.list, false, s.pz, s.cz, s.zs, s.ze)
		f.Add(s.geom, s.buffer, false, s.list, true, s.pz, s.cz, s.zs, s.ze)
	}
	merc, geo := builtin(f, "EPSG:900913"), builtin(f, "EPSG:4326")
	f.Fuzz(func(t *testing.T, geom string, buffer float64, mercator bool, list string, xyz bool, parentsTo, childrenTo int8, zs, ze uint8) {
		g := geo
		if mercator {
			g = merc
		}
		zStart := int(zs) % g.Levels()
		zStop := max(zStart, int(ze)%g.Levels())
		check := func(what string, err error) {
			if err != nil && !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("%s: %v is not Invalid", what, err)
			}
		}
		c := measure(func() {
			shape, err := prepareText(g, geom, buffer)
			if check("prepare", err); err != nil {
				return
			}
			b, _ := shape.Bound(zStart, zStop)
			b = grid.Extent{MinX: max(b.MinX, g.Extent.MinX), MinY: max(b.MinY, g.Extent.MinY), MaxX: min(b.MaxX, g.Extent.MaxX), MaxY: min(b.MaxY, g.Extent.MaxY)}
			if b.Valid() {
				_, err = plan(g, b, zStart, zStop, shape)
				check("plan the geometry", err)
			}
		})
		if c.peak > probeCeiling || c.alloc > allocCeiling {
			t.Fatalf("geometry %.200q buffered by %v, levels %d-%d: %v, over the ceilings of %d MiB held, %d MiB allocated", geom, buffer, zStart, zStop, c, probeCeiling>>20, allocCeiling>>20)
		}
		c = measure(func() {
			l, err := ReadTileList(strings.NewReader(list), g, ListOptions{XYZ: xyz, ParentsTo: int(parentsTo), ChildrenTo: int(childrenTo), MetaW: 4, MetaH: 4, MaxMetatiles: 100_000})
			if check("read the list", err); err != nil {
				return
			}
			lo, hi := l.Zooms()
			b, _ := l.Bound(lo, hi)
			_, err = plan(g, b, lo, hi, l)
			check("plan the list", err)
		})
		if c.peak > probeCeiling || c.alloc > allocCeiling {
			t.Fatalf("list %.200q (parentsTo %d, childrenTo %d): %v, over the ceilings of %d MiB held, %d MiB allocated", list, parentsTo, childrenTo, c, probeCeiling>>20, allocCeiling>>20)
		}
	})
}
