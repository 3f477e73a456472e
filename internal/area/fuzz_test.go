package area

import (
	"bytes"
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
		o := ListOptions{XYZ: xyz, ParentsTo: parentsTo%8 - 1, ChildrenTo: childrenTo%8 - 1, MetaW: 4, MetaH: 4, MaxMetatiles: 10_000}
		l, err := ReadTileList(strings.NewReader(text), g, o)
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("ReadTileList(%q): %v is not Invalid", text, err)
			}
			return
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
