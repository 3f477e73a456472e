package accesslog_test

import (
	"bytes"
	"cmp"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"tilecache/internal/accesslog"
)

// The fuzz targets feed arbitrary logs to Ingest and check that it never
// panics, that every line has exactly one outcome, that batches respect
// their cap, and (for plain-text input) that the pages and counts equal
// those of a slow reference written with the standard library's own
// parsers (strings.Split, regexp, time.Parse, url.PathUnescape,
// strconv) straight from the formats' descriptions.

// fuzzMaxPages is small so that the fuzzer reaches flushes.
const fuzzMaxPages = 3

func FuzzCloudFront(f *testing.F) {
	addSeeds(f, "cloudfront.log", "cloudfront.log.gz")
	f.Add([]byte("#Fields: time date cs-uri-stem sc-status cs-method\n21:02:31\t2019-12-04\t/tiles/topp:states/EPSG:4326/png/default/1/2/3.png\t200\tGET\n"))
	f.Add([]byte("#Fields: date time cs-method cs-uri-stem sc-status date\n2019-12-04\t21:02:31\tHEAD\t/tiles/L42/g/f/p/0/0/0.x\t304\tjunk\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzIngest(t, data, accesslog.CloudFront, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"}, refCloudFront)
	})
}

func FuzzS3(f *testing.F) {
	addSeeds(f, "s3.log")
	f.Add([]byte(`o b [06/Feb/2019:00:00:38 +0000] ip r id REST.GET.OBJECT tiles/L42/g/f/p/0/0/0.x "GET /x?q=" 200 - 1 1 1 1 HTTP/1.1" 404 - 1 1 1 1 "-" "-"` + "\n"))
	f.Add([]byte(`o b [06/Feb/2019:00:00:38 +0000] ip r id REST.HEAD.OBJECT tiles/L42/g/f/p/0/0/0.x "HEAD /x HTTP/1.1" 200` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzIngest(t, data, accesslog.S3, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles"}, refS3)
	})
}

func FuzzCombined(f *testing.F) {
	addSeeds(f, "combined.log")
	f.Add([]byte(`[::1] - - [01/Mar/2024:00:00:00 +0000] "GET /wmts/L42/g/f/p/0/0/0.x HTTP/1.1" 200 5` + "\n"))
	f.Add([]byte(`::1 - - [01/Mar/2024:00:00:00 +0000] "GET /wmts/L42/g/f/p/0/0/0.x\" HTTP/1.1" 200 5` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzIngest(t, data, accesslog.Combined, accesslog.MapperConfig{PageShift: 6, Prefix: "tiles", PathPrefix: "/wmts", OriginPath: "tiles"}, refCombined)
	})
}

func addSeeds(f *testing.F, files ...string) {
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// refRecord is what a reference parser makes of one record line.
type refRecord struct {
	malformed bool
	method    string
	key       string
	path      bool
	status    int
	time      time.Time
}

// refParser parses one line; header is true for "#" lines, which it may
// use.
type refParser func(st *refState, line string) refRecord

type refState struct {
	fields map[string]int // CloudFront columns; nil: no usable header
}

type hits struct {
	n    int64
	last time.Time
}

func fuzzIngest(t *testing.T, data []byte, format accesslog.Format, cfg accesslog.MapperConfig, ref refParser) {
	m := MustMapper(t, cfg)
	got := map[accesslog.Page]hits{}
	var sizes []int
	flush := func(_ context.Context, batch []accesslog.PageHits) error {
		sizes = append(sizes, len(batch))
		if !slices.IsSortedFunc(batch, func(a, b accesslog.PageHits) int { return comparePages(a.Page, b.Page) }) {
			t.Errorf("batch not sorted by page: %+v", batch)
		}
		for i, h := range batch {
			if h.Hits < 1 || h.Page.Z < 0 || h.Page.X < 0 || h.Page.Y < 0 {
				t.Errorf("batch holds %+v", h)
			}
			if i > 0 && batch[i-1].Page == h.Page {
				t.Errorf("page %+v twice in one batch", h.Page)
			}
			g := got[h.Page]
			g.n += h.Hits
			if h.Last.After(g.last) {
				g.last = h.Last
			}
			got[h.Page] = g
		}
		return nil
	}
	st, err := accesslog.Ingest(t.Context(), bytes.NewReader(data), format, m, flush, accesslog.Options{MaxPages: fuzzMaxPages})
	gzipped := len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b
	if err != nil {
		if !gzipped {
			t.Fatalf("Ingest of plain text failed: %v", err)
		}
		return
	}
	checkAccounted(t, st)
	if st.Kept > st.Lines {
		t.Errorf("kept %d of %d lines", st.Kept, st.Lines)
	}
	var total int64
	for _, h := range got {
		total += h.n
	}
	if total != st.Kept {
		t.Errorf("batches hold %d hits, Kept is %d", total, st.Kept)
	}
	for _, n := range sizes {
		if n > fuzzMaxPages {
			t.Errorf("a batch of %d pages, over the cap of %d", n, fuzzMaxPages)
		}
	}
	if st.Batches != int64(len(sizes)) {
		t.Errorf("Stats.Batches = %d, flushed %d", st.Batches, len(sizes))
	}
	if gzipped || len(data) > 200<<10 {
		return // the reference reads plain text, shorter than a buffer
	}

	// The reference.
	want := map[accesslog.Page]hits{}
	var ws accesslog.Stats
	rs := refState{fields: defaultRefFields()}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			ws.Headers++
			if rest, ok := strings.CutPrefix(line, "#Fields:"); ok {
				rs.fields = refFieldsHeader(rest)
			}
			continue
		}
		ws.Lines++
		rec := ref(&rs, line)
		if rec.malformed {
			ws.Malformed++
			continue
		}
		page, outcome := refMap(cfg, rec)
		switch outcome {
		case accesslog.Kept:
			ws.Kept++
			h := want[page]
			h.n++
			if rec.time.After(h.last) {
				h.last = rec.time
			}
			want[page] = h
		case accesslog.NotRead:
			ws.NotRead++
		case accesslog.NotSuccessful:
			ws.NotSuccessful++
		case accesslog.NotTile:
			ws.NotTile++
		case accesslog.UnknownLayer:
			ws.UnknownLayer++
		}
	}
	st.MalformedBy, st.Batches, st.Pages = nil, 0, 0
	if !reflect.DeepEqual(st, ws) {
		t.Errorf("stats\n got %+v\nwant %+v", st, ws)
	}
	if len(got) != len(want) {
		t.Errorf("got %d pages, reference %d", len(got), len(want))
	}
	for p, w := range want {
		if g := got[p]; g.n != w.n || !g.last.Equal(w.last) {
			t.Errorf("page %+v: got %d hits, last %v; reference %d, %v", p, g.n, g.last, w.n, w.last)
		}
	}
}

