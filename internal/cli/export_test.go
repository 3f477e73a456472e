package cli_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
	"tilecache/internal/archive/gpkg"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/archive/pmtiles"
	"tilecache/internal/cli"
	"tilecache/internal/testkit/testenv"
)

// TestExport: the stored tiles of a seeded layer are exported from the
// deployment's public tiles to PMTiles, MBTiles and GeoPackage, each tile
// byte-identical to the stored one at its row from the top, with the
// layer's metadata; GDAL reads the MBTiles and GeoPackage files; a bbox
// exports only the tiles it meets; a grid set archives do not hold is
// refused naming it.
func TestExport(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	r := runCLI(t, cli.Env{}, append([]string{"seed", "demo:world", "--gridset", "EPSG:900913", "--format", "image/png", "--zoom", "0-3", "--every", "1s"}, auth(a)...)...)
	if r.code != cli.ExitDone {
		t.Fatalf("seed: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	testenv.Eventually(t, 10*time.Second, "index.json to list the seeded tile set", func() bool {
		res := a.DoAuth(t, "", "", "GET", "/index.json", "")
		return res.Status == 200 && strings.Contains(res.Body, `"gridSet":"EPSG:900913"`)
	})
	prefix := "demo:world/EPSG:900913/png/default/"
	stored := a.TileKeys(t, prefix)
	if len(stored) != 1+4+16+64 {
		t.Fatalf("%d tiles stored, want 85", len(stored))
	}
	dir := t.TempDir()
	ctx := context.Background()
	gdal := archivetest.RequireGDAL(t)
	for _, kind := range []string{"pmtiles", "mbtiles", "gpkg"} {
		out := filepath.Join(dir, "world."+kind)
		r := runCLI(t, cli.Env{}, append([]string{"export", "--layer", "demo:world", "--gridset", "EPSG:900913", "--format", "image/png", "--zoom", "0-3", "--to", out}, auth(a)...)...)
		if r.code != cli.ExitDone || !strings.Contains(r.stderr, "85 tiles written") {
			t.Fatalf("export %s: exit %d\n%s\n%s", kind, r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(out + ".part"); !os.IsNotExist(err) {
			t.Errorf("%s: the partial file is left: %v", kind, err)
		}
		var rd archive.Reader
		var err error
		switch kind {
		case "pmtiles":
			var b []byte
			if b, err = os.ReadFile(out); err == nil {
				rd, err = pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(b)))
			}
		case "mbtiles":
			rd, err = mbtiles.Open(ctx, out)
		case "gpkg":
			rd, err = gpkg.Open(ctx, out, "tiles")
		}
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		err = rd.Tiles(ctx, func(z int, x, y int64, data []byte) error {
			n++
			want, _, ok := a.Get(t, fmt.Sprintf("%s%d/%d/%d.png", prefix, z, x, int64(1)<<z-1-y))
			if !ok || !bytes.Equal(want, data) {
				return fmt.Errorf("tile %d/%d/%d: %d bytes, the stored one %d (%v)", z, x, y, len(data), len(want), ok)
			}
			return nil
		})
		if err != nil || n != 85 {
			t.Errorf("%s: %d tiles read back, want 85: %v", kind, n, err)
		}
		md, err := rd.Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A GeoPackage keeps its bounds in its tile matrix set, not in
		// what its reader's Metadata gives.
		if md.Format != "png" || md.MinZoom != 0 || md.MaxZoom != 3 || kind != "gpkg" && (md.Bounds[0] > -179.9 || md.Bounds[3] < 85) {
			t.Errorf("%s: metadata %+v", kind, md)
		}
		rd.Close()
		if kind != "pmtiles" {
			var info struct {
				Driver string `json:"driverShortName"`
				Size   []int  `json:"size"`
			}
			if err := json.Unmarshal(gdal.Run(t, gdal.Info, "-json", out), &info); err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"mbtiles": "MBTiles", "gpkg": "GPKG"}[kind]; info.Driver != want || len(info.Size) != 2 || info.Size[0] != 2048 {
				t.Errorf("gdalinfo of the %s: driver %s, size %v; want %s, 2048 pixels wide (level 3)", kind, info.Driver, info.Size, want)
			}
		}
	}

	// A bbox of the north-east quarter at level 2: its 4 tiles.
	out := filepath.Join(dir, "ne.pmtiles")
	r = runCLI(t, cli.Env{}, append([]string{"export", "--layer", "demo:world", "--gridset", "EPSG:900913", "--zoom", "2", "--bbox", "1,1,20037508,20037508", "--to", out}, auth(a)...)...)
	if r.code != cli.ExitDone || !strings.Contains(r.stderr, "4 tiles written") {
		t.Fatalf("export of a bbox: exit %d\n%s", r.code, r.stderr)
	}

	// EPSG:4326 is not the pyramid PMTiles holds.
	r = runCLI(t, cli.Env{}, append([]string{"export", "--layer", "demo:world", "--gridset", "EPSG:4326", "--to", filepath.Join(dir, "geo.pmtiles")}, auth(a)...)...)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "EPSG:4326") {
		t.Errorf("export of EPSG:4326: exit %d %q", r.code, r.stderr)
	}
	r = runCLI(t, cli.Env{}, append([]string{"export", "--layer", "demo:world", "--to", filepath.Join(dir, "x.zip")}, auth(a)...)...)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, ".pmtiles, .mbtiles or .gpkg") {
		t.Errorf("export to .zip: exit %d %q", r.code, r.stderr)
	}
	// Level 4 holds no stored tile. A PMTiles archive cannot be empty:
	// the export says why and leaves no file. An MBTiles can.
	out = filepath.Join(dir, "empty.pmtiles")
	r = runCLI(t, cli.Env{}, append([]string{"export", "--layer", "demo:world", "--gridset", "EPSG:900913", "--format", "image/png", "--zoom", "4", "--to", out}, auth(a)...)...)
	if r.code != cli.ExitError || !strings.Contains(r.stderr, "none of the 256 tiles is stored") {
		t.Errorf("export of a level with no stored tile to PMTiles: exit %d %q", r.code, r.stderr)
	}
	for _, f := range []string{out, out + ".part"} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("the empty PMTiles export left %s: %v", f, err)
		}
	}
	out = filepath.Join(dir, "empty.mbtiles")
	r = runCLI(t, cli.Env{}, append([]string{"export", "--layer", "demo:world", "--gridset", "EPSG:900913", "--format", "image/png", "--zoom", "4", "--to", out}, auth(a)...)...)
	if r.code != cli.ExitDone || !strings.Contains(r.stderr, "0 tiles written, 256 not stored") {
		t.Errorf("export of a level with no stored tile to MBTiles: exit %d %q", r.code, r.stderr)
	}
}

