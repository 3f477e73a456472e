package archive_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"tilecache/internal/archive"
	"tilecache/internal/archive/gpkg"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/archive/pmtiles"
)

// benchTiles is how many tiles BenchmarkWrite writes: levels 0..9 whole
// and the first rows of level 10, row by row as a seed walks them.
// TILECACHE_BENCH_TILES changes it (to show that the PMTiles writer's
// memory does not grow with the tile count).
func benchTiles(b *testing.B) int {
	if s := os.Getenv("TILECACHE_BENCH_TILES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("TILECACHE_BENCH_TILES=%q is not a positive count", s)
		}
		return n
	}
	return 1_000_000
}

// BenchmarkWrite writes a million small tiles of 100 distinct contents to
// each format, and reports tiles/s, the peak heap (sampled every 10,000
// tiles) and the archive's size. In "blocks" each content covers blocks of
// 8x8 neighbours (as blank sea or land does: PMTiles makes one run of each
// block); in "scattered" neighbours differ (no runs, a million entries).
//
//	go test -run '^$' -bench Write/mbtiles/blocks -benchtime 1x ./internal/archive/
func BenchmarkWrite(b *testing.B) {
	blobs := make([][]byte, 100)
	for i := range blobs {
		blobs[i] = fmt.Appendf(nil, "%0120d", i) // about the size of a blank PNG
	}
	for _, f := range []struct {
		name string
		open func(ctx context.Context, path string) (archive.Writer, error)
	}{
		{"pmtiles", func(ctx context.Context, path string) (archive.Writer, error) {
			out, err := os.Create(path)
			if err != nil {
				return nil, err
			}
			w, err := pmtiles.Create(filepath.Join(filepath.Dir(path), "staging"), out, pmtiles.Options{})
			return closer{w, out}, err
		}},
		{"mbtiles", func(ctx context.Context, path string) (archive.Writer, error) { return mbtiles.Create(ctx, path) }},
		{"gpkg", func(ctx context.Context, path string) (archive.Writer, error) {
			return gpkg.Create(ctx, path, gpkg.Options{Format: "png", TileMatrixSet: gpkg.WebMercatorQuad(14)})
		}},
	} {
		for _, pattern := range []string{"blocks", "scattered"} {
			pick := func(z int, x, y int64) []byte { return blobs[((x/8)*31+(y/8)*17)%100] }
			if pattern == "scattered" {
				pick = func(z int, x, y int64) []byte { return blobs[(x*31+y*17+int64(z))%100] }
			}
			b.Run(f.name+"/"+pattern, func(b *testing.B) {
				ctx := context.Background()
				total := benchTiles(b)
				for b.Loop() {
					path := filepath.Join(b.TempDir(), "a."+f.name)
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					base, peak := ms.HeapAlloc, ms.HeapAlloc
					start := time.Now()
					w, err := f.open(ctx, path)
					if err != nil {
						b.Fatal(err)
					}
					n := 0
				levels:
					for z := 0; ; z++ {
						side := int64(1) << z
						for y := range side {
							for x := range side {
								if err := w.Put(ctx, z, x, y, pick(z, x, y)); err != nil {
									b.Fatal(err)
								}
								if n++; n%10000 == 0 {
									runtime.ReadMemStats(&ms)
									peak = max(peak, ms.HeapAlloc)
								}
								if n == total {
									break levels
								}
							}
						}
					}
					if err := w.Close(ctx, archive.Metadata{Name: "bench", Format: "png", MaxZoom: 10}); err != nil {
						b.Fatal(err)
					}
					elapsed := time.Since(start)
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc)
					st, err := os.Stat(path)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(n)/elapsed.Seconds(), "tiles/s")
					b.ReportMetric(float64(peak-base)/(1<<20), "peak-heap-MiB")
					b.ReportMetric(float64(st.Size())/(1<<20), "archive-MiB")
					b.ReportMetric(peakRSS()/(1<<20), "process-peak-RSS-MiB")
				}
			})
		}
	}
}

// closer closes the PMTiles output file after the writer.
type closer struct {
	*pmtiles.Writer
	f io.Closer
}

func (c closer) Close(ctx context.Context, md archive.Metadata) error {
	err := c.Writer.Close(ctx, md)
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// peakRSS returns the process's peak resident set (Linux's VmHWM), which
// counts SQLite's page cache, kept outside the Go heap; it covers the
// whole process, so run one sub-benchmark per process to read it.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) * 1024
		}
	}
	return 0
}
