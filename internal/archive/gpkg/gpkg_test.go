package gpkg

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"image/color"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
)

var testMD = archive.Metadata{Name: "test", Description: "a test", Format: "png"}

func write(t testing.TB, path string, opt Options, ts []archivetest.Tile, set map[archivetest.Tile][]byte) {
	t.Helper()
	ctx := context.Background()
	w, err := Create(ctx, path, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts {
		if err := w.Put(ctx, tl.Z, tl.X, tl.Y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, testMD); err != nil {
		t.Fatal(err)
	}
}

func open(t testing.TB, path, table string) *Reader {
	t.Helper()
	r, err := Open(context.Background(), path, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRoundTripRandomTileSets(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 13))
			maxZ := 1 + int(seed)
			set := archivetest.RandomTiles(rng, maxZ, 1+rng.IntN(3000))
			path := filepath.Join(t.TempDir(), "a.gpkg")
			write(t, path, Options{Format: "png", TileMatrixSet: WebMercatorQuad(maxZ)}, archivetest.Shuffled(rng, set), set)
			r := open(t, path, "")
			archivetest.CheckReader(t, r, set)
			if fmt.Sprint(r.TileMatrixSet()) != fmt.Sprint(WebMercatorQuad(maxZ)) {
				t.Fatalf("tile matrix set\n got %+v\nwant %+v", r.TileMatrixSet(), WebMercatorQuad(maxZ))
			}
		})
	}
}

// geographic is a tiling of EPSG:4326 with two tiles across level 0, as
// GeoWebCache's EPSG:4326 grid set has.
func geographic(maxZ int) TileMatrixSet {
	s := TileMatrixSet{SRS: WGS84SRS, MinX: -180, MinY: -90, MaxX: 180, MaxY: 90}
	for z := 0; z <= maxZ; z++ {
		px := 180.0 / 256 / float64(int64(1)<<z)
		s.Matrices = append(s.Matrices, TileMatrix{Zoom: z, MatrixWidth: 2 << z, MatrixHeight: 1 << z,
			TileWidth: 256, TileHeight: 256, PixelXSize: px, PixelYSize: px})
	}
	return s
}

func pragma(t *testing.T, path, name string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("PRAGMA " + name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

var (
	_ archive.Writer = (*Writer)(nil)
	_ archive.Reader = (*Reader)(nil)
)

var quadColours = [4]color.RGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}}

// GDAL's GeoPackage driver opens the archive, in Web Mercator and in a
// geographic tiling of two tiles across, and reads each tile's pixels
// where they belong.
func TestGDALReadsTheArchive(t *testing.T) {
	gdal := archivetest.RequireGDAL(t)
	for _, tt := range []struct {
		name  string
		tms   TileMatrixSet
		tiles []archivetest.Tile
		size  string
		epsg  string
		probe [][2]int
	}{
		{"webmercator", WebMercatorQuad(1), []archivetest.Tile{{Z: 1, X: 0, Y: 0}, {Z: 1, X: 1, Y: 0}, {Z: 1, X: 0, Y: 1}, {Z: 1, X: 1, Y: 1}},
			"[512 512]", `"EPSG",3857`, [][2]int{{128, 128}, {384, 128}, {128, 384}, {384, 384}}},
		{"geographic", geographic(0), []archivetest.Tile{{Z: 0, X: 0, Y: 0}, {Z: 0, X: 1, Y: 0}},
			"[512 256]", `"EPSG",4326`, [][2]int{{128, 128}, {384, 128}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "a.gpkg")
			set := map[archivetest.Tile][]byte{}
			for i, tl := range tt.tiles {
				set[tl] = archivetest.SolidPNG(quadColours[i])
			}
			write(t, path, Options{Table: "layer_one", Format: "png", TileMatrixSet: tt.tms}, tt.tiles, set)
			if pragma(t, path, "application_id") != applicationID || pragma(t, path, "user_version") != userVersion {
				t.Fatal("application_id or user_version not set")
			}
			var info struct {
				Driver string `json:"driverShortName"`
				Size   []int  `json:"size"`
				CRS    struct {
					WKT string `json:"wkt"`
				} `json:"coordinateSystem"`
			}
			if err := json.Unmarshal(gdal.Run(t, gdal.Info, "-json", path), &info); err != nil {
				t.Fatal(err)
			}
			if info.Driver != "GPKG" || fmt.Sprint(info.Size) != tt.size || !strings.Contains(info.CRS.WKT, tt.epsg) {
				t.Fatalf("gdalinfo: driver %s, size %v, CRS %s", info.Driver, info.Size, info.CRS.WKT)
			}
			out := filepath.Join(dir, "out.png")
			gdal.Run(t, gdal.Translate, "-q", "-of", "PNG", path, out)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range tt.probe {
				if got := archivetest.DecodeRGBA(t, b, p[0], p[1]); got != quadColours[i] {
					t.Errorf("pixel %v: %v, want %v", p, got, quadColours[i])
				}
			}
		})
	}
}

