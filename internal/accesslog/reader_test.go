package accesslog_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"tilecache/internal/accesslog"
)

// record is a Record with strings, to compare.
type record struct {
	Method, Key string
	Path        bool
	Status      int
	Time        time.Time
}

// readAll reads every record of a log.
func readAll(tb testing.TB, log string, f accesslog.Format) ([]record, accesslog.Stats) {
	tb.Helper()
	r, err := accesslog.NewReader(strings.NewReader(log), f)
	if err != nil {
		tb.Fatalf("NewReader: %v", err)
	}
	var out []record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, r.Stats()
		}
		if err != nil {
			tb.Fatalf("Next: %v", err)
		}
		out = append(out, record{string(rec.Method), string(rec.Key), rec.Path, rec.Status, rec.Time})
	}
}

func TestReaderRecords(t *testing.T) {
	const owner = "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"
	tests := []struct {
		name   string
		format accesslog.Format
		log    string
		want   []record
	}{
		{
			name:   "cloudfront undoes its own escaping once",
			format: accesslog.CloudFront,
			log: "#Fields: date time cs-method cs-uri-stem sc-status\n" +
				"2019-12-04\t21:02:31\tGET\t/topp%253Astates/a%2520b/c:d.png\t200\n" +
				"2019-12-04\t21:02:31.250\tHEAD\t-\t000\n",
			want: []record{
				{"GET", "/topp%3Astates/a%20b/c:d.png", true, 200, time.Date(2019, 12, 4, 21, 2, 31, 0, time.UTC)},
				{"HEAD", "", true, 0, time.Date(2019, 12, 4, 21, 2, 31, 250e6, time.UTC)},
			},
		},
		{
			name:   "cloudfront lines before any header use the documented columns",
			format: accesslog.CloudFront,
			log:    "2019-12-04\t21:02:31\tSEA19-C1\t2390\t192.0.2.100\tGET\td111111abcdef8.cloudfront.net\t/a/b.png\t304\t-\t-\n",
			want:   []record{{"GET", "/a/b.png", true, 304, time.Date(2019, 12, 4, 21, 2, 31, 0, time.UTC)}},
		},
		{
			name:   "cloudfront columns from the last header",
			format: accesslog.CloudFront,
			log: "#Fields: date time cs-method cs-uri-stem sc-status\n" +
				"2019-12-04\t21:02:31\tGET\t/one.png\t200\n" +
				"#Fields: sc-status cs-uri-stem cs-method time date\n" +
				"404\t/two.png\tHEAD\t01:00:00\t2020-02-29",
			want: []record{
				{"GET", "/one.png", true, 200, time.Date(2019, 12, 4, 21, 2, 31, 0, time.UTC)},
				{"HEAD", "/two.png", true, 404, time.Date(2020, 2, 29, 1, 0, 0, 0, time.UTC)},
			},
		},
		{
			name:   "s3 method from the operation, key decoded once",
			format: accesslog.S3,
			log: owner + ` bucket [06/Feb/2019:00:00:38 +0000] 192.0.2.3 - 3E57427F3EXAMPLE REST.GET.OBJECT a%253Ab/c%3Ad.png "GET /a%3Ab/c:d.png HTTP/1.1" 200 - 113 113 7 6 "-" "S3Console/0.4" -` + "\n" +
				owner + ` bucket [06/Feb/2019:00:00:38 +0000] 192.0.2.3 - 3E57427F3EXAMPLE WEBSITE.HEAD.OBJECT x.png "HEAD /x.png HTTP/1.1" 304 - - 113 7 - "-" "-" -` + "\n" +
				owner + ` bucket [06/Feb/2019:00:00:38 +0000] 192.0.2.3 - 3E57427F3EXAMPLE REST.GET.OBJECT_TAGGING x.png "GET /x.png?tagging HTTP/1.1" 200 - 113 - 7 - "-" "-" -` + "\n" +
				owner + ` bucket [06/Feb/2019:03:00:38 -0130] 192.0.2.3 - 3E57427F3EXAMPLE REST.COPY.OBJECT_GET x.png - 200 - - 113 7 - "-" "-" -` + "\n",
			want: []record{
				{"GET", "a%3Ab/c:d.png", false, 200, time.Date(2019, 2, 6, 0, 0, 38, 0, time.UTC)},
				{"HEAD", "x.png", false, 304, time.Date(2019, 2, 6, 0, 0, 38, 0, time.UTC)},
				{"REST.GET.OBJECT_TAGGING", "x.png", false, 200, time.Date(2019, 2, 6, 0, 0, 38, 0, time.UTC)},
				{"REST.COPY.OBJECT_GET", "x.png", false, 200, time.Date(2019, 2, 6, 4, 30, 38, 0, time.UTC)},
			},
		},
		{
			name:   "combined paths as sent, query and host removed",
			format: accesslog.Combined,
			log: `::1 - - [29/Feb/2024:23:59:59 +0100] "GET /a%3Ab/c.png?x=1#f HTTP/1.1" 200 5 "-" "-"` + "\n" +
				`10.0.0.1 - "user name" [01/Mar/2024:00:00:00 +0000] "GET https://h.example/p.png HTTP/1.1" 200 5` + "\n" +
				`10.0.0.1 - - [01/Mar/2024:00:00:00 +0000] "GET http://h.example HTTP/1.1" 200 5` + "\n" +
				`10.0.0.1 - - [01/Mar/2024:00:00:00 +0000] "GET /old.png" 200 5` + "\n",
			want: []record{
				{"GET", "/a%3Ab/c.png", true, 200, time.Date(2024, 2, 29, 22, 59, 59, 0, time.UTC)},
				{"GET", "/p.png", true, 200, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
				{"GET", "/", true, 200, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
				{"GET", "/old.png", true, 200, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st := readAll(t, tt.log, tt.format)
			if st.Malformed != 0 {
				t.Errorf("%d malformed lines: %v", st.Malformed, st.MalformedBy)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d records %+v, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i].Method != tt.want[i].Method || got[i].Key != tt.want[i].Key || got[i].Path != tt.want[i].Path ||
					got[i].Status != tt.want[i].Status || !got[i].Time.Equal(tt.want[i].Time) {
					t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestReaderMalformed checks that each kind of bad line is counted under
// its reason and skipped, and that the lines around it are read.
func TestReaderMalformed(t *testing.T) {
	const good = "2019-12-04\t21:02:31\tGET\t/a.png\t200"
	tests := []struct {
		name   string
		format accesslog.Format
		lines  []string
		reason string
	}{
		{"too few fields", accesslog.CloudFront, []string{"2019-12-04\t21:02:31\tGET"}, "missing fields"},
		{"bad date", accesslog.CloudFront, []string{"2019-02-30\t21:02:31\tGET\t/a.png\t200"}, "bad time"},
		{"bad clock", accesslog.CloudFront, []string{"2019-12-04\t24:00:00\tGET\t/a.png\t200"}, "bad time"},
		{"bad status", accesslog.CloudFront, []string{"2019-12-04\t21:02:31\tGET\t/a.png\t2000"}, "bad status"},
		{"bad escape", accesslog.CloudFront, []string{"2019-12-04\t21:02:31\tGET\t/a%2.png\t200"}, "bad escape"},
		{"too long", accesslog.CloudFront, []string{"2019-12-04\t21:02:31\tGET\t/" + strings.Repeat("a", 300<<10) + "\t200"}, "line too long"},
		{"s3 unterminated quote", accesslog.S3, []string{`o b [06/Feb/2019:00:00:38 +0000] ip r id REST.GET.OBJECT k "GET /k HTTP/1.1 200`}, "unterminated quote"},
		{"s3 bad month", accesslog.S3, []string{`o b [06/Fev/2019:00:00:38 +0000] ip r id REST.GET.OBJECT k "GET /k HTTP/1.1" 200 - 1 1 1 1 "-" "-"`}, "bad time"},
		{"combined no time", accesslog.Combined, []string{`10.0.0.1 - - "GET / HTTP/1.1" 200 5`}, "bad time"},
		{"combined bad zone", accesslog.Combined, []string{`10.0.0.1 - - [01/Mar/2024:00:00:00 +01:00] "GET / HTTP/1.1" 200 5`}, "bad time"},
		{"combined no status", accesslog.Combined, []string{`10.0.0.1 - - [01/Mar/2024:00:00:00 +0000] "GET / HTTP/1.1"`}, "missing fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log string
			switch tt.format {
			case accesslog.CloudFront:
				log = "#Fields: date time cs-method cs-uri-stem sc-status\n" + good + "\n" + strings.Join(tt.lines, "\n") + "\n" + good + "\n"
			case accesslog.S3:
				g := `o b [06/Feb/2019:00:00:38 +0000] ip r id REST.GET.OBJECT k "GET /k HTTP/1.1" 200 - 1 1 1 1 "-" "-"`
				log = g + "\n" + strings.Join(tt.lines, "\n") + "\n" + g + "\n"
			case accesslog.Combined:
				g := `10.0.0.1 - - [01/Mar/2024:00:00:00 +0000] "GET /a.png HTTP/1.1" 200 5`
				log = g + "\n" + strings.Join(tt.lines, "\n") + "\n" + g + "\n"
			}
			got, st := readAll(t, log, tt.format)
			if len(got) != 2 {
				t.Errorf("read %d records, want the 2 good ones around the bad line", len(got))
			}
			if st.Lines != int64(2+len(tt.lines)) || st.Malformed != int64(len(tt.lines)) {
				t.Errorf("lines %d, malformed %d; want %d, %d", st.Lines, st.Malformed, 2+len(tt.lines), len(tt.lines))
			}
			if st.MalformedBy[tt.reason] != int64(len(tt.lines)) {
				t.Errorf("malformed by reason %v, want %d × %q", st.MalformedBy, len(tt.lines), tt.reason)
			}
		})
	}
}

// TestReaderHeaderWithoutColumns checks that a "#Fields:" header lacking
// a column the parser needs makes the lines after it malformed until a
// usable header comes.
func TestReaderHeaderWithoutColumns(t *testing.T) {
	log := "#Fields: date time cs-method sc-status\n" +
		"2019-12-04\t21:02:31\tGET\t200\n" +
		"#Fields: date time cs-method cs-uri-stem sc-status\n" +
		"2019-12-04\t21:02:31\tGET\t/a.png\t200\n"
	got, st := readAll(t, log, accesslog.CloudFront)
	if len(got) != 1 || st.MalformedBy["no usable #Fields header"] != 1 || st.Headers != 2 {
		t.Errorf("got %d records, stats %+v; want 1 record, 1 line without header, 2 headers", len(got), st)
	}
}

// TestReaderLastLine reads a last line without a line ending, and blank
// lines between records.
func TestReaderLastLine(t *testing.T) {
	log := "\n#Fields: date time cs-method cs-uri-stem sc-status\r\n\r\n2019-12-04\t21:02:31\tGET\t/a.png\t200\r\n\n2019-12-04\t21:02:32\tGET\t/b.png\t200"
	got, st := readAll(t, log, accesslog.CloudFront)
	if len(got) != 2 || got[1].Key != "/b.png" || st.Lines != 2 {
		t.Errorf("got %+v, %d lines; want /a.png and /b.png", got, st.Lines)
	}
}

func TestReaderEmpty(t *testing.T) {
	for _, log := range []string{"", "\x1f"} {
		got, st := readAll(t, log, accesslog.Combined)
		if len(got) != 0 || st.Lines != int64(len(log)) {
			t.Errorf("log %q: got %d records, %d lines", log, len(got), st.Lines)
		}
	}
}
