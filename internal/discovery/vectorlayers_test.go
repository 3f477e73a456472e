package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"tilecache/internal/tilestore"
	"tilecache/internal/vectortile"
)

// mvtOf returns a Mapbox Vector Tile of the given layers, each with the
// given keys and one point feature giving every key a string value.
func mvtOf(layers []string, keys func(layer int) []string) []byte {
	field := func(num byte, b []byte) []byte {
		return append(append([]byte{num<<3 | 2}, uvarint(len(b))...), b...)
	}
	var tile []byte
	for i, name := range layers {
		m := field(1, []byte(name))
		var tags []byte
		for k, key := range keys(i) {
			m = append(m, field(3, []byte(key))...)
			tags = append(tags, uvarint(k)...)
			tags = append(tags, 0)
		}
		m = append(m, field(4, []byte{0x0a, 0x01, 'v'})...)
		feature := append(field(2, tags), 0x18, 0x01)
		feature = append(feature, field(4, []byte{0x09, 0x02, 0x02})...)
		m = append(m, field(2, feature)...)
		tile = append(tile, field(3, m)...)
	}
	return tile
}

func uvarint(n int) []byte {
	var b []byte
	for ; n >= 0x80; n >>= 7 {
		b = append(b, byte(n)|0x80)
	}
	return append(b, byte(n))
}

// TestVectorLayersCapped: the TileJSON of a vector tile set lists at most
// maxVectorLayers layers of at most maxVectorFields fields, none of a name
// longer than maxVectorName bytes, warning of those left out; when what
// is left still makes the document larger than maxTileSetDocument, it is
// published with vector_layers empty, with a warning. A hostile tile made
// it 115 MB before.
func TestVectorLayersCapped(t *testing.T) {
	c := testCatalogue(t, `
layers:
  - name: roads
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [application/vnd.mapbox-vector-tile]
    source: {type: testpattern}
`)
	names := func(n int, f func(i int) string) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = f(i)
		}
		return s
	}
	cases := []struct {
		name              string
		tile              []byte
		layers, maxFields int // listed
		warning           string
	}{
		{"300 layers, one of a long name, one of 400 fields",
			mvtOf(names(300, func(i int) string {
				if i == 0 {
					return strings.Repeat("n", maxVectorName+1)
				}
				return fmt.Sprintf("layer%d", i)
			}), func(i int) []string {
				if i == 1 {
					return names(400, func(k int) string { return fmt.Sprintf("field%d", k) })
				}
				return names(20, func(k int) string { return fmt.Sprintf("field%d", k) })
			}),
			maxVectorLayers, maxVectorFields, "vector_layers left out of the TileJSON"},
		{"10,000 fields of 200 bytes",
			mvtOf(names(40, func(i int) string { return fmt.Sprintf("layer%d", i) }), func(i int) []string {
				return names(250, func(k int) string { return fmt.Sprintf("%0200d", k) })
			}),
			0, 0, "TileJSON too large: published with vector_layers empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := vectortile.Parse(tc.tile, 0); err != nil {
				t.Fatalf("the test's tile: %v", err)
			}
			s := newFileStore(t)
			p, log := newTestPublisher(s, c, prefix, "")
			set := tilestore.TileSet{SetName: tilestore.SetName{Layer: "roads", GridSetID: "EPSG:900913", FormatID: "mapbox-vectortile",
				ParametersID: tilestore.ParametersID(nil)}, Prefix: prefix, LayerID: "roads", Ext: "pbf"}
			mustPut(t, s, set.Key(0, 0, 0), tc.tile, tilestore.Meta{ContentType: vectortile.MVT})
			if _, err := p.Ensure(t.Context(), "roads", "EPSG:900913", vectortile.MVT, nil); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{tileJSONName, tileJSONXYZName} {
				data, _ := mustGet(t, s, set.Dir()+name)
				var doc struct {
					Tiles        []string `json:"tiles"`
					VectorLayers *[]struct {
						ID     string            `json:"id"`
						Fields map[string]string `json:"fields"`
					} `json:"vector_layers"`
				}
				if err := json.Unmarshal(data, &doc); err != nil {
					t.Fatal(err)
				}
				if len(data) > maxTileSetDocument || doc.VectorLayers == nil || len(doc.Tiles) != 1 {
					t.Fatalf("%s: %d bytes, vector_layers %v, tiles %q; want at most %d bytes, a list and the tiles", name, len(data), doc.VectorLayers != nil, doc.Tiles, maxTileSetDocument)
				}
				fields := 0
				for _, l := range *doc.VectorLayers {
					if len(l.ID) > maxVectorName {
						t.Errorf("%s: a layer of a %d-byte name", name, len(l.ID))
					}
					fields = max(fields, len(l.Fields))
				}
				if len(*doc.VectorLayers) != tc.layers || fields != tc.maxFields {
					t.Errorf("%s: %d layers, up to %d fields; want %d, %d", name, len(*doc.VectorLayers), fields, tc.layers, tc.maxFields)
				}
			}
			if !strings.Contains(log.String(), tc.warning) {
				t.Errorf("log %s\nwant a warning %q", log, tc.warning)
			}
		})
	}
}

// TestDocumentTooLarge: a document past its limit does not fit (it is not
// written), with a warning naming it and the limit.
func TestDocumentTooLarge(t *testing.T) {
	p, log := newTestPublisher(newFileStore(t), testCatalogue(t, testLayers), prefix, "")
	if p.fits(document{"k/old.json", bytes.Repeat([]byte("x"), 101), jsonMeta}, 100) {
		t.Error("101 bytes fit in 100")
	}
	if !p.fits(document{"k/old.json", bytes.Repeat([]byte("x"), 100), jsonMeta}, 100) {
		t.Error("100 bytes do not fit in 100")
	}
	if !strings.Contains(log.String(), `"msg":"discovery document too large: not written","key":"k/old.json","bytes":101,"limit":100`) {
		t.Errorf("log %s", log)
	}
}