// This package reads what GDAL writes.
func TestReadsWhatGDALWrites(t *testing.T) {
	gdal := archivetest.RequireGDAL(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "world.png")
	if err := os.WriteFile(src, archivetest.Quadrants(512, quadColours), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gdal.gpkg")
	const m = "20037508.342789244"
	gdal.Run(t, gdal.Translate, "-q", "-of", "GPKG", "-a_srs", "EPSG:3857", "-a_ullr", "-"+m, m, m, "-"+m,
		"-co", "TILING_SCHEME=GoogleMapsCompatible", "-co", "RASTER_TABLE=world", "-co", "TILE_FORMAT=PNG", src, path)
	r := open(t, path, "world")
	md, err := r.Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if md.Format != "png" || md.MaxZoom != 1 || r.TileMatrixSet().SRS.OrgID != 3857 {
		t.Fatalf("metadata %+v, tile matrix set %+v", md, r.TileMatrixSet())
	}
	want := map[archivetest.Tile]color.RGBA{
		{Z: 1, X: 0, Y: 0}: quadColours[0], {Z: 1, X: 1, Y: 0}: quadColours[1],
		{Z: 1, X: 0, Y: 1}: quadColours[2], {Z: 1, X: 1, Y: 1}: quadColours[3],
	}
	n := 0
	err = r.Tiles(context.Background(), func(z int, x, y int64, data []byte) error {
		c, ok := want[archivetest.Tile{Z: z, X: x, Y: y}]
		if !ok {
			return nil
		}
		n++
		if got := archivetest.DecodeRGBA(t, data, 128, 128); got != c {
			return fmt.Errorf("tile %d/%d/%d: %v, want %v", z, x, y, got, c)
		}
		return nil
	})
	if err != nil || n != 4 {
		t.Fatalf("read %d of the 4 tiles of level 1: %v", n, err)
	}
}

func TestResume(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(4, 5))
	set := archivetest.RandomTiles(rng, 6, 3000)
	ts := archivetest.Shuffled(rng, set)
	path := filepath.Join(t.TempDir(), "a.gpkg")
	opt := Options{Format: "png", TileMatrixSet: WebMercatorQuad(6)}
	w, err := Create(ctx, path, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts[:1000] {
		if err := w.Put(ctx, tl.Z, tl.X, tl.Y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts[1000:1500] {
		if err := w.Put(ctx, tl.Z, tl.X, tl.Y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort()
	write(t, path, opt, ts[1000:], set)
	archivetest.CheckReader(t, open(t, path, ""), set)
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := Options{Format: "png", TileMatrixSet: geographic(2)}
	for _, tt := range []struct {
		opt  Options
		want string
	}{
		{Options{Table: "a-b", Format: "png", TileMatrixSet: good.TileMatrixSet}, "table name"},
		{Options{Table: "gpkg_x", Format: "png", TileMatrixSet: good.TileMatrixSet}, "table name"},
		{Options{Format: "pbf", TileMatrixSet: good.TileMatrixSet}, "tile format"},
		{Options{Format: "png"}, "SRS"},
		{Options{Format: "png", TileMatrixSet: TileMatrixSet{SRS: WGS84SRS, MaxX: 1, MaxY: 1}}, "no levels"},
	} {
		if _, err := Create(ctx, filepath.Join(dir, "x.gpkg"), tt.opt); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Create %+v: %v, want an error naming %q", tt.opt, err, tt.want)
		}
	}
	w, err := Create(ctx, filepath.Join(dir, "a.gpkg"), good)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for _, tl := range []archivetest.Tile{{Z: 3, X: 0, Y: 0}, {Z: 1, X: 4, Y: 0}, {Z: 1, X: 0, Y: 2}, {Z: 0, X: -1, Y: 0}} {
		if err := w.Put(ctx, tl.Z, tl.X, tl.Y, []byte("x")); err == nil {
			t.Errorf("Put %v: no error", tl)
		}
	}
	if _, err := Open(ctx, filepath.Join(dir, "missing.gpkg"), ""); err == nil {
		t.Error("Open of a missing file: no error")
	}
}
