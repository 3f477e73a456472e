package mbtiles

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

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/mvt"
	"github.com/paulmach/orb/geojson"
	"github.com/paulmach/orb/maptile"

	"tilecache/internal/archive"
	"tilecache/internal/archive/archivetest"
)

var testMD = archive.Metadata{
	Name: "test", Attribution: "© test", Description: "a test", Format: "png", Type: "overlay",
	Bounds: [4]float64{-180, -85.0511287798066, 180, 85.0511287798066}, Center: [3]float64{1.5, 2.25, 1}, MinZoom: 0, MaxZoom: 1,
}

func write(t testing.TB, path string, ts []archivetest.Tile, set map[archivetest.Tile][]byte, md archive.Metadata) {
	t.Helper()
	ctx := context.Background()
	w, err := Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts {
		if err := w.Put(ctx, tl.Z, tl.X, tl.Y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, md); err != nil {
		t.Fatal(err)
	}
}

func open(t testing.TB, path string) *Reader {
	t.Helper()
	r, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func count(t testing.TB, path, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func distinct(set map[archivetest.Tile][]byte) int {
	m := map[string]bool{}
	for _, b := range set {
		m[string(b)] = true
	}
	return len(m)
}

func TestRoundTripRandomTileSets(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			set := archivetest.RandomTiles(rng, 1+int(seed), 1+rng.IntN(3000))
			path := filepath.Join(t.TempDir(), "a.mbtiles")
			write(t, path, archivetest.Shuffled(rng, set), set, testMD)
			archivetest.CheckReader(t, open(t, path), set)
			if got, want := count(t, path, "SELECT count(*) FROM images"), distinct(set); got != want {
				t.Fatalf("%d contents stored, want %d (one per distinct content)", got, want)
			}
		})
	}
}

// Rows are stored in TMS order: the north-west tile of level 1 is row 1.
func TestTMSRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.mbtiles")
	set := map[archivetest.Tile][]byte{{Z: 1, X: 0, Y: 0}: []byte("nw")}
	write(t, path, []archivetest.Tile{{Z: 1, X: 0, Y: 0}}, set, testMD)
	if n := count(t, path, "SELECT count(*) FROM tiles WHERE zoom_level = 1 AND tile_column = 0 AND tile_row = 1 AND tile_data = CAST('nw' AS BLOB)"); n != 1 {
		t.Fatalf("tile 1/0/0 is not at TMS row 1")
	}
	if n := count(t, path, "PRAGMA application_id"); n != applicationID {
		t.Fatalf("application_id %x, want %x", n, applicationID)
	}
}

