package pmtiles

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/archive"
)

type tile struct {
	z    int
	x, y int64
}

// tileSet makes a random set of tiles of levels 0..maxZ: runs of
// consecutive tile ids sharing one content, contents repeated across
// the set, and some distinct ones.
func tileSet(rng *rand.Rand, maxZ, n int) map[tile][]byte {
	pool := make([][]byte, 8)
	for i := range pool {
		pool[i] = fmt.Appendf(nil, "shared content %d", i)
	}
	set := map[tile][]byte{}
	last := TileID(maxZ+1, 0, 0)
	n = min(n, int(last))
	for len(set) < n {
		id := rng.Uint64N(last)
		var data []byte
		if rng.IntN(4) == 0 {
			data = fmt.Appendf(nil, "distinct %d %d", id, rng.Uint64())
		} else {
			data = pool[rng.IntN(len(pool))]
		}
		run := 1 + rng.IntN(20)
		for i := 0; i < run && id+uint64(i) < last && len(set) < n; i++ {
			z, x, y := TileZXY(id + uint64(i))
			set[tile{z, int64(x), int64(y)}] = data
		}
	}
	return set
}

func shuffled(rng *rand.Rand, set map[tile][]byte) []tile {
	ts := make([]tile, 0, len(set))
	for t := range set {
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b tile) int {
		return cmp.Compare(TileID(a.z, uint32(a.x), uint32(a.y)), TileID(b.z, uint32(b.x), uint32(b.y)))
	})
	rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	return ts
}

var testMD = archive.Metadata{
	Name: "test", Attribution: "© test", Format: "png",
	Bounds: [4]float64{-10, -20, 30, 40}, Center: [3]float64{1, 2, 3}, MinZoom: 0, MaxZoom: 9,
}

