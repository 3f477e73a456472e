package pmtiles

import (
	"bytes"
	"context"
	"os"
	"testing"

	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/mbtiles"
)

var (
	_ archive.Writer = (*Writer)(nil)
	_ archive.Reader = (*Reader)(nil)
)

// This package reads what the reference converter wrote from an MBTiles
// file (testdata/README.md says how): every tile of the source, byte for
// byte, through leaf directories, and the metadata. The converter's
// archive also passes verify, so verify's invariants are the format's
// and not only this package's writer's.
func TestReadsWhatTheReferenceConverterWrote(t *testing.T) {
	ctx := context.Background()
	src, err := mbtiles.Open(ctx, "testdata/converted.mbtiles")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	set := map[archivetest.Tile][]byte{}
	err = src.Tiles(ctx, func(z int, x, y int64, data []byte) error {
		set[archivetest.Tile{Z: z, X: x, Y: y}] = bytes.Clone(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 5000 {
		t.Fatalf("the source holds %d tiles, want 5000", len(set))
	}
	b, err := os.ReadFile("testdata/converted.pmtiles")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, ReaderAt(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().LeafLength == 0 {
		t.Fatal("the converted archive has no leaf directories")
	}
	archivetest.CheckReader(t, r, set)
	if err := verify(b, nil); err != nil {
		t.Fatalf("verify of the converter's archive: %v", err)
	}
	got, err := r.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, err := src.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != want.Name || got.Attribution != want.Attribution || got.Format != "png" || got.Name != "fixture" {
		t.Fatalf("metadata %+v, want %+v", got, want)
	}
}
