package accesslog_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/accesslog"
	"tilecache/internal/edgepath"
	"tilecache/internal/layer"
)

// owsLayers is the catalogue of the OGC bindings' log tests: a public
// layer, and a private one the bindings refuse (403).
const owsLayers = `
layers:
  - name: topp:states
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
  - name: secret
    private: true
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
`

// owsMapperConfig maps the RESTful edge paths and the OGC bindings' queries
// with the catalogue's values, as the log function does.
func owsMapperConfig(t *testing.T) accesslog.MapperConfig {
	t.Helper()
	c, err := layer.Parse([]byte(owsLayers), "layers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	live := edgepath.NewLive(c)
	return accesslog.MapperConfig{PageShift: 6, EdgePrefixes: edgepath.Prefixes,
		EdgePath:  func(p string) (string, bool) { return edgepath.Map(p, live.Table()) },
		EdgeQuery: live.OWSTile,
		LayerName: func(id string) (string, bool) {
			l, ok := c.ByID(id)
			if !ok {
				return "", false
			}
			return l.Name, true
		}}
}

// The tile EPSG:4326 3/1/5 (row 2 from the top), page 3/0/0, read through
// each binding: WMTS KVP GetTile on /gwc/service/wmts and on /wmts, WMS-C
// GetMap (its box -157.5,-45,-135,-22.5), and the RESTful WMTS path.
const (
	kvpQuery  = "SERVICE=WMTS&REQUEST=GetTile&VERSION=1.0.0&LAYER=topp%3Astates&STYLE=&FORMAT=image%2Fpng&TILEMATRIXSET=EPSG%3A4326&TILEMATRIX=3&TILEROW=2&TILECOL=1"
	wmscQuery = "SERVICE=WMS&VERSION=1.1.1&REQUEST=GetMap&LAYERS=topp:states&STYLES=&SRS=EPSG:4326&BBOX=-157.5,-45,-135,-22.5&WIDTH=256&HEIGHT=256&FORMAT=image/png&TILED=true"
)

// cfQuery is a query as CloudFront logs it: its own escaping of "%" (and
// of the characters it escapes) on top of the viewer's.
func cfQuery(q string) string { return strings.ReplaceAll(q, "%", "%25") }

// TestIngestOWSReads: the reads of the WMTS KVP and WMS-C bindings, named
// by their query in CloudFront's cs-uri-query or the combined log's request
// line, count on the page of the stored tile they read, as the RESTful
// path's read does; their capabilities, GetFeatureInfo, exceptions, a
// private layer's tile (refused at the edge) and a box that is no tile do
// not.
func TestIngestOWSReads(t *testing.T) {
	cfLine := func(stem, query string, status int) string {
		return "2026-12-02\t06:50:00\tSEA19-C1\t2390\t2001:db8::1\tGET\td111111abcdef8.cloudfront.net\t" + stem + "\t" +
			strconv.Itoa(status) + "\t-\tQGIS/3.34\t" + query +
			"\t-\tHit\tid==\ttiles.example.com\thttps\t163\t0.001\t-\tTLSv1.3\tTLS_AES_128_GCM_SHA256\tHit\tHTTP/2.0\t-\t-\t443\t0.001\tHit\timage/png\t2390\t-\t-\n"
	}
	const fields = "#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) " +
		"cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol " +
		"ssl-cipher x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port time-to-first-byte " +
		"x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start sc-range-end"
	cloudFront := "#Version: 1.0\n" + fields + "\n" +
		cfLine("/gwc/service/wmts", cfQuery(kvpQuery), 200) +
		cfLine("/wmts", cfQuery(strings.NewReplacer("SERVICE=", "service=", "REQUEST=", "Request=", "TILEMATRIXSET=", "tileMatrixSet=").Replace(kvpQuery)), 200) + // names in another case
		cfLine("/gwc/service/wms", cfQuery(wmscQuery), 304) +
		cfLine("/wmts/topp%253Astates/EPSG:4326/png/default/3/1/2.png", "-", 200) +
		// Not reads of a tile:
		cfLine("/gwc/service/wmts", "SERVICE=WMTS&REQUEST=GetCapabilities", 200) +
		cfLine("/gwc/service/wmts", cfQuery(strings.Replace(kvpQuery, "GetTile", "GetFeatureInfo", 1)+"&I=1&J=2&INFOFORMAT=text%2Fhtml"), 200) +
		cfLine("/gwc/service/wmts", cfQuery(strings.Replace(kvpQuery, "TILEROW=2", "TILEROW=8", 1)), 400) +
		cfLine("/gwc/service/wmts", cfQuery(strings.Replace(kvpQuery, "topp%3Astates", "secret", 1)), 200) +
		cfLine("/gwc/service/wms", cfQuery(strings.Replace(wmscQuery, "-157.5,-45,-135", "-146.25,-45,-123.75", 1)), 200) +
		cfLine("/gwc/service/wmts", "-", 200)
	combined := `203.0.113.9 - - [02/Dec/2026:06:50:00 +0000] "GET /gwc/service/wmts?` + kvpQuery + ` HTTP/1.1" 200 2390 "-" "QGIS/3.34"` + "\n" +
		`203.0.113.9 - - [02/Dec/2026:06:50:00 +0000] "GET /wmts?` + kvpQuery + `#top HTTP/1.1" 200 2390 "-" "QGIS/3.34"` + "\n" +
		`203.0.113.9 - - [02/Dec/2026:06:50:01 +0000] "GET https://tiles.example.com/gwc/service/wms?` + wmscQuery + ` HTTP/1.1" 304 0 "-" "OpenLayers"` + "\n" +
		`203.0.113.9 - - [02/Dec/2026:06:50:01 +0000] "GET /wmts/topp:states/EPSG:4326/png/default/3/1/2.png HTTP/1.1" 200 2390 "-" "-"` + "\n" +
		`203.0.113.9 - - [02/Dec/2026:06:50:02 +0000] "GET /gwc/service/wmts?SERVICE=WMTS&REQUEST=GetCapabilities HTTP/1.1" 200 9000 "-" "-"` + "\n" +
		`203.0.113.9 - - [02/Dec/2026:06:50:02 +0000] "GET /gwc/service/wmts?` + strings.Replace(kvpQuery, "topp%3Astates", "secret", 1) + ` HTTP/1.1" 200 2390 "-" "-"` + "\n" +
		`203.0.113.9 - - [02/Dec/2026:06:50:02 +0000] "GET /gwc/service/wms?` + strings.Replace(wmscQuery, "-157.5,-45,-135", "-146.25,-45,-123.75", 1) + ` HTTP/1.1" 200 2390 "-" "-"` + "\n"
	for _, tt := range []struct {
		name   string
		format accesslog.Format
		log    string
		lines  int64
	}{
		{"cloudfront", accesslog.CloudFront, cloudFront, 10},
		{"combined", accesslog.Combined, combined, 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c collector
			st, err := accesslog.Ingest(t.Context(), strings.NewReader(tt.log), tt.format, MustMapper(t, owsMapperConfig(t)), c.flush, accesslog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkAccounted(t, st)
			if st.Lines != tt.lines || st.Malformed != 0 || st.Kept != 4 {
				t.Errorf("%d lines, %d malformed (%v), %d kept (%d not tiles); want %d, 0, 4 kept", st.Lines, st.Malformed, st.MalformedBy, st.Kept, st.NotTile, tt.lines)
			}
			want := []accesslog.PageHits{{Page: states(3, 0, 0), Hits: 4}}
			if got := c.all(); len(got) != 1 || got[0].Page != want[0].Page || got[0].Hits != want[0].Hits {
				t.Errorf("pages %+v, want %+v", got, want)
			}
		})
	}
}

// TestReaderQuery: the query is read with the path, the log's own escaping
// undone once as for the path; nil without one.
func TestReaderQuery(t *testing.T) {
	read := func(log string, f accesslog.Format) []string {
		r, err := accesslog.NewReader(strings.NewReader(log), f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for {
			rec, err := r.Next()
			if err != nil {
				return out
			}
			q := "<nil>"
			if rec.Query != nil {
				q = string(rec.Query)
			}
			out = append(out, q)
		}
	}
	got := read("#Fields: date time cs-method cs-uri-stem sc-status cs-uri-query\n"+
		"2026-12-02\t06:50:00\tGET\t/gwc/service/wmts\t200\tLAYER=topp%253Astates&FORMAT=image%252Fpng\n"+
		"2026-12-02\t06:50:00\tGET\t/a.png\t200\t-\n", accesslog.CloudFront)
	if want := []string{"LAYER=topp%3Astates&FORMAT=image%2Fpng", "<nil>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("cloudfront queries %q, want %q", got, want)
	}
	got = read(`::1 - - [02/Dec/2026:06:50:00 +0000] "GET /gwc/service/wmts?LAYER=a%3Ab#f HTTP/1.1" 200 5`+"\n"+
		`::1 - - [02/Dec/2026:06:50:00 +0000] "GET /a.png HTTP/1.1" 200 5`+"\n", accesslog.Combined)
	if want := []string{"LAYER=a%3Ab", "<nil>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("combined queries %q, want %q", got, want)
	}
}
