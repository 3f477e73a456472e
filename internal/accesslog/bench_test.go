package accesslog_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"tilecache/internal/accesslog"
)

// benchLines is the size of the benchmarks' generated logs.
const benchLines = 200_000

var (
	benchOnce sync.Once
	benchLogs map[accesslog.Format][]byte
)

func benchLog(f accesslog.Format) []byte {
	benchOnce.Do(func() {
		benchLogs = map[accesslog.Format][]byte{}
		for _, f := range []accesslog.Format{accesslog.CloudFront, accesslog.S3, accesslog.Combined} {
			benchLogs[f] = genLog(f, benchLines)
		}
	})
	return benchLogs[f]
}

func noFlush(context.Context, []accesslog.PageHits) error { return nil }

// benchIngest ingests data over and over, reporting lines/s; MB/s
// counts plainSize bytes an iteration, the log's uncompressed size.
func benchIngest(b *testing.B, data []byte, plainSize int, f accesslog.Format, cfg accesslog.MapperConfig) {
	m := MustMapper(b, cfg)
	b.SetBytes(int64(plainSize))
	b.ReportAllocs()
	var st accesslog.Stats
	cpu := cpuTime()
	for b.Loop() {
		var err error
		if st, err = accesslog.Ingest(b.Context(), bytes.NewReader(data), f, m, noFlush, accesslog.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	if st.Lines != benchLines {
		b.Fatalf("read %d lines, want %d", st.Lines, benchLines)
	}
	reportLines(b, st.Lines*int64(b.N), cpuTime()-cpu)
	b.ReportMetric(float64(st.Kept)/float64(st.Lines), "kept/line")
}

// reportLines reports lines per second of wall time, and per second of
// the process's CPU time, which other processes on a shared machine
// disturb less.
func reportLines(b *testing.B, lines int64, cpu time.Duration) {
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	if cpu > 0 {
		b.ReportMetric(float64(lines)/cpu.Seconds(), "lines/cpu-s")
	}
}

// cpuTime returns the CPU time (user and system) the process has used,
// from /proc/self/stat (Linux, in 10 ms ticks), or 0.
func cpuTime() time.Duration {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// BenchmarkCloudFront parses and maps a generated 200,000-line CloudFront
// log (about 450 bytes a line); compare its lines/s with
// BenchmarkScanner's, which only splits the same bytes into lines.
func BenchmarkCloudFront(b *testing.B) {
	benchIngest(b, benchLog(accesslog.CloudFront), len(benchLog(accesslog.CloudFront)), accesslog.CloudFront, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"})
}

// BenchmarkCloudFrontGzip is BenchmarkCloudFront on the log as CloudFront
// delivers it, gzip-compressed.
func BenchmarkCloudFrontGzip(b *testing.B) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(benchLog(accesslog.CloudFront)); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
	benchIngest(b, buf.Bytes(), len(benchLog(accesslog.CloudFront)), accesslog.CloudFront, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"})
}

func BenchmarkS3(b *testing.B) {
	benchIngest(b, benchLog(accesslog.S3), len(benchLog(accesslog.S3)), accesslog.S3, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"})
}

func BenchmarkCombined(b *testing.B) {
	benchIngest(b, benchLog(accesslog.Combined), len(benchLog(accesslog.Combined)), accesslog.Combined, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"})
}

// BenchmarkScanner is the reference for BenchmarkCloudFront: a
// bufio.Scanner counting the lines of the same bytes.
func BenchmarkScanner(b *testing.B) {
	data := benchLog(accesslog.CloudFront)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var lines int
	cpu := cpuTime()
	for b.Loop() {
		sc := bufio.NewScanner(bytes.NewReader(data))
		lines = 0
		for sc.Scan() {
			lines++
		}
		if err := sc.Err(); err != nil {
			b.Fatal(err)
		}
	}
	reportLines(b, int64(lines)*int64(b.N), cpuTime()-cpu)
}

// streamSize is the size of the log streamed by the memory test.
const streamSize = 1 << 30

// memPeak samples the heap while a stream is ingested.
type memPeak struct {
	stop      chan struct{}
	done      chan struct{}
	heapInuse uint64
	heapSys   uint64
}

func startMemPeak() *memPeak {
	p := &memPeak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			p.heapInuse = max(p.heapInuse, ms.HeapInuse)
			p.heapSys = max(p.heapSys, ms.HeapSys)
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *memPeak) end() {
	close(p.stop)
	<-p.done
}

// vmHWM returns the process's peak resident set (Linux), or 0.
func vmHWM() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// streamResult is what ingesting a generated 1 GiB stream measured.
type streamResult struct {
	st                      accesslog.Stats
	elapsed                 time.Duration
	maxBatch                int
	heapInuse, heapSys, rss uint64
}

// ingestStream ingests a 1 GiB CloudFront log generated as it is read,
// a quarter of its tile reads spread over random pages so that the
// aggregator fills and flushes many batches.
func ingestStream(tb testing.TB) streamResult {
	tb.Helper()
	runtime.GC()
	m := MustMapper(tb, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"})
	var r streamResult
	flush := func(_ context.Context, batch []accesslog.PageHits) error {
		r.maxBatch = max(r.maxBatch, len(batch))
		return nil
	}
	peak := startMemPeak()
	start := time.Now()
	st, err := accesslog.Ingest(context.Background(), newStreamLog(accesslog.CloudFront, streamSize, 0.25), accesslog.CloudFront, m, flush, accesslog.Options{})
	r.elapsed = time.Since(start)
	peak.end()
	if err != nil {
		tb.Fatalf("Ingest: %v", err)
	}
	r.st, r.heapInuse, r.heapSys, r.rss = st, peak.heapInuse, peak.heapSys, vmHWM()
	return r
}

// TestIngestStreamMemory streams 1 GiB through Ingest and checks that
// memory stays bounded: peak heap and (when the test runs alone) peak
// RSS under 128 MiB. It takes seconds, so it runs only when
// ACCESSLOG_STREAM_TEST is set and -short is not.
func TestIngestStreamMemory(t *testing.T) {
	if testing.Short() || os.Getenv("ACCESSLOG_STREAM_TEST") == "" {
		t.Skip("streams 1 GiB: set ACCESSLOG_STREAM_TEST=1 (and no -short) to run")
	}
	const limit = 128 << 20
	r := ingestStream(t)
	t.Logf("%d lines (%d kept) in %v: %.0f lines/s; %d batches, largest %d pages; peak HeapInuse %.1f MiB, HeapSys %.1f MiB, VmHWM %.1f MiB",
		r.st.Lines, r.st.Kept, r.elapsed, float64(r.st.Lines)/r.elapsed.Seconds(), r.st.Batches, r.maxBatch,
		mib(r.heapInuse), mib(r.heapSys), mib(r.rss))
	if r.maxBatch > accesslog.DefaultMaxPages {
		t.Errorf("a batch of %d pages, over the cap of %d", r.maxBatch, accesslog.DefaultMaxPages)
	}
	if r.st.Batches < 2 {
		t.Errorf("%d batches: the stream should fill several", r.st.Batches)
	}
	if r.heapSys > limit {
		t.Errorf("peak HeapSys %.1f MiB, over %d MiB", mib(r.heapSys), limit>>20)
	}
	if r.rss > limit {
		t.Errorf("peak RSS %.1f MiB, over %d MiB", mib(r.rss), limit>>20)
	}
}

// BenchmarkIngest1GB streams a generated 1 GiB CloudFront log through
// Ingest once per iteration and reports the peak heap (sampled every
// 10 ms) and the process's peak RSS (VmHWM: meaningful when run alone,
// e.g. -bench Ingest1GB, as other benchmarks hold their logs in memory).
func BenchmarkIngest1GB(b *testing.B) {
	var r streamResult
	var lines int64
	for b.Loop() {
		r = ingestStream(b)
		lines += r.st.Lines
	}
	b.SetBytes(streamSize)
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(mib(r.heapInuse), "peak-heapinuse-MiB")
	b.ReportMetric(mib(r.heapSys), "peak-heapsys-MiB")
	b.ReportMetric(mib(r.rss), "peak-rss-MiB")
	b.ReportMetric(float64(r.st.Batches), "batches")
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
