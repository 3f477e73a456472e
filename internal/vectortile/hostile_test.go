package vectortile_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"tilecache/internal/vectortile"
)

// allocated returns the bytes f allocates: the growth of the process's
// cumulative allocation count (TotalAlloc), which a collection during f
// does not lower. Nothing else in the test binary allocates meanwhile.
func allocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// manyLayers is an MVT of n layers of 14 bytes each: a name of two bytes,
// version 2, extent 1 and one feature of unknown geometry. 1,190,000 of
// them make 16.66 MB, under MaxSize.
func manyLayers(n int) []byte {
	layer := []byte{0x1a, 0x0c, 0x0a, 0x02, 'a', 'b', 0x78, 0x02, 0x28, 0x01, 0x12, 0x02, 0x18, 0x00}
	return bytes.Repeat(layer, n)
}

// manyFeatures is a GeoJSON FeatureCollection of about size bytes whose
// features each have keys properties, named by key(feature, i).
func manyFeatures(size, keys int, key func(f, i int) string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for f := 0; b.Len() < size-1000; f++ {
		if f > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"Feature","geometry":{"type":"Point","coordinates":[0,0]},"properties":{`)
		for i := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `%q:%d`, key(f, i), i)
		}
		b.WriteString(`}}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// TestHostileTiles: tiles under MaxSize made to cost memory (a million
// layers of a few bytes; a GeoJSON tile of ever new property keys, or of
// more features than a tile may have) are refused with an error naming
// the limit, and checking any of them, or a valid tile as large, allocates
// at most AllocBound of its size. Before tiles were checked by counting,
// the first allocated 658 MiB and a 16 MiB GeoJSON tile 402 MiB.
func TestHostileTiles(t *testing.T) {
	distinct := func(f, i int) string { return fmt.Sprintf("k%d_%d", f, i) }
	same := func(f, i int) string { return fmt.Sprintf("key%d", i) }
	cases := []struct {
		name   string
		data   []byte
		parse  func([]byte, int) (vectortile.Tile, error)
		refuse string // "": valid
	}{
		{"1.19 M layers", manyLayers(1_190_000), vectortile.Parse, "not a Mapbox Vector Tile: 1190000 layers, more than the 1000 a tile may have"},
		{"1001 layers", manyLayers(vectortile.MaxLayers + 1), vectortile.Parse, "1001 layers, more than the 1000 a tile may have"},
		{"1000 layers", manyLayers(vectortile.MaxLayers), vectortile.Parse, ""},
		{"GeoJSON of new keys", manyFeatures(16<<20, 8, distinct), vectortile.ParseGeoJSON, "not a GeoJSON FeatureCollection: more than the 10000 property keys a tile may have"},
		{"GeoJSON of many features", manyFeatures(16<<20, 0, nil), vectortile.ParseGeoJSON, "features, more than the 200000 a tile may have"},
		{"GeoJSON of 16 MiB", manyFeatures(16<<20, 40, same), vectortile.ParseGeoJSON, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var (
				tile vectortile.Tile
				err  error
			)
			n := allocated(func() { tile, err = c.parse(c.data, 0) })
			switch {
			case c.refuse == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.refuse != "" && (err == nil || !vectortile.IsInvalid(err) || !strings.Contains(err.Error(), c.refuse)):
				t.Errorf("got %v (%d features), want a refusal saying %q", err, tile.Features(), c.refuse)
			}
			if bound := vectortile.AllocBound(len(c.data)); n > bound {
				t.Errorf("checking %d bytes allocated %d, more than %d", len(c.data), n, bound)
			}
			t.Logf("%d bytes: %d allocated; %v", len(c.data), n, err)
		})
	}
}