// A tile put again with other data keeps the last, and the content no
// tile uses any more is removed.
func TestLastPutWins(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.mbtiles")
	w, err := Create(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "b", "c"} {
		if err := w.Put(ctx, 2, 1, 3, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, testMD); err != nil {
		t.Fatal(err)
	}
	archivetest.CheckReader(t, open(t, path), map[archivetest.Tile][]byte{{Z: 2, X: 1, Y: 3}: []byte("c")})
	if n := count(t, path, "SELECT count(*) FROM images"); n != 1 {
		t.Fatalf("%d contents stored, want 1", n)
	}
}

// An export that dies resumes by opening the file again: what it had
// committed stays.
func TestResume(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(2, 3))
	set := archivetest.RandomTiles(rng, 6, 3000)
	ts := archivetest.Shuffled(rng, set)
	path := filepath.Join(t.TempDir(), "a.mbtiles")
	w, err := Create(ctx, path)
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
	for _, tl := range ts[1000:1500] { // lost with the worker
		if err := w.Put(ctx, tl.Z, tl.X, tl.Y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	w.Abort()
	if n := count(t, path, "SELECT count(*) FROM map"); n != 1000 {
		t.Fatalf("%d tiles after the checkpoint, want 1000", n)
	}
	write(t, path, ts[1000:], set, testMD)
	archivetest.CheckReader(t, open(t, path), set)
}

func TestMetadata(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.mbtiles")
	md := testMD
	md.Format, md.VectorLayers = "pbf", json.RawMessage(`[{"id":"roads","fields":{"name":"String"}}]`)
	write(t, path, nil, nil, md)
	got, err := open(t, path).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.VectorLayers) != string(md.VectorLayers) {
		t.Fatalf("vector_layers %s, want %s", got.VectorLayers, md.VectorLayers)
	}
	got.VectorLayers, md.VectorLayers = nil, nil
	if fmt.Sprint(got) != fmt.Sprint(md) {
		t.Fatalf("metadata\n got %+v\nwant %+v", got, md)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := Create(ctx, filepath.Join(dir, "a.mbtiles"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(ctx, 1, 2, 0, nil); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("Put 1/2/0: %v", err)
	}
	md := testMD
	md.Format = "pbf"
	if err := w.Close(ctx, md); err == nil || !strings.Contains(err.Error(), "vector_layers") {
		t.Errorf("Close of pbf tiles without vector_layers: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.mbtiles"), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, filepath.Join(dir, "b.mbtiles")); err == nil {
		t.Error("Open of a file that is not SQLite: no error")
	}
	flat := filepath.Join(dir, "flat.mbtiles")
	db, err := sql.Open("sqlite", flat)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Create(ctx, flat); err == nil || !strings.Contains(err.Error(), "tiles table") {
		t.Errorf("Create on a file with a tiles table: %v", err)
	}
	if _, err := Open(ctx, filepath.Join(dir, "missing.mbtiles")); err == nil {
		t.Error("Open of a missing file: no error")
	}
}

var (
	_ archive.Writer = (*Writer)(nil)
	_ archive.Reader = (*Reader)(nil)
)

var quadColours = [4]color.RGBA{{255, 0, 0, 255}, {0, 255, 0, 255}, {0, 0, 255, 255}, {255, 255, 0, 255}}

// GDAL's MBTiles driver opens the archive and reads the tiles' pixels
// where they belong: the four tiles of level 1 make a 512x512 world.
func TestGDALReadsTheArchive(t *testing.T) {
	gdal := archivetest.RequireGDAL(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "a.mbtiles")
	set := map[archivetest.Tile][]byte{}
	for i, tl := range []archivetest.Tile{{Z: 1, X: 0, Y: 0}, {Z: 1, X: 1, Y: 0}, {Z: 1, X: 0, Y: 1}, {Z: 1, X: 1, Y: 1}} {
		set[tl] = archivetest.SolidPNG(quadColours[i])
	}
	set[archivetest.Tile{Z: 0, X: 0, Y: 0}] = archivetest.SolidPNG(color.RGBA{9, 9, 9, 255})
	write(t, path, archivetest.Shuffled(rand.New(rand.NewPCG(1, 1)), set), set, testMD)

	var info struct {
		Driver string                       `json:"driverShortName"`
		Size   []int                        `json:"size"`
		Meta   map[string]map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(gdal.Run(t, gdal.Info, "-json", path), &info); err != nil {
		t.Fatal(err)
	}
	if info.Driver != "MBTiles" || fmt.Sprint(info.Size) != "[512 512]" || info.Meta[""]["name"] != "test" {
		t.Fatalf("gdalinfo: driver %s, size %v, metadata %v", info.Driver, info.Size, info.Meta)
	}
	out := filepath.Join(dir, "out.png")
	gdal.Run(t, gdal.Translate, "-q", "-of", "PNG", path, out)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range [][2]int{{128, 128}, {384, 128}, {128, 384}, {384, 384}} {
		if got := archivetest.DecodeRGBA(t, b, p[0], p[1]); got != quadColours[i] {
			t.Errorf("pixel %v: %v, want %v", p, got, quadColours[i])
		}
	}
	// The overview GDAL reads from level 0 is the level-0 tile.
	gdal.Run(t, gdal.Translate, "-q", "-of", "PNG", "-outsize", "256", "256", path, out)
	if b, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	if got := archivetest.DecodeRGBA(t, b, 10, 10); got != (color.RGBA{9, 9, 9, 255}) {
		t.Errorf("overview pixel: %v, want the level-0 tile's", got)
	}
}

// GDAL's MBTiles vector driver reads the features of vector tiles.
func TestOGRReadsVectorTiles(t *testing.T) {
	gdal := archivetest.RequireGDAL(t)
	fc := geojson.NewFeatureCollection()
	f := geojson.NewFeature(orb.Point{2.35, 48.85})
	f.Properties["name"] = "Paris"
	fc.Append(f)
	layers := mvt.NewLayers(map[string]*geojson.FeatureCollection{"places": fc})
	layers.ProjectToTile(maptile.New(1, 0, 1))
	tile, err := mvt.MarshalGzipped(layers)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v.mbtiles")
	md := testMD
	md.Format, md.MinZoom, md.MaxZoom = "pbf", 1, 1
	md.VectorLayers = json.RawMessage(`[{"id":"places","fields":{"name":"String"},"minzoom":1,"maxzoom":1}]`)
	set := map[archivetest.Tile][]byte{{Z: 1, X: 1, Y: 0}: tile}
	write(t, path, []archivetest.Tile{{Z: 1, X: 1, Y: 0}}, set, md)
	out := string(gdal.Run(t, gdal.OGRInfo, "-ro", "-al", "-q", path))
	if !strings.Contains(out, "Layer name: places") || !strings.Contains(out, "name (String) = Paris") || !strings.Contains(out, "POINT") {
		t.Fatalf("ogrinfo did not read the feature:\n%s", out)
	}
}

// This package reads what GDAL writes: a 512x512 image of the world in
// four colours becomes the four tiles of level 1.
func TestReadsWhatGDALWrites(t *testing.T) {
	gdal := archivetest.RequireGDAL(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "world.png")
	if err := os.WriteFile(src, archivetest.Quadrants(512, quadColours), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gdal.mbtiles")
	const m = "20037508.342789244"
	gdal.Run(t, gdal.Translate, "-q", "-of", "MBTiles", "-a_srs", "EPSG:3857",
		"-a_ullr", "-"+m, m, m, "-"+m, "-co", "NAME=from gdal", src, path)
	r := open(t, path)
	md, err := r.Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if md.Name != "from gdal" || md.Format != "png" || md.MaxZoom != 1 {
		t.Fatalf("metadata %+v", md)
	}
	want := map[archivetest.Tile]color.RGBA{
		{Z: 1, X: 0, Y: 0}: quadColours[0], {Z: 1, X: 1, Y: 0}: quadColours[1],
		{Z: 1, X: 0, Y: 1}: quadColours[2], {Z: 1, X: 1, Y: 1}: quadColours[3],
	}
	n := 0
	err = r.Tiles(context.Background(), func(z int, x, y int64, data []byte) error {
		c, ok := want[archivetest.Tile{Z: z, X: x, Y: y}]
		if !ok {
			return nil // GDAL may add overview levels
		}
		n++
		if got := archivetest.DecodeRGBA(t, data, 128, 128); got != c {
			return fmt.Errorf("tile %d/%d/%d: %v, want %v", z, x, y, got, c)
		}
		if tile, ok, err := r.Tile(context.Background(), z, x, y); err != nil || !ok || string(tile) != string(data) {
			return fmt.Errorf("Tile %d/%d/%d differs from Tiles' (%v, %v)", z, x, y, ok, err)
		}
		return nil
	})
	if err != nil || n != 4 {
		t.Fatalf("read %d of the 4 tiles of level 1: %v", n, err)
	}
}
