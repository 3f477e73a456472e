package pmtiles

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"tilecache/internal/archive/archivetest"
	"tilecache/internal/testkit/testenv"
)

// go-pmtiles, the format's reference tool, verifies the structure of an
// archive with leaf directories, run-length entries and shared contents
// (`go-pmtiles verify`) and reads tiles back by z/x/y byte for byte
// (`go-pmtiles tile`), an absent tile as nothing.
func TestGoPMTilesVerifiesAndReads(t *testing.T) {
	cli := testenv.RequirePMTilesCLI(t)
	rng := rand.New(rand.NewPCG(31, 32))
	set := archivetest.RandomTiles(rng, 8, 40000)
	ts := archivetest.Shuffled(rng, set)
	b := write(t, toTiles(ts), toSet(set), Options{BufferEntries: 5000})
	h, _ := unmarshalHeader(b)
	if h.LeafLength == 0 || h.TileEntries >= h.AddressedTiles || h.TileContents >= h.TileEntries {
		t.Fatalf("header %+v: want leaf directories, runs and shared contents", h)
	}
	path := filepath.Join(t.TempDir(), "a.pmtiles")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cli.Run(t, "verify", path)
	// A sample of tiles, spread over the archive's levels and leaves.
	for i := 0; i < 40; i++ {
		tl := ts[rng.IntN(len(ts))]
		got := cli.Run(t, "tile", path, fmt.Sprint(tl.Z), fmt.Sprint(tl.X), fmt.Sprint(tl.Y))
		if !bytes.Equal(got, set[tl]) {
			t.Fatalf("go-pmtiles tile %d/%d/%d: %q, want %q", tl.Z, tl.X, tl.Y, got, set[tl])
		}
	}
	absent := TileID(9, 0, 0) // beyond the archive's levels
	z, x, y := TileZXY(absent)
	if got := cli.Run(t, "tile", path, fmt.Sprint(z), fmt.Sprint(x), fmt.Sprint(y)); len(got) != 0 {
		t.Fatalf("go-pmtiles tile %d/%d/%d of an absent tile gave %d bytes", z, x, y, len(got))
	}
	// And it refuses a damaged one: the header's count of addressed
	// tiles one too many.
	bad := bytes.Clone(b)
	bad[72] ^= 1
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), string(cli), "verify", path).CombinedOutput(); err == nil {
		t.Fatalf("go-pmtiles verify passed a damaged header:\n%s", out)
	}
}
