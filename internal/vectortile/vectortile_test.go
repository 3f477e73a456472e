package vectortile_test

import (
	"bytes"
	"compress/gzip"
	"os"
	"strings"
	"testing"

	"tilecache/internal/vectortile"
)

// mapserverTile is an answer of the test WMS (MapServer 8's MVT driver)
// to GetMap LAYERS=polygons,lines,points, EPSG:3857 z4 tile 8/8; GDAL's
// ogrinfo reads 36 polygons, 38 lines and 60 points from it.
func mapserverTile(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/mapserver-z4.pbf")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestParseMapServerTile(t *testing.T) {
	raw := mapserverTile(t)
	for name, data := range map[string][]byte{"plain": raw, "gzip": gz(t, raw)} {
		t.Run(name, func(t *testing.T) {
			tile, err := vectortile.Parse(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tile.Gzip != (name == "gzip") {
				t.Errorf("Gzip = %v", tile.Gzip)
			}
			want := map[string]struct {
				n, geom int
			}{"polygons": {36, 3}, "lines": {38, 2}, "points": {60, 1}}
			if len(tile.Layers) != len(want) {
				t.Fatalf("layers %+v, want %v", tile.Layers, want)
			}
			for _, l := range tile.Layers {
				w := want[l.Name]
				if l.Features != w.n || l.Geometry[w.geom] != w.n {
					t.Errorf("layer %s: %d features, geometry types %v; want %d of type %d", l.Name, l.Features, l.Geometry, w.n, w.geom)
				}
				if !strings.Contains(strings.Join(l.Keys, ","), "cls") {
					t.Errorf("layer %s keys %v lack cls", l.Name, l.Keys)
				}
			}
			if tile.Empty() || tile.Features() != 134 {
				t.Errorf("Empty %v, Features %d", tile.Empty(), tile.Features())
			}
		})
	}
}

func TestParseEmpty(t *testing.T) {
	// A tile of no layers (0 bytes, as GeoServer answers an empty area) and
	// one of a layer without features are both empty.
	layerOnly := []byte{0x1a, 0x08, 0x78, 0x02, 0x0a, 0x04, 'r', 'o', 'a', 'd'}
	for _, b := range [][]byte{nil, layerOnly} {
		tile, err := vectortile.Parse(b, 0)
		if err != nil || !tile.Empty() {
			t.Errorf("Parse(% x) = %+v, %v; want an empty tile", b, tile, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	raw := mapserverTile(t)
	big := bytes.Repeat(raw, 3)
	cases := map[string][]byte{
		"html":                 []byte("<html><body><h1>502 Bad Gateway</h1></body></html>"),
		"service exception":    []byte(`<?xml version="1.0"?><ServiceExceptionReport><ServiceException>msWMSLoadGetMapParams(): WMS server error.</ServiceException></ServiceExceptionReport>`),
		"png":                  {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a},
		"truncated":            raw[:len(raw)/2],
		"truncated gzip":       gz(t, raw)[:200],
		"oversized":            big,
		"oversized gzip":       gz(t, big),
		"layer without a name": {0x1a, 0x02, 0x78, 0x02},
		"tag past the keys":    {0x1a, 0x0e, 0x0a, 0x01, 'a', 0x12, 0x09, 0x12, 0x02, 0x00, 0x00, 0x22, 0x03, 0x09, 0x02, 0x02},
		"geometry short":       {0x1a, 0x0a, 0x0a, 0x01, 'a', 0x12, 0x05, 0x22, 0x03, 0x11, 0x02, 0x02},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := vectortile.Parse(b, len(raw)*2)
			if err == nil || !vectortile.IsInvalid(err) {
				t.Fatalf("Parse = %v, want a vector tile error", err)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	raw, err := os.ReadFile("testdata/mapserver-z4.pbf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(raw[:100])
	f.Add([]byte("<html>"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tile, err := vectortile.Parse(b, 1<<20)
		if err != nil {
			if !vectortile.IsInvalid(err) {
				t.Fatalf("error %v is not a vector tile error", err)
			}
			return
		}
		if tile.Features() > len(b) {
			t.Fatalf("%d features from %d bytes", tile.Features(), len(b))
		}
	})
}
