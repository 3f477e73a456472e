package rest_test

// Helpers shared by the REST contract tests (REST-CONTRACT.md). Every test
// in this package drives the whole program over HTTP through apptest.

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
)

const (
	ctText     = "text/plain; charset=utf-8"
	ctJSON     = "application/json"
	ctXML      = "application/xml"
	ctQuotaXML = "text/xml; charset=utf-8"
	ctHTML     = "text/html; charset=utf-8"
	ctForm     = "application/x-www-form-urlencoded"
)

type row = [5]int64

// trimNL removes one trailing newline: error texts are one line and may be
// written with a newline.
func trimNL(s string) string { return strings.TrimSuffix(s, "\n") }

// wantError checks a 4xx text/plain answer with exactly the message msg.
// wantUnsupported checks a 415 text/plain answer naming the refused type.
func wantUnsupported(t testing.TB, res apptest.Response) {
	t.Helper()
	if res.Status != http.StatusUnsupportedMediaType || res.Header.Get("Content-Type") != ctText ||
		!strings.HasPrefix(res.Body, "Unsupported Content-Type ") || strings.Count(res.Body, "\n") != 1 {
		t.Errorf("got %d %q %q, want 415 text/plain, one line starting \"Unsupported Content-Type \"", res.Status, res.Header.Get("Content-Type"), res.Body)
	}
}

func wantError(t testing.TB, res apptest.Response, status int, msg string) {
	t.Helper()
	if res.Status != status {
		t.Errorf("status: got %d (%q), want %d", res.Status, res.Body, status)
	}
	if ct := res.Header.Get("Content-Type"); ct != ctText {
		t.Errorf("Content-Type: got %q, want %q", ct, ctText)
	}
	if got := trimNL(res.Body); got != msg {
		t.Errorf("body: got %q, want %q", got, msg)
	}
}

// wantBadRequest checks a 400 text/plain answer whose message is one
// non-empty line containing every one of parts (for answers whose exact
// text the contract does not fix).
func wantBadRequest(t testing.TB, res apptest.Response, parts ...string) {
	t.Helper()
	if res.Status != http.StatusBadRequest {
		t.Errorf("status: got %d (%q), want 400", res.Status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != ctText {
		t.Errorf("Content-Type: got %q, want %q", ct, ctText)
	}
	msg := trimNL(res.Body)
	if strings.TrimSpace(msg) == "" || strings.Contains(msg, "\n") {
		t.Errorf("body: got %q, want one non-empty line", res.Body)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("body: got %q, want it to contain %q", msg, p)
		}
	}
}

// wantOK checks a 200 answer with the given Content-Type.
func wantOK(t testing.TB, res apptest.Response, contentType string) {
	t.Helper()
	if res.Status != http.StatusOK {
		t.Fatalf("status: got %d (%q), want 200", res.Status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != contentType {
		t.Errorf("Content-Type: got %q, want %q", ct, contentType)
	}
}

var taskListJSONRE = regexp.MustCompile(`^\{"long-array-array":\[(\[-?\d+(,-?\d+){4}\](,\[-?\d+(,-?\d+){4}\])*)?\]\}$`)

// jsonRows decodes a JSON task list, checking that it is an object with the
// single key long-array-array holding rows of five JSON integers.
func jsonRows(t testing.TB, body string) []row {
	t.Helper()
	if !taskListJSONRE.MatchString(body) {
		t.Fatalf("task list: got %q, want {\"long-array-array\":[[i,i,i,i,i],…]} with integers only", body)
	}
	var doc map[string][]row
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("decode task list %q: %v", body, err)
	}
	return doc["long-array-array"]
}

// xmlRows decodes an XML task list.
func xmlRows(t testing.TB, body string) []row {
	t.Helper()
	var doc struct {
		XMLName xml.Name `xml:"long-array-array"`
		Rows    []struct {
			Longs []int64 `xml:"long"`
		} `xml:"long-array"`
	}
	if err := xml.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("decode XML task list %q: %v", body, err)
	}
	var out []row
	for _, r := range doc.Rows {
		if len(r.Longs) != 5 {
			t.Fatalf("XML task list %q: a row has %d values, want 5", body, len(r.Longs))
		}
		out = append(out, row(r.Longs))
	}
	return out
}

// checkRows checks the §5.1/§5.2 invariants: rows sorted by id, and in
// every row 0 ≤ [0] ≤ [1], [2] = [1] − [0], [3] ≥ 1, [4] ∈ {−1,0,1,2}.
func checkRows(t testing.TB, rows []row) {
	t.Helper()
	for i, r := range rows {
		if r[0] < 0 || r[0] > r[1] {
			t.Errorf("row %v: got processed %d, want 0 ≤ processed ≤ %d", r, r[0], r[1])
		}
		if r[2] != r[1]-r[0] {
			t.Errorf("row %v: got remaining %d, want %d", r, r[2], r[1]-r[0])
		}
		if r[3] < 1 {
			t.Errorf("row %v: got id %d, want ≥ 1", r, r[3])
		}
		if r[4] < -1 || r[4] > 2 {
			t.Errorf("row %v: got status %d, want one of -1, 0, 1, 2", r, r[4])
		}
		if r[4] == 0 && r[0] != 0 {
			t.Errorf("row %v: got processed %d for a pending task, want 0", r, r[0])
		}
		if i > 0 && rows[i-1][3] >= r[3] {
			t.Errorf("rows %v: got id %d after %d, want ascending ids", rows, r[3], rows[i-1][3])
		}
	}
}

func ids(rows []row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r[3]
	}
	return out
}

