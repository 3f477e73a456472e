package app_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
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
// compressed body is small, its decoded image is w×h×4 bytes.
func bombPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	var idat bytes.Buffer
	z, _ := zlib.NewWriterLevel(&idat, zlib.BestCompression)
	row := make([]byte, 1+4*w)
	for range h {
		if _, err := z.Write(row); err != nil {
			t.Fatal(err)
		}
	}
	z.Close()
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, 8, 6, 0, 0, 0) // 8-bit RGBA
	b := []byte("\x89PNG\r\n\x1a\n")
	b = pngChunk(b, "IHDR", ihdr)
	b = pngChunk(b, "IDAT", idat.Bytes())
	return pngChunk(b, "IEND", nil)
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
	if os.Getenv("TILECACHE_TEST_BACKEND") == "aws" {
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
	time.Sleep(time.Second)
	idle := vmHWM(t, p.Pid())
	a := p.App()
	rows := seedReq(t, a, "hostile:wms", `{"seedRequest":{"zoomStart":0,"zoomStop":5,"threadCount":8,"tileFailureRetryCount":0,"totalFailuresBeforeAborting":100000}}`)
	last := map[int64]int64{} // task id → last status seen
	waitFor(t, 120*time.Second, "the seed to finish", func() bool {
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
