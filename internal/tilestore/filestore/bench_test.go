package filestore_test

import (
	"bytes"
	"strconv"
	"testing"

	"tilecache/internal/tilestore"
)

// Benchmarks use a typical 256×256 PNG tile size and spread keys over a few
// directories, as seeding does.

var benchTile = bytes.Repeat([]byte("tile"), 20_000/4)

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "topp:states/EPSG:4326/png/default/12/" + strconv.Itoa(i/64) + "/" + strconv.Itoa(i) + ".png"
	}
	return keys
}

// BenchmarkPut overwrites 1,024 keys in turn (reseeding), except "new keys",
// which writes a new key each time, creating a directory every 64 keys
// (seeding).
func BenchmarkPut(b *testing.B) {
	for _, bc := range []struct {
		name    string
		meta    tilestore.Meta
		newKeys bool
	}{
		{"default meta", tilestore.Meta{ContentType: "image/png"}, false},
		{"with sidecar", tilestore.Meta{ContentType: "image/png", CacheControl: "max-age=86400"}, false},
		{"new keys", tilestore.Meta{ContentType: "image/png"}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newStore(b)
			keys := benchKeys(1024)
			ctx := b.Context()
			b.SetBytes(int64(len(benchTile)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := keys[i%len(keys)]
				if bc.newKeys {
					key = "l/EPSG:4326/png/default/20/" + strconv.Itoa(i/64) + "/" + strconv.Itoa(i) + ".png"
				}
				if err := s.Put(ctx, key, benchTile, bc.meta); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, bc := range []struct {
		name string
		meta tilestore.Meta
	}{
		{"default meta", tilestore.Meta{ContentType: "image/png"}},
		{"with sidecar", tilestore.Meta{ContentType: "image/png", CacheControl: "max-age=86400"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newStore(b)
			keys := benchKeys(256)
			for _, k := range keys {
				mustPut(b, s, k, benchTile, bc.meta)
			}
			ctx := b.Context()
			b.SetBytes(int64(len(benchTile)))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, _, found, err := s.Get(ctx, keys[i%len(keys)]); err != nil || !found {
					b.Fatalf("Get: found=%v, err=%v", found, err)
				}
				i++
			}
		})
	}
}

func BenchmarkStat(b *testing.B) {
	s := newStore(b)
	keys := benchKeys(256)
	for _, k := range keys {
		mustPut(b, s, k, benchTile, tilestore.Meta{ContentType: "image/png"})
	}
	ctx := b.Context()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, found, err := s.Stat(ctx, keys[i%len(keys)]); err != nil || !found {
			b.Fatalf("Stat: found=%v, err=%v", found, err)
		}
		i++
	}
}
