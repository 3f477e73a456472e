package vectortile_test

import (
	"fmt"
	"os"
	"testing"

	"tilecache/internal/vectortile"
)

// BenchmarkParse: checking a real tile, and the hostile tiles of
// TestHostileTiles (bytes allocated per check: B/op).
func BenchmarkParse(b *testing.B) {
	raw, err := os.ReadFile("testdata/mapserver-z4.pbf")
	if err != nil {
		b.Fatal(err)
	}
	same := func(f, i int) string { return fmt.Sprintf("key%d", i) }
	distinct := func(f, i int) string { return fmt.Sprintf("k%d_%d", f, i) }
	for _, c := range []struct {
		name  string
		data  []byte
		parse func([]byte, int) (vectortile.Tile, error)
	}{
		{"MapServer z4 tile", raw, vectortile.Parse},
		{"MVT of 1.19 M layers", manyLayers(1_190_000), vectortile.Parse},
		{"GeoJSON 16 MiB of 40 keys", manyFeatures(16<<20, 40, same), vectortile.ParseGeoJSON},
		{"GeoJSON 16 MiB of new keys", manyFeatures(16<<20, 8, distinct), vectortile.ParseGeoJSON},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				c.parse(c.data, 0)
			}
		})
	}
}
