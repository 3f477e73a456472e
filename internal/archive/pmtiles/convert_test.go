package pmtiles

import (
	"context"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	ref "github.com/protomaps/go-pmtiles/pmtiles"

	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/mbtiles"
)

var (
	_ archive.Writer = (*Writer)(nil)
	_ archive.Reader = (*Reader)(nil)
)

// This package reads what the reference converter writes from an
// MBTiles file: every tile, byte for byte.
func TestReadsWhatTheReferenceConverterWrites(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 9))
	set := archivetest.RandomTiles(rng, 9, 30000) // enough for leaf directories
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.mbtiles"), filepath.Join(dir, "out.pmtiles")
	w, err := mbtiles.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range archivetest.Shuffled(rng, set) {
		if err := w.Put(ctx, tl.Z, tl.X, tl.Y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	md := testMD
	md.MaxZoom = 9
	if err := w.Close(ctx, md); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.CreateTemp(dir, "convert")
	if err != nil {
		t.Fatal(err)
	}
	defer tmp.Close()
	if err := ref.Convert(log.New(io.Discard, "", 0), in, out, true, tmp); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Open(ctx, ReaderAt(f))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().LeafLength == 0 {
		t.Fatal("the converted archive has no leaf directories")
	}
	archivetest.CheckReader(t, r, set)
	got, err := r.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != md.Name || got.Attribution != md.Attribution || got.Format != "png" {
		t.Fatalf("metadata %+v", got)
	}
}
