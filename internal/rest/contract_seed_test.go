package rest_test

// Contract §4 (seed request shapes and JSON rules), §5 (task lists) and
// §7.1/§7.2 (mass truncate wire format).

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// The §4.1 examples, verbatim.
const (
	exampleSeedXML = `<seedRequest>
  <name>topp:states</name>
  <bounds><coords>
    <double>-124.0</double><double>22.0</double><double>-66.0</double><double>50.0</double>
  </coords></bounds>
  <gridSetId>EPSG:4326</gridSetId>
  <zoomStart>1</zoomStart>
  <zoomStop>12</zoomStop>
  <format>image/png</format>
  <type>seed</type>
  <threadCount>4</threadCount>
  <parameters>
    <entry><string>STYLES</string><string>pophatch</string></entry>
    <entry><string>CQL_FILTER</string><string>TOTPOP &gt; 10000</string></entry>
  </parameters>
</seedRequest>`
	exampleSeedJSON = `{"seedRequest":{
  "name":"topp:states",
  "bounds":{"coords":{"double":["-124.0","22.0","-66.0","50.0"]}},
  "gridSetId":"EPSG:4326",
  "zoomStart":1, "zoomStop":12,
  "format":"image/png", "type":"seed", "threadCount":4,
  "parameters":{"entry":[
    {"string":["STYLES","pophatch"]},
    {"string":["CQL_FILTER","TOTPOP > 10000"]}]}
}}`
)

var taskListXMLRE = regexp.MustCompile(`^<long-array-array>(<long-array>(<long>-?\d+</long>){5}</long-array>)+</long-array-array>$`)

// TestSeedExamples posts the §4.1 examples: each creates 4 tasks with
// consecutive ids, listed in the answer in the path's format, and found by
// a status query afterwards. The tasks are killed at once.
func TestSeedExamples(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	next := int64(1)
	for _, c := range []struct{ name, path, body, ct string }{
		{"XML", "/rest/seed/topp:states.xml", exampleSeedXML, ctXML},
		{"JSON", "/rest/seed/topp:states.json", exampleSeedJSON, ctJSON},
		{"JSON without suffix", "/rest/seed/topp:states", exampleSeedJSON, ctJSON},
		{"XML without suffix", "/rest/seed/topp:states", exampleSeedXML, ctXML},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := a.Do(t, "POST", c.path, c.body, "Content-Type", c.ct)
			defer killAll(t, a)
			wantOK(t, res, c.ct)
			var rows []row
			if c.ct == ctXML {
				if !taskListXMLRE.MatchString(res.Body) {
					t.Errorf("body: got %q, want an XML task list", res.Body)
				}
				rows = xmlRows(t, res.Body)
			} else {
				rows = jsonRows(t, res.Body)
			}
			checkRows(t, rows)
			wantIDs(t, rows, next, 4)
			next += 4
			for _, r := range rows {
				if r[1] <= 0 {
					t.Errorf("row %v: got lane total %d, want > 0 for a 4-lane split of 12 levels", r, r[1])
				}
			}
			// A status query issued after the answer lists them.
			got := list(t, a, "/rest/seed/topp:states.json")
			for _, r := range rows {
				if !slices.Contains(ids(got), r[3]) {
					t.Errorf("GET /rest/seed/topp:states.json: got ids %v, want task %d listed", ids(got), r[3])
				}
			}
			killAll(t, a)
		})
	}
}