// TestParseLimits: each limit refuses the first tile past it, naming it,
// and takes the tile at it.
func TestParseLimits(t *testing.T) {
	name := func(n int) []byte { return bytes.Repeat([]byte{'n'}, n) }
	// layer returns an MVT layer message of the given fields after its
	// name "l".
	field := func(num byte, b []byte) []byte {
		return append(append([]byte{num<<3 | 2}, uvarint(len(b))...), b...)
	}
	layer := func(fields ...[]byte) []byte {
		m := field(1, []byte("l"))
		for _, f := range fields {
			m = append(m, f...)
		}
		return field(3, m)
	}
	repeat := func(f []byte, n int) []byte { return bytes.Repeat(f, n) }
	feature := field(2, []byte{0x18, 0x00})
	value := field(4, []byte{0x28, 0x01})
	key := field(3, []byte("k"))
	cases := []struct {
		name      string
		at, above []byte
		refuse    string
	}{
		{"layer name", layer(field(1, name(vectortile.MaxNameLength))), layer(field(1, name(vectortile.MaxNameLength+1))), "a layer name of 1025 bytes, more than the 1024 a name may have"},
		{"key", layer(field(3, name(vectortile.MaxNameLength))), layer(field(3, name(vectortile.MaxNameLength+1))), "key 0 of 1025 bytes, more than the 1024 a key may have"},
		{"features", layer(repeat(feature, vectortile.MaxFeatures)), layer(repeat(feature, vectortile.MaxFeatures+1)), "200001 features, more than the 200000 a tile may have"},
		{"keys", layer(repeat(key, vectortile.MaxKeys)), append(layer(repeat(key, vectortile.MaxKeys/2)), layer(repeat(key, vectortile.MaxKeys/2+1))...), "10001 keys, more than the 10000 a tile may have"},
		{"values", layer(repeat(value, vectortile.MaxValues)), layer(repeat(value, vectortile.MaxValues+1)), "1000001 values, more than the 1000000 a tile may have"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := vectortile.Parse(c.at, 0); err != nil {
				t.Errorf("at the limit: %v", err)
			}
			if _, err := vectortile.Parse(c.above, 0); err == nil || !strings.Contains(err.Error(), c.refuse) {
				t.Errorf("past the limit: %v, want %q", err, c.refuse)
			}
		})
	}
	long := `{"type":"FeatureCollection","features":[{"type":"Feature","properties":{"` + string(name(vectortile.MaxNameLength+1)) + `":1}}]}`
	if _, err := vectortile.ParseGeoJSON([]byte(long), 0); err == nil || !strings.Contains(err.Error(), "feature 0 has a property key of 1025 bytes, more than the 1024 a key may have") {
		t.Errorf("GeoJSON key past the limit: %v", err)
	}
}

func uvarint(n int) []byte {
	var b []byte
	for ; n >= 0x80; n >>= 7 {
		b = append(b, byte(n)|0x80)
	}
	return append(b, byte(n))
}

// FuzzParseMemory: whatever the bytes, checking them as an MVT and as a
// GeoJSON tile allocates at most AllocBound of their decompressed size
// (or of what their gzip trailer says, if more), and fails, if it does,
// with a vector tile error.
func FuzzParseMemory(f *testing.F) {
	raw, err := os.ReadFile("testdata/mapserver-z4.pbf")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(gzipped(raw))
	f.Add(manyLayers(2000))
	f.Add([]byte(geoJSONTile))
	f.Add(gzipped([]byte(geoJSONTile)))
	f.Add(manyFeatures(4000, 3, func(f, i int) string { return fmt.Sprintf("k\\u00e9%d_%d", f, i) }))
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"type":"Feature","geometry":{"type":"Polygon"},"properties":{"a\"b":[1,{"c":2}],"\ud83d\ude00":null}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 1 << 20
		size := len(b)
		if vectortile.Gzipped(b) {
			// What the checks decompress, at most limit+1 bytes (a broken
			// stream: up to where it breaks).
			size = 0
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				n, _ := io.Copy(io.Discard, io.LimitReader(zr, limit+1))
				size = int(n)
			}
		}
		// The buffer is sized from the gzip trailer, if it says more.
		bound := vectortile.AllocBound(max(size, min(vectortile.Size(b), limit)))
		for _, parse := range []struct {
			name string
			fn   func([]byte, int) (vectortile.Tile, error)
		}{{"Parse", vectortile.Parse}, {"ParseGeoJSON", vectortile.ParseGeoJSON}} {
			var err error
			if n := allocated(func() { _, err = parse.fn(b, limit) }); n > bound {
				t.Errorf("%s of %d bytes (%d decompressed) allocated %d, more than %d", parse.name, len(b), size, n, bound)
			}
			if err != nil && !vectortile.IsInvalid(err) {
				t.Errorf("%s: error %v is not a vector tile error", parse.name, err)
			}
		}
	})
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// TestSize: the size a tile decompresses to, as its gzip trailer gives
// it; a stream of two members is larger than that, which Parse with that
// size refuses as too large.
func TestSize(t *testing.T) {
	raw, err := os.ReadFile("testdata/mapserver-z4.pbf")
	if err != nil {
		t.Fatal(err)
	}
	if n := vectortile.Size(raw); n != len(raw) {
		t.Errorf("plain: %d, want %d", n, len(raw))
	}
	if n := vectortile.Size(gzipped(raw)); n != len(raw) {
		t.Errorf("gzip: %d, want %d", n, len(raw))
	}
	if n := vectortile.Size(nil); n != 1 {
		t.Errorf("empty: %d, want 1", n)
	}
	two := append(gzipped(raw[:100]), gzipped(raw[100:])...)
	if _, err := vectortile.Parse(two, vectortile.Size(two)); !vectortile.IsTooLarge(err) {
		t.Errorf("two members within their trailer's size: %v, want a refusal for size", err)
	}
	if _, err := vectortile.Parse(two, 0); err != nil {
		t.Errorf("two members: %v", err)
	}
}