// comparePages orders pages by their fields, in order.
func comparePages(a, b accesslog.Page) int {
	return cmp.Or(
		strings.Compare(a.Layer, b.Layer),
		strings.Compare(a.GridSetID, b.GridSetID),
		strings.Compare(a.FormatID, b.FormatID),
		strings.Compare(a.ParametersID, b.ParametersID),
		cmp.Compare(a.Z, b.Z),
		cmp.Compare(a.X, b.X),
		cmp.Compare(a.Y, b.Y),
	)
}

// refMap is the Mapper's rule, with the standard library.
func refMap(cfg accesslog.MapperConfig, rec refRecord) (accesslog.Page, accesslog.Outcome) {
	if rec.method != "GET" && rec.method != "HEAD" {
		return accesslog.Page{}, accesslog.NotRead
	}
	if (rec.status < 200 || rec.status > 299) && rec.status != 304 {
		return accesslog.Page{}, accesslog.NotSuccessful
	}
	key, err := url.PathUnescape(rec.key)
	if err != nil || key == "" {
		return accesslog.Page{}, accesslog.NotTile
	}
	if rec.path {
		pp := "/"
		if p := strings.Trim(cfg.PathPrefix, "/"); p != "" {
			pp = "/" + p + "/"
		}
		rest, ok := strings.CutPrefix(key, pp)
		if !ok {
			return accesslog.Page{}, accesslog.NotTile
		}
		key = rest
		if op := strings.Trim(cfg.OriginPath, "/"); op != "" {
			key = op + "/" + key
		}
	}
	if p := strings.TrimSuffix(cfg.Prefix, "/"); p != "" {
		rest, ok := strings.CutPrefix(key, p+"/")
		if !ok {
			return accesslog.Page{}, accesslog.NotTile
		}
		key = rest
	}
	parts := strings.Split(key, "/")
	if len(parts) != 7 || slices.Contains(parts[:4], "") {
		return accesslog.Page{}, accesslog.NotTile
	}
	ys, ext, ok := strings.Cut(parts[6], ".")
	if !ok || ext == "" {
		return accesslog.Page{}, accesslog.NotTile
	}
	var n [3]int64
	for i, s := range []string{parts[4], parts[5], ys} {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 || strconv.FormatInt(v, 10) != s {
			return accesslog.Page{}, accesslog.NotTile
		}
		n[i] = v
	}
	name, ok := layerName(parts[0])
	if !ok {
		return accesslog.Page{}, accesslog.UnknownLayer
	}
	return accesslog.Page{Layer: name, GridSetID: parts[1], FormatID: parts[2], ParametersID: parts[3], Z: int(n[0]), X: n[1] >> 6, Y: n[2] >> 6}, accesslog.Kept
}

// refStatus is a three-digit status, or "-" as 0.
func refStatus(s string) (int, bool) {
	if s == "-" {
		return 0, true
	}
	if len(s) != 3 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n, true
}

var cloudFrontNeeded = []string{"date", "time", "cs-method", "cs-uri-stem", "sc-status"}

func defaultRefFields() map[string]int {
	return refFieldsHeader(" date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status")
}

// refFieldsHeader maps the needed column names of a "#Fields:" header to
// their first position; nil if one is missing.
func refFieldsHeader(rest string) map[string]int {
	names := strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' })
	idx := map[string]int{}
	for i, n := range names {
		if _, ok := idx[n]; !ok {
			idx[n] = i
		}
	}
	for _, n := range cloudFrontNeeded {
		if _, ok := idx[n]; !ok {
			return nil
		}
	}
	return idx
}