// TestSeedJSONAndXMLRules: the accepted shapes of §1 and §4.1, checked
// through the created tasks (how many, and the request total their lanes
// add up to).
func TestSeedJSONAndXMLRules(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	// Request totals (§10.2, metatiles 4×4): EPSG:4326 level 0 is 2×1 tiles,
	// level 1 4×2, level 2 8×4, so levels 0–2 hold 2+8+32 = 42 tiles;
	// EPSG:900913 level 0 is 1 tile; TopLeft4326 level 3 is 16×8 = 128.
	const j0 = `"zoomStart":0,"zoomStop":0`
	next := int64(1)
	for _, c := range []struct {
		name, path, body string
		tasks            int
		total            int64
	}{
		{"numbers as strings", "demo:world.json", `{"seedRequest":{"zoomStart":"0","zoomStop":"2","threadCount":"4"}}`, 4, 42},
		{"numbers", "demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"threadCount":4}}`, 4, 42},
		{"more threads than metatiles", "demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"threadCount":8}}`, 8, 42},
		{"threadCount above 128", "demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"threadCount":1000}}`, 128, 2},
		{"threadCount 0", "demo:world.json", `{"seedRequest":{` + j0 + `,"threadCount":0}}`, 1, 2},
		{"threadCount negative", "demo:world.json", `{"seedRequest":{` + j0 + `,"threadCount":"-3"}}`, 1, 2},
		{"truncate is one task", "demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"type":"TRUNCATE","threadCount":4}}`, 1, 42},
		{"reseed, case-insensitive", "demo:world.json", `{"seedRequest":{` + j0 + `,"type":"ReSeed","threadCount":2}}`, 2, 2},
		{"one stray brace", "demo:world.json", `{"seedRequest":{` + j0 + `}}}`, 1, 2},
		{"stray braces and whitespace", "demo:world.json", "{\"seedRequest\":{" + j0 + "}}\n} }\n\t", 1, 2},
		{"leading and trailing whitespace", "demo:world.json", "\n  {\"seedRequest\":{" + j0 + "}}  \n", 1, 2},
		{"bounds as strings", "demo:world.json", `{"seedRequest":{` + j0 + `,"gridSetId":"EPSG:4326","bounds":{"coords":{"double":["-180","-90","0","90"]}}}}`, 1, 2},
		{"bounds as numbers", "demo:world.json", `{"seedRequest":{` + j0 + `,"bounds":{"coords":{"double":[-180,-90,0,90.0]}}}}`, 1, 2},
		{"srs 4326 with one such grid set", "topp:states.json", `{"seedRequest":{` + j0 + `,"srs":{"number":4326}}}`, 1, 2},
		{"srs as string", "topp:states.json", `{"seedRequest":{` + j0 + `,"srs":{"number":"4326"}}}`, 1, 2},
		{"srs 3857 is 900913", "topp:states.json", `{"seedRequest":{` + j0 + `,"srs":{"number":3857}}}`, 1, 1},
		{"srs 900913", "topp:states.json", `{"seedRequest":{` + j0 + `,"srs":{"number":900913}}}`, 1, 1},
		{"srs 102100", "topp:states.json", `{"seedRequest":{` + j0 + `,"srs":{"number":102100}}}`, 1, 1},
		{"srs 102113 XML", "topp:states.xml", `<seedRequest><zoomStart>0</zoomStart><zoomStop>0</zoomStop><srs><number>102113</number></srs></seedRequest>`, 1, 1},
		{"gridSetId wins over srs", "topp:states.json", `{"seedRequest":{` + j0 + `,"gridSetId":"EPSG:900913","srs":{"number":4326}}}`, 1, 1},
		{"gridSetId of a custom grid set", "demo:world.json", `{"seedRequest":{"zoomStart":3,"zoomStop":3,"gridSetId":"TopLeft4326"}}`, 1, 128},
		{"zoomStop above the highest level is reduced", "demo:world.json", `{"seedRequest":{"zoomStart":3,"zoomStop":30,"gridSetId":"TopLeft4326"}}`, 1, 128},
		{"single parameters entry as object", "topp:states.json", `{"seedRequest":{` + j0 + `,"parameters":{"entry":{"string":["STYLES","pophatch"]}}}}`, 1, 2},
		{"parameters array", "topp:states.json", `{"seedRequest":{` + j0 + `,"parameters":{"entry":[{"string":["styles","polygon"]},{"string":["cql_filter","A = 'b'"]},{"string":["UNFILTERED","x"]}]}}}`, 1, 2},
		{"parameters at their defaults", "topp:states.json", `{"seedRequest":{` + j0 + `,"parameters":{"entry":[{"string":["STYLES",""]}]}}}`, 1, 2},
		{"failure fields as strings and booleans", "demo:world.json", `{"seedRequest":{` + j0 + `,"tileFailureRetryCount":"2","tileFailureRetryWaitTime":"10","totalFailuresBeforeAborting":"5","filterUpdate":"true"}}`, 1, 2},
		{"failure fields as numbers and booleans", "demo:world.json", `{"seedRequest":{` + j0 + `,"tileFailureRetryCount":-1,"tileFailureRetryWaitTime":100,"totalFailuresBeforeAborting":1000,"filterUpdate":false}}`, 1, 2},
		{"name is ignored", "demo:world.json", `{"seedRequest":{"name":"topp:states",` + j0 + `}}`, 1, 2},
		{"format of the layer", "topp:states.json", `{"seedRequest":{` + j0 + `,"format":"image/png8"}}`, 1, 2},
		{"XML with declaration, numbers with spaces", "demo:world.xml", `<?xml version="1.0" encoding="UTF-8"?>` + "\n<seedRequest>\n <zoomStart> 0 </zoomStart>\n <zoomStop>2</zoomStop>\n <threadCount>4</threadCount>\n</seedRequest>\n", 4, 42},
		{"XML failure fields", "demo:world.xml", `<seedRequest><zoomStart>0</zoomStart><zoomStop>0</zoomStop><tileFailureRetryCount>1</tileFailureRetryCount><tileFailureRetryWaitTime>1</tileFailureRetryWaitTime><totalFailuresBeforeAborting>3</totalFailuresBeforeAborting><filterUpdate>true</filterUpdate></seedRequest>`, 1, 2},
		{"XML single parameter", "topp:states.xml", `<seedRequest><zoomStart>0</zoomStart><zoomStop>0</zoomStop><parameters><entry><string>STYLES</string><string>polygon</string></entry></parameters></seedRequest>`, 1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := a.Do(t, "POST", "/rest/seed/"+c.path, c.body)
			var rows []row
			if strings.HasSuffix(c.path, ".xml") {
				wantOK(t, res, ctXML)
				rows = xmlRows(t, res.Body)
			} else {
				wantOK(t, res, ctJSON)
				rows = jsonRows(t, res.Body)
			}
			checkRows(t, rows)
			wantIDs(t, rows, next, c.tasks)
			next += int64(c.tasks)
			if got := sumTotals(rows); got != c.total {
				t.Errorf("request total (sum of lane totals): got %d, want %d", got, c.total)
			}
		})
	}
	killAll(t, a)
}

// TestTaskLists checks §5.1: shapes byte-exact when empty, Content-Types,
// rows sorted by id, per-layer filtering, XML and JSON listing the same
// rows, and the §5.2 invariants over time.
func TestTaskLists(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	empty := []struct{ path, ct, want string }{
		{"/rest/seed.json", ctJSON, `{"long-array-array":[]}`},
		{"/rest/seed/demo:world.json", ctJSON, `{"long-array-array":[]}`},
		{"/rest/seed/demo:world.xml", ctXML, `<long-array-array/>`},
		{"/rest/seed/slow:world.xml", ctXML, `<long-array-array/>`},
	}
	for _, c := range empty {
		t.Run("empty "+c.path, func(t *testing.T) {
			res := a.Do(t, "GET", c.path, "")
			wantOK(t, res, c.ct)
			if res.Body != c.want {
				t.Errorf("body: got %q, want %q", res.Body, c.want)
			}
		})
	}
	t.Run("unknown layer", func(t *testing.T) {
		wantError(t, a.Do(t, "GET", "/rest/seed/x.json", ""), 400, "Unknown layer: x")
		wantError(t, a.Do(t, "GET", "/rest/seed/x.xml", ""), 400, "Unknown layer: x")
	})

	// Pool of 2: slow tasks 1 and 2 run, 3 and the demo task 4 wait.
	slow := seedJSON(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":4,"threadCount":3}}`)
	defer killAll(t, a)
	wantIDs(t, slow, 1, 3)
	demo := seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`)
	wantIDs(t, demo, 4, 1)
	if demo[0][4] != 0 || demo[0][0] != 0 {
		t.Errorf("task 4 with a full pool: got %v, want pending with 0 processed", demo[0])
	}

	t.Run("all layers", func(t *testing.T) {
		rows := list(t, a, "/rest/seed.json")
		wantIDs(t, rows, 1, 4)
		for _, r := range rows {
			want := int64(1)
			if r[3] > 2 {
				want = 0
			}
			if r[4] != want {
				t.Errorf("row %v: got status %d, want %d", r, r[4], want)
			}
		}
	})
	t.Run("one layer JSON and XML", func(t *testing.T) {
		j := list(t, a, "/rest/seed/slow:world.json")
		wantIDs(t, j, 1, 3)
		res := a.Do(t, "GET", "/rest/seed/slow:world.xml", "")
		wantOK(t, res, ctXML)
		if !taskListXMLRE.MatchString(res.Body) {
			t.Errorf("body: got %q, want an XML task list", res.Body)
		}
		x := xmlRows(t, res.Body)
		checkRows(t, x)
		wantIDs(t, x, 1, 3)
		for i := range min(len(j), len(x)) {
			if j[i][1] != x[i][1] || j[i][3] != x[i][3] {
				t.Errorf("XML row %v and JSON row %v: got different task or lane total", x[i], j[i])
			}
		}
		wantIDs(t, list(t, a, "/rest/seed/demo:world.json"), 4, 1)
		if rows := list(t, a, "/rest/seed/topp:states.json"); len(rows) != 0 {
			t.Errorf("topp:states tasks: got %v, want none", rows)
		}
	})
	t.Run("lane totals fixed, processed never decreases", func(t *testing.T) {
		// Five lists, each once a row's processed count moved (or the rows
		// changed) since the one before: the running lanes store a tile
		// every 40 ms.
		prev := list(t, a, "/rest/seed.json")
		for range 5 {
			var cur []row
			testenv.Eventually(t, 10*time.Second, "a task's processed count to move", func() bool {
				cur = list(t, a, "/rest/seed.json")
				return !slices.Equal(cur, prev)
			})
			for _, p := range prev {
				for _, c := range cur {
					if c[3] != p[3] {
						continue
					}
					if c[1] != p[1] {
						t.Errorf("task %d: lane total went from %d to %d, want it fixed", c[3], p[1], c[1])
					}
					if c[0] < p[0] {
						t.Errorf("task %d: processed went from %d to %d, want it never to decrease", c[3], p[0], c[0])
					}
				}
			}
			prev = cur
		}
	})
}

// TestMassTruncateWire checks §7.1 byte-exact and the §7.2 answers.
func TestMassTruncateWire(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	doc := func(href string) string {
		return `<massTruncateRequests href="` + href + `"> <requestType>truncateLayer</requestType></massTruncateRequests>`
	}
	for _, c := range []struct {
		name    string
		path    string
		headers []string
		href    string
	}{
		{"as addressed", "/rest/masstruncate", nil, a.URL + "/rest/masstruncate"},
		{"no query string", "/rest/masstruncate?x=1&y=%3C", nil, a.URL + "/rest/masstruncate"},
		{"X-Forwarded-Proto", "/rest/masstruncate", []string{"X-Forwarded-Proto", "https"}, "https" + strings.TrimPrefix(a.URL, "http") + "/rest/masstruncate"},
		{"X-Forwarded-Host", "/rest/masstruncate", []string{"X-Forwarded-Host", "tiles.example.org"}, "http://tiles.example.org/rest/masstruncate"},
		{"both", "/rest/masstruncate", []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "tiles.example.org:8443"}, "https://tiles.example.org:8443/rest/masstruncate"},
	} {
		t.Run("GET "+c.name, func(t *testing.T) {
			res := a.Do(t, "GET", c.path, "", c.headers...)
			wantOK(t, res, ctXML)
			if want := doc(c.href); res.Body != want {
				t.Errorf("body:\n got %s\nwant %s", res.Body, want)
			}
		})
	}
	for _, c := range []struct{ name, ct, body string }{
		{"no Content-Type is XML", "", truncateBody},
		{"text/xml", "text/xml", truncateBody},
		{"application/xml", "application/xml", truncateBody},
		{"text/xml with charset", "text/xml; charset=UTF-8", truncateBody},
		{"application/xml with charset", "application/xml;charset=utf-8", truncateBody},
		{"declaration and whitespace", "text/xml", `<?xml version="1.0" encoding="UTF-8"?>` + "\n<truncateLayer>\n  <layerName> topp:states </layerName>\n</truncateLayer>\n"},
		{"layer with nothing stored", "text/xml", `<truncateLayer><layerName>broken:world</layerName></truncateLayer>`},
	} {
		t.Run("POST "+c.name, func(t *testing.T) {
			var h []string
			if c.ct != "" {
				h = []string{"Content-Type", c.ct}
			}
			res := a.Do(t, "POST", "/rest/masstruncate", c.body, h...)
			if res.Status != 200 {
				t.Fatalf("status: got %d (%q), want 200", res.Status, res.Body)
			}
			if res.Body != "" {
				t.Errorf("body: got %q, want empty", res.Body)
			}
		})
	}
	// Mass truncation creates no task and consumes no id.
	wantNextID(t, a, 1)
}

// TestSuffixDecidesFormat: for the suffixed disk-quota paths the suffix
// decides how the body is parsed and answered and the Content-Type header
// is not checked (§1); a seed request must come with its format's
// Content-Type (415 otherwise): a form or text/plain body is what another
// site's page can make a browser post with its cached credentials.
func TestSuffixDecidesFormat(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	for _, c := range []struct{ name, method, path, body, ct string }{
		{"seed JSON sent as XML", "POST", "/rest/seed/demo:world.json", seedBodyJSON, "application/xml"},
		{"seed JSON sent as form", "POST", "/rest/seed/demo:world.json", seedBodyJSON, ctForm},
		{"seed JSON sent as text", "POST", "/rest/seed/demo:world.json", seedBodyJSON, "text/plain"},
		{"seed JSON sent without a type", "POST", "/rest/seed/demo:world.json", seedBodyJSON, ""},
		{"seed XML sent as JSON", "POST", "/rest/seed/demo:world.xml", seedBodyXML, "application/json"},
		{"seed XML sent as text", "POST", "/rest/seed/demo:world.xml", seedBodyXML, "text/plain"},
		{"estimate sent as form", "POST", "/rest/estimate/demo:world.json", seedBodyJSON, ctForm},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantUnsupported(t, a.Do(t, c.method, c.path, c.body, "Content-Type", c.ct))
		})
	}
	if rows := jsonRows(t, a.Do(t, "GET", "/rest/seed.json", "").Body); len(rows) != 0 {
		t.Errorf("refused seed requests left tasks %v", rows)
	}
	for _, c := range []struct{ name, method, path, body, ct, wantCT string }{
		{"seed JSON with charset", "POST", "/rest/seed/demo:world.json", seedBodyJSON, "application/json; charset=utf-8", ctJSON},
		{"seed XML sent as text/xml", "POST", "/rest/seed/demo:world.xml", seedBodyXML, "text/xml", ctXML},
		{"quota XML sent as JSON", "PUT", "/rest/diskquota.xml", `<cacheQuotaConfiguration/>`, "application/json", ctQuotaXML},
		{"quota JSON sent as XML", "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{}}`, "text/xml", ctJSON},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantOK(t, a.Do(t, c.method, c.path, c.body, "Content-Type", c.ct), c.wantCT)
		})
	}
	killAll(t, a)
}

// TestSeedFailureSettingsBounded: the failure settings have ranges (docs/rest.md
// "Seed, reseed, truncate"); a value outside is a 400 naming the field and
// records nothing.
func TestSeedFailureSettingsBounded(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	for field, value := range map[string]string{
		"tileFailureRetryCount":       "2147483647",
		"tileFailureRetryWaitTime":    "86400000",
		"totalFailuresBeforeAborting": "-5",
	} {
		res := a.Do(t, "POST", "/rest/seed/demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"`+field+`":`+value+`}}`,
			"Content-Type", "application/json")
		wantBadRequest(t, res, field, value)
	}
	if rows := list(t, a, "/rest/seed.json"); len(rows) != 0 {
		t.Errorf("rejected requests recorded tasks: %v", rows)
	}
	wantNextID(t, a, 1)
}
