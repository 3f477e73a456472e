package gwc

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// piecesDoc is a gridSet document of about size bytes whose description
// comes in pieces: a comment after every character splits its text into
// as many character data tokens.
func piecesDoc(size int) []byte {
	const head, tail = "<gridSet><name>g</name><description>", "</description></gridSet>"
	return []byte(head + strings.Repeat("a<!---->", (size-len(head)-len(tail))/8) + tail)
}

// TestTextInPiecesIsLinear: a document of 468 KiB whose text comes in
// 60,000 pieces is read with a few times its size in allocations (joined
// with +=, every piece copied the whole text so far: some 7 GB allocated
// and 1.5 s).
func TestTextInPiecesIsLinear(t *testing.T) {
	doc := piecesDoc(468 << 10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	root, err := parseTree(doc)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if d := root.kids[1]; len(d.text) != (len(doc)-60)/8 {
		t.Fatalf("description of %d characters, want %d", len(d.text), (len(doc)-60)/8)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("reading %d bytes allocated %d MiB (in %v), want at most 32 MiB", len(doc), alloc>>20, took)
	}
	t.Logf("%d KiB in %v", len(doc)>>10, took)
}

// BenchmarkTextInPieces reads documents of growing size whose text comes
// in pieces: the time per byte stays flat.
func BenchmarkTextInPieces(b *testing.B) {
	for _, kib := range []int{117, 468} {
		doc := piecesDoc(kib << 10)
		b.Run(strconv.Itoa(kib)+"KiB", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := parseTree(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
