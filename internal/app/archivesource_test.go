package app_test

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/archive/pmtiles"
)

// TestArchiveSource: a layer whose source is an MBTiles file GDAL wrote
// is seeded from it, every stored tile the archive's bytes under the key
// of its row from the bottom; a layer whose source is a PMTiles file
// renders a miss from it, the answer the archive's tile.
func TestArchiveSource(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "reading an archive as a source")
	gdal := archivetest.RequireGDAL(t)
	dir := t.TempDir()
	world := filepath.Join(dir, "world.png")
	if err := os.WriteFile(world, archivetest.Quadrants(512, [4]color.RGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}}), 0o600); err != nil {
		t.Fatal(err)
	}
	mbPath := filepath.Join(dir, "gdal.mbtiles")
	const m = "20037508.342789244"
	gdal.Run(t, gdal.Translate, "-q", "-of", "MBTiles", "-a_srs", "EPSG:3857", "-a_ullr", "-"+m, m, m, "-"+m, world, mbPath)

	pmPath := filepath.Join(dir, "a.pmtiles")
	var pm bytes.Buffer
	w, err := pmtiles.Create("", &pm, pmtiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for x := range int64(4) {
		for y := range int64(4) {
			if err := w.Put(ctx, 2, x, y, archivetest.SolidPNG(color.RGBA{byte(60 * x), byte(60 * y), 99, 255})); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(ctx, archive.Metadata{Format: "png", MinZoom: 2, MaxZoom: 2}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pmPath, pm.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	a := apptest.Start(t, apptest.Options{Layers: fmt.Sprintf(`
layers:
  - name: arc:mb
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 1}]
    formats: [image/png]
    metatiling: [2, 2]
    source: {type: mbtiles, url: %q}
  - name: arc:pm
    gridSubsets: [{gridSet: EPSG:900913, zoomStop: 2}]
    formats: [image/png]
    metatiling: [2, 2]
    renderOnMiss: {enabled: true}
    source: {type: pmtiles, url: %q}
`, mbPath, pmPath)})

	// Seeding copies GDAL's tiles into the cache, byte for byte.
	wantDone(t, seedAndWait(t, a, "arc:mb", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`))
	prefix := "arc:mb/EPSG:900913/png/default/"
	if got, want := keys(t, a, prefix), upKeys(1+4)(prefix); !slices.Equal(got, want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	r, err := mbtiles.Open(ctx, mbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	err = r.Tiles(ctx, func(z int, x, y int64, data []byte) error {
		if z > 1 {
			return nil
		}
		n++
		got, _, _ := a.Get(t, fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, int64(1)<<z-1-y))
		if !bytes.Equal(got, data) {
			return fmt.Errorf("tile %d/%d/%d: stored %d bytes, GDAL's has %d", z, x, y, len(got), len(data))
		}
		return nil
	})
	if err != nil || n != 4 { // level 1 (GDAL writes no overview unless asked)
		t.Fatalf("compared %d of GDAL's tiles: %v", n, err)
	}

	// A miss renders from the PMTiles file.
	pr, err := pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(pm.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := pr.Tile(ctx, 2, 1, 3) // row 3 from the top: row 0 from the bottom
	status, _, body := getTile(t, a.URL, "/tiles/arc:pm/EPSG:900913/png/2/1/0.png")
	if status != 200 || !bytes.Equal(body, want) {
		t.Fatalf("miss of 2/1/0: %d, %d bytes; want 200 with the archive's %d bytes", status, len(body), len(want))
	}
}
