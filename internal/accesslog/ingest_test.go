package accesslog_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"tilecache/internal/accesslog"
)

func states(z int, x, y int64) accesslog.Page {
	return accesslog.Page{Layer: "topp:states", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default", Z: z, X: x, Y: y}
}

var basemap = accesslog.Page{Layer: "osm:basemap", GridSetID: "EPSG:900913", FormatID: "jpeg", ParametersID: "7e9b3c1f2a4d5e6f708192a3b4c5d6e7f8091a2b", Z: 12, X: 1000 >> 6, Y: 2000 >> 6}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestIngestSamples ingests the sample logs of testdata, written after
// AWS's documented examples and nginx's and Apache's, and checks every
// count and every page.
func TestIngestSamples(t *testing.T) {
	tests := []struct {
		file   string
		format accesslog.Format
		cfg    accesslog.MapperConfig
		want   accesslog.Stats
		pages  []accesslog.PageHits
	}{
		{
			file:   "cloudfront.log",
			format: accesslog.CloudFront,
			cfg:    accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"},
			want: accesslog.Stats{Lines: 13, Headers: 4, Kept: 5, Malformed: 2, NotRead: 1, NotSuccessful: 2, NotTile: 2, UnknownLayer: 1,
				MalformedBy: map[string]int64{"missing fields": 1, "bad time": 1}, Batches: 1, Pages: 3},
			pages: []accesslog.PageHits{
				{Page: basemap, Hits: 1, Last: at("2019-12-04T21:04:10Z")},
				{Page: states(3, 0, 0), Hits: 3, Last: at("2019-12-05T00:00:01Z")},
				{Page: states(3, 1, 0), Hits: 1, Last: at("2019-12-04T21:03:00Z")},
			},
		},
		{
			file:   "cloudfront.log.gz",
			format: accesslog.CloudFront,
			cfg:    accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"},
			want: accesslog.Stats{Lines: 13, Headers: 4, Kept: 5, Malformed: 2, NotRead: 1, NotSuccessful: 2, NotTile: 2, UnknownLayer: 1,
				MalformedBy: map[string]int64{"missing fields": 1, "bad time": 1}, Batches: 1, Pages: 3},
			pages: []accesslog.PageHits{
				{Page: basemap, Hits: 1, Last: at("2019-12-04T21:04:10Z")},
				{Page: states(3, 0, 0), Hits: 3, Last: at("2019-12-05T00:00:01Z")},
				{Page: states(3, 1, 0), Hits: 1, Last: at("2019-12-04T21:03:00Z")},
			},
		},
		{
			file:   "s3.log",
			format: accesslog.S3,
			cfg:    accesslog.MapperConfig{PageShift: 6, Prefix: "tiles/"},
			want: accesslog.Stats{Lines: 15, Kept: 7, Malformed: 1, NotRead: 4, NotSuccessful: 1, NotTile: 1, UnknownLayer: 1,
				MalformedBy: map[string]int64{"missing fields": 1}, Batches: 1, Pages: 3},
			pages: []accesslog.PageHits{
				{Page: basemap, Hits: 1, Last: at("2019-02-06T00:01:00Z")},
				{Page: states(3, 0, 0), Hits: 5, Last: at("2019-02-06T00:02:03Z")},
				{Page: states(3, 1, 0), Hits: 1, Last: at("2019-02-06T00:02:01Z")},
			},
		},
		{
			// A proxy serves the bucket's "tiles/" under "/wmts/".
			file:   "combined.log",
			format: accesslog.Combined,
			cfg:    accesslog.MapperConfig{PageShift: 6, Prefix: "tiles", PathPrefix: "/wmts", OriginPath: "tiles"},
			want: accesslog.Stats{Lines: 15, Kept: 6, Malformed: 2, NotRead: 3, NotSuccessful: 1, NotTile: 2, UnknownLayer: 1,
				MalformedBy: map[string]int64{"missing fields": 1, "bad time": 1}, Batches: 1, Pages: 3},
			pages: []accesslog.PageHits{
				{Page: basemap, Hits: 1, Last: at("2000-10-10T20:56:07Z")},
				{Page: states(3, 0, 0), Hits: 4, Last: at("2000-10-10T20:58:00Z")},
				{Page: states(3, 1, 0), Hits: 1, Last: at("2000-10-10T20:56:00Z")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var c collector
			st, err := accesslog.Ingest(t.Context(), f, tt.format, MustMapper(t, tt.cfg), c.flush, accesslog.Options{})
			if err != nil {
				t.Fatalf("Ingest: %v", err)
			}
			checkAccounted(t, st)
			if !statsEqual(st, tt.want) {
				t.Errorf("stats\n got %+v\nwant %+v", st, tt.want)
			}
			got := c.all()
			if len(got) != len(tt.pages) {
				t.Fatalf("got %d pages %+v, want %d", len(got), got, len(tt.pages))
			}
			for i := range got {
				if got[i].Page != tt.pages[i].Page || got[i].Hits != tt.pages[i].Hits || !got[i].Last.Equal(tt.pages[i].Last) {
					t.Errorf("page %d: got %+v, want %+v", i, got[i], tt.pages[i])
				}
			}
		})
	}
}

func statsEqual(a, b accesslog.Stats) bool {
	return reflect.DeepEqual(a, b)
}

// TestIngestCap checks that the aggregator flushes a batch each time it
// holds its maximum of pages, and that no read is lost or counted twice.
func TestIngestCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("#Version: 1.0\n#Fields: date time cs-method cs-uri-stem sc-status\n")
	// 7 pages of level 10; page i read i+1 times, interleaved.
	reads := 0
	for round := range 7 {
		for page := round; page < 7; page++ {
			b.WriteString("2024-03-01\t10:00:0" + string(rune('0'+round)) + "\tGET\t/topp:states/EPSG:4326/png/default/10/" +
				itoa(int64(page)*64+int64(round)) + "/5.png\t200\n")
			reads++
		}
	}
	var c collector
	st, err := accesslog.Ingest(t.Context(), strings.NewReader(b.String()), accesslog.CloudFront, MustMapper(t, accesslog.MapperConfig{PageShift: 6}), c.flush, accesslog.Options{MaxPages: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkAccounted(t, st)
	if st.Kept != int64(reads) {
		t.Errorf("kept %d, want %d", st.Kept, reads)
	}
	var hits int64
	for i, batch := range c.batches {
		if len(batch) > 3 {
			t.Errorf("batch %d holds %d pages, more than the cap of 3", i, len(batch))
		}
		for _, h := range batch {
			hits += h.Hits
		}
	}
	if hits != int64(reads) {
		t.Errorf("batches hold %d hits, want %d", hits, reads)
	}
	if st.Batches != int64(len(c.batches)) || st.Pages != int64(len(c.all())) {
		t.Errorf("stats say %d batches of %d pages; flushed %d of %d", st.Batches, st.Pages, len(c.batches), len(c.all()))
	}
	// The first round meets all 7 pages: 3, 3, then page 6 with what
	// follows, which reads the first pages again.
	if len(c.batches) < 3 || len(c.batches[0]) != 3 || len(c.batches[1]) != 3 {
		t.Errorf("batches of %v pages, want 3, 3, …", batchSizes(c.batches))
	}
}

func batchSizes(bs [][]accesslog.PageHits) []int {
	var n []int
	for _, b := range bs {
		n = append(n, len(b))
	}
	return n
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestIngestDeterministic checks that one log gives the same batches
// each time, which retries of a log rely on.
func TestIngestDeterministic(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "s3.log"))
	if err != nil {
		t.Fatal(err)
	}
	var runs [2]collector
	for i := range runs {
		if _, err := accesslog.Ingest(t.Context(), bytes.NewReader(data), accesslog.S3, MustMapper(t, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"}), runs[i].flush, accesslog.Options{MaxPages: 2}); err != nil {
			t.Fatal(err)
		}
	}
	a, b := runs[0].all(), runs[1].all()
	if len(a) != len(b) {
		t.Fatalf("runs flushed %d and %d pages", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("page %d: %+v, then %+v", i, a[i], b[i])
		}
	}
}

// TestIngestCorruptGzip checks that a damaged or cut compressed log is
// an error, not a short read.
func TestIngestCorruptGzip(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "cloudfront.log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-6] ^= 0x01 // in the CRC-32 of the trailer
	tests := map[string][]byte{
		"cut":           good[:len(good)-20],
		"flipped byte":  flipped,
		"bad checksum":  badCRC,
		"bad header":    append([]byte{0x1f, 0x8b, 0x09}, good[3:]...),
		"garbage after": append(bytes.Clone(good), []byte("not gzip\n")...),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			var c collector
			_, err := accesslog.Ingest(t.Context(), bytes.NewReader(data), accesslog.CloudFront, MustMapper(t, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"}), c.flush, accesslog.Options{})
			if err == nil {
				t.Fatalf("Ingest of a corrupt gzip stream succeeded, flushing %d pages", len(c.all()))
			}
			if len(c.batches) != 0 {
				t.Errorf("flushed %d batches before failing; the partial batch should be dropped", len(c.batches))
			}
		})
	}
}

// TestIngestGzipMembers reads two gzip members one after the other, as
// concatenated log files are.
func TestIngestGzipMembers(t *testing.T) {
	plain, err := os.ReadFile(filepath.Join("testdata", "cloudfront.log"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for range 2 {
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(plain); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var c collector
	st, err := accesslog.Ingest(t.Context(), &buf, accesslog.CloudFront, MustMapper(t, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"}), c.flush, accesslog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != 26 || st.Kept != 10 {
		t.Errorf("got %d lines, %d kept; want 26, 10", st.Lines, st.Kept)
	}
}

// failingReader returns its data, then an error.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestIngestErrors(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "combined.log"))
	if err != nil {
		t.Fatal(err)
	}
	m := MustMapper(t, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles", PathPrefix: "/wmts", OriginPath: "tiles"})
	t.Run("read error", func(t *testing.T) {
		errDisk := errors.New("disk on fire")
		var c collector
		_, err := accesslog.Ingest(t.Context(), &failingReader{data: data, err: errDisk}, accesslog.Combined, m, c.flush, accesslog.Options{})
		if !errors.Is(err, errDisk) {
			t.Errorf("got %v, want %v wrapped", err, errDisk)
		}
	})
	t.Run("flush error", func(t *testing.T) {
		errStore := errors.New("store down")
		flush := func(context.Context, []accesslog.PageHits) error { return errStore }
		_, err := accesslog.Ingest(t.Context(), bytes.NewReader(data), accesslog.Combined, m, flush, accesslog.Options{MaxPages: 1})
		if !errors.Is(err, errStore) {
			t.Errorf("got %v, want %v wrapped", err, errStore)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var c collector
		_, err := accesslog.Ingest(ctx, bytes.NewReader(data), accesslog.Combined, m, c.flush, accesslog.Options{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled wrapped", err)
		}
	})
	t.Run("unknown format", func(t *testing.T) {
		var c collector
		if _, err := accesslog.Ingest(t.Context(), bytes.NewReader(data), accesslog.Format(99), m, c.flush, accesslog.Options{}); err == nil {
			t.Error("Ingest of format 99 succeeded")
		}
	})
}

func TestParseFormat(t *testing.T) {
	for _, f := range []accesslog.Format{accesslog.CloudFront, accesslog.S3, accesslog.Combined} {
		got, err := accesslog.ParseFormat(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", f.String(), got, err, f)
		}
	}
	if _, err := accesslog.ParseFormat("w3c"); err == nil {
		t.Error(`ParseFormat("w3c") succeeded`)
	}
}

// TestIngestCloudFrontUnderOriginPath: a distribution whose origin path is
// the key prefix logs the viewers' paths without it; the sample CloudFront
// log written that way keeps the same reads with OriginPath "/tiles", and
// none without it (every line "not a tile").
func TestIngestCloudFrontUnderOriginPath(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "cloudfront.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The paths as a distribution with origin path /tiles logs them.
	viewer := strings.ReplaceAll(string(data), "\t/tiles/", "\t/")
	if viewer == string(data) {
		t.Fatal("the sample has no path under /tiles/")
	}
	ingest := func(cfg accesslog.MapperConfig, log string) (accesslog.Stats, []accesslog.PageHits) {
		var c collector
		st, err := accesslog.Ingest(t.Context(), strings.NewReader(log), accesslog.CloudFront, MustMapper(t, cfg), c.flush, accesslog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		checkAccounted(t, st)
		return st, c.all()
	}
	wantSt, wantPages := ingest(accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"}, string(data))
	if wantSt.Kept == 0 {
		t.Fatal("the sample keeps no read")
	}
	st, pages := ingest(accesslog.MapperConfig{PageShift: 6, Prefix: "tiles", OriginPath: "/tiles"}, viewer)
	if st.Kept != wantSt.Kept || !reflect.DeepEqual(pages, wantPages) {
		t.Errorf("under origin path /tiles: %d reads kept, pages %+v; want %d, %+v", st.Kept, pages, wantSt.Kept, wantPages)
	}
	st, _ = ingest(accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"}, viewer)
	if st.Kept != 0 || st.NotTile < wantSt.Kept {
		t.Errorf("without the origin path: %d kept, %d not tiles; want none kept", st.Kept, st.NotTile)
	}
}

// TestBatchID pins the names of batches: the quota's read marks hold them,
// so a change would count the logs read before the change again.
func TestBatchID(t *testing.T) {
	for _, tt := range []struct {
		log  string
		n    int
		want string
	}{
		{"logs/cdn/E1.2026-11-25-12.abc.gz@\"etag\"", 1, "logs/cdn/E1.2026-11-25-12.abc.gz@\"etag\"#1"},
		{"file:0a1b", 12, "file:0a1b#12"},
	} {
		if got := accesslog.BatchID(tt.log, tt.n); got != tt.want {
			t.Errorf("BatchID(%q, %d) = %q, want %q", tt.log, tt.n, got, tt.want)
		}
	}
}
