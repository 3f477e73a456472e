package app_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
)

// pngChunk appends a PNG chunk with its CRC.
func pngChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	start := len(b)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}

// bombPNG is a complete, valid RGBA PNG of w×h transparent pixels: its
// compressed body is small, its decoded image is w×h×4 bytes. Its IDAT is
// written by zeroZlib, not by compress/zlib: deflating the gigabyte of
// zeros behind 16384² pixels takes a minute under the race detector.
func bombPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8-bit RGBA
	b := []byte("\x89PNG\r\n\x1a\n")
	b = pngChunk(b, "IHDR", ihdr)
	// Every row is its filter byte (0, none) and 4w zero bytes.
	b = pngChunk(b, "IDAT", zeroZlib(int64(h)*int64(1+4*w)))
	return pngChunk(b, "IEND", nil)
}

// zeroZlib returns a zlib stream of n zero bytes (n ≥ 1), as small as the
// best compression level makes it: one dynamic Huffman block holding a
// literal 0 and then copies of 258 bytes at distance 1, each two bits
// (one for the length code 285, one for the distance code 0).
func zeroZlib(n int64) []byte {
	var bw bitWriter
	bw.buf = []byte{0x78, 0xda} // zlib: deflate, 32 KiB window, best compression
	bw.bits(1, 1)               // BFINAL
	bw.bits(2, 2)               // BTYPE: dynamic Huffman codes
	bw.bits(29, 5)              // HLIT: 286 literal/length codes
	bw.bits(0, 5)               // HDIST: 1 distance code
	bw.bits(14, 4)              // HCLEN: 18 code length codes
	// Code length code lengths, in the order 16, 17, 18, 0, 8, 7, 9, 6, 10,
	// 5, 11, 4, 12, 3, 13, 2, 14, 1: 18 (a run of zeros) gets 1 bit, 1 and
	// 2 get 2 bits (codes 0, 10, 11).
	for _, l := range []uint64{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2} {
		bw.bits(l, 3)
	}
	zeros := func(k uint64) { bw.code(0b0, 1); bw.bits(k-11, 7) } // code 18: k zeros, 11..138
	one, two := func() { bw.code(0b10, 2) }, func() { bw.code(0b11, 2) }
	// Literal/length code lengths: 0 → 2, 256 (end of block) → 2, 285
	// (length 258) → 1, all others 0; then the one distance code: 1.
	two()
	zeros(138)
	zeros(117)
	two()
	zeros(28)
	one()
	one()
	// Canonical codes: 285 → 0, literal 0 → 10, end of block → 11;
	// distance 0 (distance 1) → 0.
	bw.code(0b10, 2)
	rest := n - 1
	for range rest / 258 {
		bw.code(0b00, 2)
	}
	for range rest % 258 {
		bw.code(0b10, 2)
	}
	bw.code(0b11, 2)
	bw.flush()
	// Adler-32 of n zeros: a stays 1, b adds 1 per byte.
	return binary.BigEndian.AppendUint32(bw.buf, uint32(n%65521)<<16|1)
}

// bitWriter packs deflate's bit stream: fields least significant bit
// first, Huffman codes most significant bit first.
type bitWriter struct {
	buf   []byte
	acc   uint64
	nbits uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

func (w *bitWriter) code(c uint64, n uint) {
	var r uint64
	for i := range n {
		r |= (c >> i & 1) << (n - 1 - i)
	}
	w.bits(r, n)
}

func (w *bitWriter) flush() {
	if w.nbits > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nbits = 0, 0
	}
}