// wantIDs checks that rows have exactly the ids from, from+1, …, from+n−1.
func wantIDs(t testing.TB, rows []row, from int64, n int) {
	t.Helper()
	want := make([]int64, n)
	for i := range want {
		want[i] = from + int64(i)
	}
	if got := ids(rows); !slices.Equal(got, want) {
		t.Errorf("task ids: got %v, want %v", got, want)
	}
}

func sumTotals(rows []row) int64 {
	var n int64
	for _, r := range rows {
		n += r[1]
	}
	return n
}

// seedJSON posts a JSON seed request and returns the created rows.
func seedJSON(t testing.TB, a *apptest.App, layer, body string) []row {
	t.Helper()
	res := a.Do(t, "POST", "/rest/seed/"+layer+".json", body)
	wantOK(t, res, ctJSON)
	rows := jsonRows(t, res.Body)
	checkRows(t, rows)
	return rows
}

// list returns the rows of GET path (a .json task list).
func list(t testing.TB, a *apptest.App, path string) []row {
	t.Helper()
	res := a.Do(t, "GET", path, "")
	wantOK(t, res, ctJSON)
	rows := jsonRows(t, res.Body)
	checkRows(t, rows)
	return rows
}

// killAll kills every task of every layer.
func killAll(t testing.TB, a *apptest.App) {
	t.Helper()
	res := a.Do(t, "POST", "/rest/seed", "kill_all=all", "Content-Type", ctForm)
	if res.Status != http.StatusOK {
		t.Fatalf("kill all: got %d %q, want 200", res.Status, res.Body)
	}
}

// wantNextID checks that the next accepted request gets task id want: no
// id was consumed by what came before.
func wantNextID(t testing.TB, a *apptest.App, want int64) {
	t.Helper()
	rows := seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`)
	wantIDs(t, rows, want, 1)
}

// doReader sends a request whose body is read from r, with the test
// account's credentials; size < 0 sends it chunked (no Content-Length).
func doReader(t testing.TB, a *apptest.App, method, path string, r io.Reader, size int64, headers ...string) apptest.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, a.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	if size < 0 {
		req.ContentLength = -1
	}
	req.SetBasicAuth(apptest.User, apptest.Password)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return apptest.Response{Status: res.StatusCode, Header: res.Header, Body: string(b)}
}

// compactXML removes whitespace between tags, for comparing XML documents
// whose indentation the contract does not fix.
func compactXML(s string) string {
	return regexp.MustCompile(`>\s+<`).ReplaceAllString(strings.TrimSpace(s), "><")
}
