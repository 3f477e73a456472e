package pmtiles

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

// BenchmarkWriter puts n tiles of levels 0.. in tile id order and closes
// the archive: every tile distinct, or one in four (the rest of eight
// shared contents).
func BenchmarkWriter(b *testing.B) {
	for _, n := range []int{20_000, 100_000, 400_000} {
		for _, distinct := range []int{1, 4} {
			b.Run(fmt.Sprintf("tiles=%d/distinct=1in%d", n, distinct), func(b *testing.B) {
				ctx := context.Background()
				shared := make([][]byte, 8)
				for i := range shared {
					shared[i] = fmt.Appendf(nil, "%0100d", i)
				}
				data := make([]byte, 0, 128)
				b.ReportAllocs()
				runtime.GC()
				peak, stop := peakHeap()
				for b.Loop() {
					w, err := Create(b.TempDir(), io.Discard, Options{})
					if err != nil {
						b.Fatal(err)
					}
					for id := range uint64(n) {
						z, x, y := TileZXY(id)
						d := shared[id%8]
						if id%uint64(distinct) == 0 {
							data = fmt.Appendf(data[:0], "%0100d", id)
							d = data
						}
						if err := w.Put(ctx, z, int64(x), int64(y), d); err != nil {
							b.Fatal(err)
						}
					}
					if err := w.Close(ctx, testMD); err != nil {
						b.Fatal(err)
					}
				}
				stop()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/tile")
				b.ReportMetric(float64(*peak)/(1<<20), "peak-heap-MiB")
			})
		}
	}
}

// peakHeap samples the bytes of the heap's objects (live and not yet
// collected) every millisecond until stop.
func peakHeap() (peak *uint64, stop func()) {
	peak = new(uint64)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			*peak = max(*peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return peak, func() { close(done); wg.Wait() }
}