// TestExportVector: a vector layer (an xyz source of Mapbox vector tiles,
// some sent gzip-compressed, some not) is exported to PMTiles and
// MBTiles: every tile gzip-compressed (PMTiles' tile compression gzip),
// its content the stored tile's, vector_layers in the metadata; GDAL's
// MBTiles driver reads the features.
func TestExportVector(t *testing.T) {
	gdal := archivetest.RequireGDAL(t)
	up := archivetest.VectorUpstream(t)
	a := apptest.Start(t, apptest.Options{Layers: archivetest.VectorLayer(up.URL)})
	r := runCLI(t, cli.Env{}, append([]string{"seed", "vec:places", "--zoom", "0-2", "--every", "1s"}, auth(a)...)...)
	if r.code != cli.ExitDone {
		t.Fatalf("seed: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	testenv.Eventually(t, 10*time.Second, "the TileJSON to list the vector layers", func() bool {
		res := a.DoAuth(t, "", "", "GET", "/index.json", "")
		if res.Status != 200 || !strings.Contains(res.Body, "vec:places") {
			return false
		}
		tj := a.DoAuth(t, "", "", "GET", "/vec:places/EPSG:900913/mapbox-vectortile/default/tilejson.json", "")
		return tj.Status == 200 && strings.Contains(tj.Body, `"places"`)
	})
	ctx := context.Background()
	prefix := "vec:places/EPSG:900913/mapbox-vectortile/default/"
	for _, kind := range []string{"pmtiles", "mbtiles"} {
		out := filepath.Join(t.TempDir(), "places."+kind)
		r := runCLI(t, cli.Env{}, append([]string{"export", "--layer", "vec:places", "--to", out}, auth(a)...)...)
		if r.code != cli.ExitDone || !strings.Contains(r.stderr, "21 tiles written") {
			t.Fatalf("export %s: exit %d\n%s", kind, r.code, r.stderr)
		}
		var rd archive.Reader
		var err error
		if kind == "pmtiles" {
			var b []byte
			if b, err = os.ReadFile(out); err == nil {
				var p *pmtiles.Reader
				if p, err = pmtiles.Open(ctx, pmtiles.ReaderAt(bytes.NewReader(b))); err == nil && p.Header().TileCompression != pmtiles.Gzip {
					t.Errorf("PMTiles tile compression %d, want gzip", p.Header().TileCompression)
				}
				rd = p
			}
		} else {
			rd, err = mbtiles.Open(ctx, out)
		}
		if err != nil {
			t.Fatal(err)
		}
		err = rd.Tiles(ctx, func(z int, x, y int64, data []byte) error {
			stored, _, _ := a.Get(t, fmt.Sprintf("%s%d/%d/%d.pbf", prefix, z, x, int64(1)<<z-1-y))
			if !bytes.Equal(gunzipTest(t, data), gunzipTest(t, stored)) {
				return fmt.Errorf("tile %d/%d/%d differs from the stored one", z, x, y)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		md, err := rd.Metadata(ctx)
		if err != nil || md.Format != "pbf" || !bytes.Contains(md.VectorLayers, []byte(`"places"`)) {
			t.Errorf("%s metadata: %+v, %v", kind, md, err)
		}
		rd.Close()
		if kind == "mbtiles" {
			out := string(gdal.Run(t, gdal.OGRInfo, "-ro", "-al", "-q", out))
			if !strings.Contains(out, "Layer name: places") || !strings.Contains(out, "tile 2/3/1") {
				t.Errorf("ogrinfo of the exported MBTiles:\n%.2000s", out)
			}
		}
	}
}

// gunzipTest returns b decompressed when it is gzip, else b.
func gunzipTest(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