func write(t testing.TB, ts []tile, set map[tile][]byte, opt Options) []byte {
	t.Helper()
	ctx := context.Background()
	var out bytes.Buffer
	w, err := Create(t.TempDir(), &out, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts {
		if err := w.Put(ctx, tl.z, tl.x, tl.y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, testMD); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// check reads every tile back with this package's reader, and again by
// walking the directories in verify, which also checks the format's
// invariants, and checks that the archive holds nothing else.
func check(t *testing.T, b []byte, set map[tile][]byte) {
	t.Helper()
	ctx := context.Background()
	r, err := Open(ctx, ReaderAt(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	for tl, want := range set {
		got, ok, err := r.Tile(ctx, tl.z, tl.x, tl.y)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("tile %v: got %q %v %v, want %q", tl, got, ok, err, want)
		}
	}
	seen := 0
	err = r.Tiles(ctx, func(z int, x, y int64, data []byte) error {
		want, ok := set[tile{z, x, y}]
		if !ok || !bytes.Equal(want, data) {
			return fmt.Errorf("tile %d/%d/%d: got %q, want %q (%v)", z, x, y, data, want, ok)
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(set) {
		t.Fatalf("Tiles walked %d tiles, want %d", seen, len(set))
	}
	h := r.Header()
	if h.AddressedTiles != uint64(len(set)) || !h.Clustered {
		t.Fatalf("header: %d addressed tiles, clustered %v; want %d, true", h.AddressedTiles, h.Clustered, len(set))
	}
	walked := 0
	err = verify(b, func(z int, x, y uint32, data []byte) error {
		if want, ok := set[tile{z, int64(x), int64(y)}]; !ok || !bytes.Equal(want, data) {
			return fmt.Errorf("directory walk: tile %d/%d/%d: got %q, want %q (%v)", z, x, y, data, want, ok)
		}
		walked++
		return nil
	})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if walked != len(set) {
		t.Fatalf("the directories address %d tiles, want %d", walked, len(set))
	}
}

// Tile ids of the specification's reference implementations, with their
// sources:
//   - levels 0-2: the specification repository's own tests
//     (protomaps/PMTiles, js/test/v3.test.ts, "zxy to tile id" and
//     "tile id to zxy");
//   - 12/3423/1763: go-pmtiles v1.31.2, pmtiles/tile_id_test.go
//     (TestIDToZxy);
//   - the rest: the four corners of levels 3, 15, 25 and 26 (x/y 0/0 is
//     the level's first id, 2^z-1/0 its last), computed with go-pmtiles
//     v1.31.2's ZxyToID, which IDToZxy turned back into the same tiles.
//
// The first id of level z is (4^z-1)/3, the number of tiles of the
// levels below it: the specification's "Entries" section makes the id a
// cumulative position on the series of Hilbert curves from level 0.
var specTileIDs = []struct {
	z    int
	x, y uint32
	id   uint64
}{
	{0, 0, 0, 0},
	{1, 0, 0, 1},
	{1, 0, 1, 2},
	{1, 1, 1, 3},
	{1, 1, 0, 4},
	{2, 0, 0, 5},
	{12, 3423, 1763, 19078479},
	{3, 0, 0, 21},
	{3, 7, 0, 84},
	{3, 0, 7, 42},
	{3, 7, 7, 63},
	{15, 0, 0, 357913941},
	{15, 32767, 0, 1431655764},
	{15, 0, 32767, 715827882},
	{15, 32767, 32767, 1073741823},
	{25, 0, 0, 375299968947541},
	{25, 33554431, 0, 1501199875790164},
	{25, 0, 33554431, 750599937895082},
	{25, 33554431, 33554431, 1125899906842623},
	{26, 0, 0, 1501199875790165},
	{26, 67108863, 0, 6004799503160660},
	{26, 0, 67108863, 3002399751580330},
	{26, 67108863, 67108863, 4503599627370495},
}

func TestTileIDSpecificationVectors(t *testing.T) {
	for _, v := range specTileIDs {
		if id := TileID(v.z, v.x, v.y); id != v.id {
			t.Errorf("TileID(%d, %d, %d) = %d, want %d", v.z, v.x, v.y, id, v.id)
		}
		if z, x, y := TileZXY(v.id); z != v.z || x != v.x || y != v.y {
			t.Errorf("TileZXY(%d) = %d/%d/%d, want %d/%d/%d", v.id, z, x, y, v.z, v.x, v.y)
		}
	}
	for z := range 27 {
		if id, want := TileID(z, 0, 0), (uint64(1)<<(2*z)-1)/3; id != want {
			t.Errorf("TileID(%d, 0, 0) = %d, want %d", z, id, want)
		}
	}
}

// TileZXY undoes TileID for random tiles of every level 0-26, and
// TileID undoes TileZXY for random ids below level 27.
func TestTileIDRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		z := rng.IntN(27)
		x, y := rng.Uint32N(1<<z), rng.Uint32N(1<<z)
		id := TileID(z, x, y)
		if gz, gx, gy := TileZXY(id); gz != z || gx != x || gy != y {
			t.Fatalf("TileZXY(TileID(%d, %d, %d)) = %d/%d/%d", z, x, y, gz, gx, gy)
		}
		id = rng.Uint64N(TileID(27, 0, 0))
		if z, x, y := TileZXY(id); TileID(z, x, y) != id {
			t.Fatalf("TileID(TileZXY(%d)) = TileID(%d, %d, %d) = %d", id, z, x, y, TileID(z, x, y))
		}
	}
}

func TestRoundTripRandomTileSets(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			set := tileSet(rng, 1+int(seed), 1+rng.IntN(3000))
			b := write(t, shuffled(rng, set), set, Options{BufferEntries: 1 + rng.IntN(500)})
			check(t, b, set)
		})
	}
}

// A set too large for the root directory gets leaf directories.
func TestLeafDirectories(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	set := map[tile][]byte{}
	for id := range TileID(9, 0, 0) { // levels 0..8, 87,381 tiles
		z, x, y := TileZXY(id)
		if id%3 == 0 {
			set[tile{z, int64(x), int64(y)}] = fmt.Appendf(nil, "tile %d", id)
		} else {
			set[tile{z, int64(x), int64(y)}] = []byte("blank")
		}
	}
	b := write(t, shuffled(rng, set), set, Options{BufferEntries: 10000})
	h, _ := unmarshalHeader(b)
	if h.LeafLength == 0 {
		t.Fatal("no leaf directories")
	}
	if h.TileContents != uint64(len(set)+2)/3+1 {
		t.Fatalf("%d contents stored, want %d", h.TileContents, (len(set)+2)/3+1)
	}
	check(t, b, set)
}

// Identical consecutive tiles make one entry; identical tiles apart are
// stored once.
func TestDedupeAndRunLength(t *testing.T) {
	set := map[tile][]byte{}
	for id := range TileID(4, 0, 0) {
		z, x, y := TileZXY(id)
		set[tile{z, int64(x), int64(y)}] = []byte("same")
	}
	z, x, y := TileZXY(10)
	set[tile{z, int64(x), int64(y)}] = []byte("other")
	b := write(t, shuffled(rand.New(rand.NewPCG(1, 1)), set), set, Options{})
	h, _ := unmarshalHeader(b)
	// Runs: level 0, level 1, level 2 up to id 9, id 10, the rest of
	// level 2, level 3 (a run stops at the end of a level).
	if h.TileEntries != 6 || h.TileContents != 2 || h.DataLength != 9 {
		t.Fatalf("entries %d contents %d data %d bytes; want 6, 2, 9", h.TileEntries, h.TileContents, h.DataLength)
	}
	check(t, b, set)
}

func TestSameTilesAnyOrderSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	set := tileSet(rng, 6, 4000)
	a := write(t, shuffled(rng, set), set, Options{BufferEntries: 333})
	b := write(t, shuffled(rng, set), set, Options{})
	if !bytes.Equal(a, b) {
		t.Fatal("two orders of the same tiles gave different archives")
	}
}

func TestLastPutWins(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	w, err := Create("", &out, Options{BufferEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "b", "c", "d", "e"} {
		if err := w.Put(ctx, 1, 1, 0, []byte(d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, testMD); err != nil {
		t.Fatal(err)
	}
	check(t, out.Bytes(), map[tile][]byte{{1, 1, 0}: []byte("e")})
}

// An export that dies after a checkpoint resumes and ends with the same
// bytes as one that did not die.
func TestResumeAfterCheckpointGivesTheSameArchive(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	set := tileSet(rng, 7, 5000)
	ts := shuffled(rng, set)
	want := write(t, ts, set, Options{BufferEntries: 700})

	dir := t.TempDir()
	w, err := Create(dir, io.Discard, Options{BufferEntries: 700})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts[:2000] {
		if err := w.Put(ctx, tl.z, tl.x, tl.y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts[2000:3500] { // put, then lost when the worker dies
		if err := w.Put(ctx, tl.z, tl.x, tl.y, []byte("lost")); err != nil {
			t.Fatal(err)
		}
	}
	w.blobsW.Flush() // what the dead worker had written reaches the disk
	w.blobs.Close()

	var out bytes.Buffer
	w, err = Resume(ctx, dir, &out, Options{BufferEntries: 700})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts[2000:] {
		if err := w.Put(ctx, tl.z, tl.x, tl.y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx, testMD); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatal("resumed archive differs from the uninterrupted one")
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("staging files left: %v", names)
	}
}

func TestMetadataRoundTrip(t *testing.T) {
	ctx := context.Background()
	md := testMD
	md.Format, md.Type, md.Description = "pbf", "overlay", "roads"
	md.MinZoom, md.MaxZoom, md.Center[2] = 0, 0, 0 // the header's zooms are the tiles'
	md.VectorLayers = []byte(`[{"id":"roads","fields":{}}]`)
	var out bytes.Buffer
	w, _ := Create("", &out, Options{TileCompression: Gzip})
	if err := w.Put(ctx, 0, 0, 0, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx, md); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ctx, ReaderAt(bytes.NewReader(out.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Metadata(ctx)
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
	if r.Header().TileCompression != Gzip || r.Header().TileType != MVT {
		t.Fatalf("header %+v", r.Header())
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	w, _ := Create("", io.Discard, Options{})
	defer w.Abort()
	for _, tl := range []tile{{-1, 0, 0}, {32, 0, 0}, {2, 4, 0}, {2, 0, -1}} {
		if err := w.Put(ctx, tl.z, tl.x, tl.y, nil); err == nil {
			t.Errorf("Put %v: no error", tl)
		}
	}
	if _, err := Open(ctx, ReaderAt(bytes.NewReader([]byte("SQLite format 3\x00 and more bytes")))); err == nil {
		t.Error("Open of a non-PMTiles file: no error")
	}
}

// With no tile put, Close writes nothing and says so: the format's
// directories must not be empty (go-pmtiles verify refuses an archive of
// no tiles). Its own staging directory is removed all the same.
func TestCloseWithNoTilesWritesNothing(t *testing.T) {
	var out bytes.Buffer
	w, err := Create("", &out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := w.dir
	err = w.Close(context.Background(), testMD)
	if !errors.Is(err, archive.ErrNoTiles) {
		t.Fatalf("Close with no tiles: %v, want archive.ErrNoTiles", err)
	}
	if out.Len() != 0 {
		t.Errorf("Close with no tiles wrote %d bytes", out.Len())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the staging directory %s is left: %v", dir, err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

// A Close that fails leaves the staging directory as the last checkpoint
// left it, and a Resume from it ends with the archive a first Close would
// have written.
func TestFailedCloseKeepsTheCheckpoint(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(15, 16))
	set := tileSet(rng, 6, 2000)
	ts := shuffled(rng, set)
	want := write(t, ts, set, Options{})
	dir := t.TempDir()
	w, err := Create(dir, failingWriter{}, Options{BufferEntries: 300})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range ts {
		if err := w.Put(ctx, tl.z, tl.x, tl.y, set[tl]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx, testMD); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close to a failing output: %v", err)
	}
	var out bytes.Buffer
	if w, err = Resume(ctx, dir, &out, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx, testMD); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatal("the archive written after the resume differs")
	}
}

type countingReader struct {
	RangeReader
	n int
}

func (c *countingReader) ReadRange(ctx context.Context, off, length int64) ([]byte, error) {
	c.n++
	return c.RangeReader.ReadRange(ctx, off, length)
}

// Walking every tile reads the tile data in spans, not tile by tile.
func TestTilesReadsInSpans(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(17, 18))
	set := tileSet(rng, 8, 30000)
	b := write(t, shuffled(rng, set), set, Options{})
	src := &countingReader{RangeReader: ReaderAt(bytes.NewReader(b))}
	r, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := r.Tiles(ctx, func(int, int64, int64, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	leaves := int(h.TileEntries/4096) + 2
	if data := int(h.DataLength>>20) + 1; n != len(set) || src.n > 1+leaves+data {
		t.Fatalf("%d tiles in %d reads; want %d tiles in at most %d reads", n, src.n, len(set), 1+leaves+data)
	}
}
