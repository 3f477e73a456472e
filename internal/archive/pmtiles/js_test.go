package pmtiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/archive/archivetest"
	"tilecache/internal/testkit/testenv"
)

// The pmtiles JavaScript library, which map clients use, reads every tile
// of an archive with leaf directories byte for byte, and its metadata.
func TestJavaScriptLibraryReadsTheArchive(t *testing.T) {
	node, lib := testenv.RequirePMTilesJS(t)
	rng := rand.New(rand.NewPCG(21, 22))
	set := archivetest.RandomTiles(rng, 8, 40000)
	ts := archivetest.Shuffled(rng, set)
	b := write(t, toTiles(ts), toSet(set), Options{})
	if h, _ := unmarshalHeader(b); h.LeafLength == 0 {
		t.Fatal("no leaf directories")
	}
	path := filepath.Join(t.TempDir(), "a.pmtiles")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	want := map[string]string{}
	for _, tl := range ts {
		fmt.Fprintf(&in, "%d %d %d\n", tl.Z, tl.X, tl.Y)
		sum := sha256.Sum256(set[tl])
		want[fmt.Sprintf("%d/%d/%d", tl.Z, tl.X, tl.Y)] = hex.EncodeToString(sum[:])
	}
	fmt.Fprintf(&in, "8 0 0\n") // absent unless drawn
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "readtiles.mjs"), lib, path)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	n := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		id, got, _ := strings.Cut(line, " ")
		if id == "metadata" {
			if !strings.Contains(got, `"name":"test"`) || !strings.Contains(got, `"attribution":"© test"`) {
				t.Errorf("metadata %s", got)
			}
			continue
		}
		w, ok := want[id]
		if !ok {
			w = "missing"
		}
		if got != w {
			t.Fatalf("tile %s: %s, want %s", id, got, w)
		}
		n++
	}
	if n != len(set)+1 {
		t.Fatalf("%d tiles read, want %d", n, len(set)+1)
	}
}

func toTiles(ts []archivetest.Tile) []tile {
	out := make([]tile, len(ts))
	for i, t := range ts {
		out[i] = tile{t.Z, t.X, t.Y}
	}
	return out
}

func toSet(set map[archivetest.Tile][]byte) map[tile][]byte {
	out := make(map[tile][]byte, len(set))
	for t, b := range set {
		out[tile{t.Z, t.X, t.Y}] = b
	}
	return out
}