var w3cClock = regexp.MustCompile(`^[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?$`)

func refCloudFront(st *refState, line string) refRecord {
	bad := refRecord{malformed: true}
	if st.fields == nil {
		return bad
	}
	cols := strings.Split(line, "\t")
	for _, n := range cloudFrontNeeded {
		if st.fields[n] >= len(cols) {
			return bad
		}
	}
	get := func(n string) string { return cols[st.fields[n]] }
	date, clk := get("date"), get("time")
	if len(date) != 10 || !w3cClock.MatchString(clk) || strings.Trim(date[:4]+date[5:7]+date[8:], "0123456789") != "" {
		return bad
	}
	tm, err := time.Parse("2006-01-02 15:04:05", date+" "+clk)
	if err != nil {
		return bad
	}
	status, ok := refStatus(get("sc-status"))
	if !ok {
		return bad
	}
	rec := refRecord{method: get("cs-method"), path: true, status: status, time: tm}
	if uri := get("cs-uri-stem"); uri != "-" {
		if rec.key, err = url.PathUnescape(uri); err != nil {
			return bad
		}
	}
	return rec
}

// refCLFTime parses "06/Feb/2019:00:00:38 +0000" as the logs write it.
func refCLFTime(s string) (time.Time, bool) {
	if len(s) != 26 || !slices.Contains(months, s[3:6]) || strings.Trim(s[0:2]+s[7:11]+s[22:26], "0123456789") != "" {
		return time.Time{}, false
	}
	if zh, _ := strconv.Atoi(s[22:24]); zh > 23 {
		return time.Time{}, false
	}
	if zm, _ := strconv.Atoi(s[24:26]); zm > 59 {
		return time.Time{}, false
	}
	tm, err := time.Parse("02/Jan/2006:15:04:05 -0700", s)
	return tm.UTC(), err == nil
}

var months = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

var (
	// s3Strong: the Request-URI closes at the first quote followed by a
	// status, an error code and four numbers or "-".
	s3Strong = regexp.MustCompile(`^[^ ]+ [^ ]+ \[([^\]]*)\] [^ ]+ [^ ]+ [^ ]+ ([^ ]+) ([^ ]+) (?:"(?:.*?)"|[^" ][^ ]*) ([0-9]{3}|-) [^ ]+ (?:[0-9]+|-) (?:[0-9]+|-) (?:[0-9]+|-) (?:[0-9]+|-)(?: |$)`)
	// s3Weak: failing that, at the first quote followed by a status.
	s3Weak = regexp.MustCompile(`^[^ ]+ [^ ]+ \[([^\]]*)\] [^ ]+ [^ ]+ [^ ]+ ([^ ]+) ([^ ]+) (?:"(?:.*?)"|[^" ][^ ]*) ([0-9]{3}|-)(?: |$)`)
)

func refS3(_ *refState, line string) refRecord {
	bad := refRecord{malformed: true}
	m := s3Strong.FindStringSubmatch(line)
	if m == nil {
		m = s3Weak.FindStringSubmatch(line)
	}
	if m == nil {
		return bad
	}
	tm, ok := refCLFTime(m[1])
	if !ok {
		return bad
	}
	status, _ := refStatus(m[4])
	rec := refRecord{method: m[2], status: status, time: tm}
	if p := strings.Split(m[2], "."); len(p) == 3 && (p[0] == "REST" || p[0] == "WEBSITE") && p[2] == "OBJECT" {
		rec.method = p[1]
	}
	if m[3] != "-" {
		var err error
		if rec.key, err = url.PathUnescape(m[3]); err != nil {
			return bad
		}
	}
	return rec
}

var (
	combinedLine    = regexp.MustCompile(`^[^ ]+ [^\[]*\[([^\]]*)\](?: (.*))?$`)
	combinedRequest = regexp.MustCompile(`^"((?:[^"\\]|\\.)*)"(?: ([^ ]+)(?: |$))?`)
)

func refCombined(_ *refState, line string) refRecord {
	bad := refRecord{malformed: true}
	m := combinedLine.FindStringSubmatch(line)
	if m == nil {
		return bad
	}
	r := combinedRequest.FindStringSubmatch(m[2])
	if r == nil || r[2] == "" {
		return bad
	}
	tm, ok := refCLFTime(m[1])
	if !ok {
		return bad
	}
	status, ok := refStatus(r[2])
	if !ok {
		return bad
	}
	rec := refRecord{status: status, time: tm, path: true}
	method, target, ok := strings.Cut(r[1], " ")
	if !ok || method == "" {
		rec.method = r[1]
		return rec
	}
	rec.method = method
	target, _, _ = strings.Cut(target, " ")
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	for _, scheme := range []string{"http://", "https://"} {
		if rest, ok := strings.CutPrefix(target, scheme); ok {
			if i := strings.Index(rest, "/"); i >= 0 {
				target = rest[i:]
			} else {
				target = "/"
			}
		}
	}
	rec.key = target
	return rec
}