// TestBombPNG checks bombPNG's hand-made deflate stream with the standard
// library's decoder on small images (the same code makes the big ones).
func TestBombPNG(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "how a source treats a hostile or secret-bearing upstream")
	for _, size := range [][2]int{{1, 1}, {64, 64}, {100, 37}, {129, 2}, {1500, 1500}} {
		img, err := png.Decode(bytes.NewReader(bombPNG(t, size[0], size[1])))
		if err != nil {
			t.Fatalf("%d×%d: %v", size[0], size[1], err)
		}
		nrgba, ok := img.(*image.NRGBA)
		if !ok || img.Bounds().Dx() != size[0] || img.Bounds().Dy() != size[1] {
			t.Fatalf("%d×%d: got a %T of %v", size[0], size[1], img, img.Bounds())
		}
		if i := slices.IndexFunc(nrgba.Pix, func(b byte) bool { return b != 0 }); i >= 0 {
			t.Fatalf("%d×%d: byte %d of the pixels is not 0", size[0], size[1], i)
		}
	}
	if n := len(bombPNG(t, 16384, 16384)); n > 1100<<10 {
		t.Errorf("the 16384² bomb is %d bytes, want about 1 MiB (what zlib's best compression makes)", n)
	}
}

// vmHWM reads a process's peak resident set size, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestPeakRSSAgainstOversizedAnswers: 8 lanes seeding from a WMS that
// answers decompression bombs (valid PNGs of 8192² and 16384² pixels, a few
// hundred KB each, and images of a wrong but modest size) and endless
// bodies keep `tilecache serve` (no race detector) within 256 MiB of its
// idle peak RSS: sizes are checked before decoding, bodies capped, decodes
// budgeted.
func TestPeakRSSAgainstOversizedAnswers(t *testing.T) {
	t.Parallel()
	if apptest.AWSPass() {
		t.Skip("measured once, in the embedded pass")
	}
	answers := [][]byte{bombPNG(t, 8192, 8192), bombPNG(t, 16384, 16384), bombPNG(t, 1500, 1500)}
	var calls atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		w.Header().Set("Content-Type", "image/png")
		if n%4 == 3 { // an endless body: 256 MiB unless the reader stops first
			chunk := make([]byte, 1<<20)
			for range 256 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		w.Write(answers[n%4%3])
	}))
	defer up.Close()
	layers := apptest.Layers + `
  - name: hostile:wms
    gridSubsets:
      - gridSet: EPSG:4326
    formats: [image/png]
    source: {type: wms, url: "` + up.URL + `/wms", layers: x, retries: -1, maxConcurrent: 8}
`
	p := apptest.StartLocalProcess(t, apptest.PlainBinary(t), t.TempDir(), layers, map[string]string{"TILECACHE_SEED_THREADS": "8"})
	// Idle: it answers (StartLocalProcess) and its start-up's work, the
	// documents of the layers' tile sets, is written.
	testenv.Eventually(t, 10*time.Second, "the start-up's documents", func() bool { return len(logEvents(p, "documents of the tile store written")) > 0 })
	idle := vmHWM(t, p.Pid())
	a := p.App()
	rows := seedReq(t, a, "hostile:wms", `{"seedRequest":{"zoomStart":0,"zoomStop":5,"threadCount":8,"tileFailureRetryCount":0,"totalFailuresBeforeAborting":100000}}`)
	last := map[int64]int64{} // task id → last status seen
	testenv.Eventually(t, 120*time.Second, "the seed to finish", func() bool {
		active := false
		for _, r := range listRows(t, a, "/rest/seed.json") {
			last[r[3]] = r[4]
			active = active || r[4] == 0 || r[4] == 1
		}
		return !active
	})
	for _, id := range ids(rows) {
		if last[id] != int64(task.Done) {
			t.Errorf("task %d: last seen with status %d, want DONE (every metatile a tile failure)", id, last[id])
		}
	}
	peak := vmHWM(t, p.Pid())
	t.Logf("%d upstream answers; peak RSS idle %d MiB, after %d MiB (+%d MiB)", calls.Load(), idle>>20, peak>>20, (peak-idle)>>20)
	if calls.Load() < 100 {
		t.Errorf("only %d upstream answers, want the 172 metatiles' worth", calls.Load())
	}
	if peak-idle > 256<<20 {
		t.Errorf("peak RSS grew by %d MiB against oversized answers, want at most 256", (peak-idle)>>20)
	}
}
