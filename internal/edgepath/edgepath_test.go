package edgepath

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"testing"

	"tilecache/internal/grid"
)

// caseTable is testdata/cases.json, shared with the edge function's tests.
type caseTable struct {
	Table map[string]string `json:"table"`
	Cases []struct {
		URI string  `json:"uri"`
		Key *string `json:"key"`
	} `json:"cases"`
}

func loadCases(t testing.TB) (Table, caseTable) {
	t.Helper()
	data, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var ct caseTable
	if err := json.Unmarshal(data, &ct); err != nil {
		t.Fatal(err)
	}
	table := Table{}
	for id, s := range ct.Table {
		l, ok := Decode(s)
		if !ok {
			t.Fatalf("grid set %s: cannot decode %q", id, s)
		}
		table[id] = l
	}
	return table, ct
}

func TestMapCases(t *testing.T) {
	table, ct := loadCases(t)
	if len(ct.Cases) < 30 {
		t.Fatalf("only %d cases", len(ct.Cases))
	}
	for _, c := range ct.Cases {
		key, ok := Map(c.URI, table)
		switch {
		case c.Key == nil && ok:
			t.Errorf("%s: mapped to %s, want refused", c.URI, key)
		case c.Key != nil && (!ok || key != *c.Key):
			t.Errorf("%s: got %q (ok %v), want %s", c.URI, key, ok, *c.Key)
		}
	}
}

// TestTableOfBuiltins: the case table's entries for the built-in grid sets,
// and for the registered tile matrix sets they are published as, are those
// the service writes for the edge.
func TestTableOfBuiltins(t *testing.T) {
	_, ct := loadCases(t)
	table := NewTable(grid.Builtins())
	if len(table) != 4 {
		t.Errorf("the built-in grid sets give %d entries, want 4 (two grid sets, two registered ids)", len(table))
	}
	for id, l := range table {
		got := l.Encode()
		if want, ok := ct.Table[id]; !ok || got != want {
			t.Errorf("%s: NewTable encodes %q, the case table has %q", id, got, want)
		}
		if len(got) > 1024 {
			t.Errorf("%s: %d bytes, more than a CloudFront KeyValueStore value holds (1 KB)", id, len(got))
		}
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	for _, s := range []string{"", "1,2", "1,2;1", "1,x;1,2", "0;1", "1;-1", ";", "1;1;", "1;1;a;b"} {
		if _, ok := Decode(s); ok {
			t.Errorf("Decode(%q) accepted", s)
		}
	}
}

func TestMapLeavesOtherPaths(t *testing.T) {
	table, _ := loadCases(t)
	for _, p := range []string{"/tms/demo:world/EPSG:900913/png/default/0/0/0.png", "/xyzdemo:world/EPSG:900913/png/default/0/0/0.png", "/demo:world/EPSG:900913/png/default/0/0/0.png", "/"} {
		if key, ok := Map(p, table); ok {
			t.Errorf("%s: mapped to %s", p, key)
		}
	}
}

// TestHandlerCases: `tilecache serve`'s CDN emulation answers each case
// of the table as the edge function does (a 404 for a refused path, the
// stored key's path otherwise) and passes other paths unchanged.
func TestHandlerCases(t *testing.T) {
	table, ct := loadCases(t)
	var reached string
	h := Handler(func() Table { return table }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = r.URL.EscapedPath()
	}))
	serve := func(uri string) int {
		reached = ""
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		u, err := url.ParseRequestURI(uri)
		if err != nil {
			t.Fatal(err)
		}
		req.URL, req.RequestURI = u, uri
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, c := range ct.Cases {
		if _, err := url.ParseRequestURI(c.URI); err != nil {
			continue // the HTTP server answers 400 itself
		}
		code := serve(c.URI)
		switch {
		case c.Key == nil && (code != http.StatusNotFound || reached != ""):
			t.Errorf("%s: %d, reached the store as %q; want a 404", c.URI, code, reached)
		case c.Key != nil && reached != *c.Key:
			t.Errorf("%s: %d, reached the store as %q; want %s", c.URI, code, reached, *c.Key)
		}
	}
	for _, uri := range []string{"/demo:world/EPSG:900913/png/default/0/0/0.png", "/index.html", "/_tilecachex/a", "/a/_tilecache/b"} {
		if serve(uri); reached != uri {
			t.Errorf("%s: reached the store as %q, want it unchanged", uri, reached)
		}
	}
}

// TestEdgeFunction runs the CloudFront Function's Node tests, which take
// the same case table, and checks the function against CloudFront
// Functions' size limit (10 KB of code).
func TestEdgeFunction(t *testing.T) {
	const dir = "../../functions/edge/"
	src, err := os.ReadFile(dir + "tilepath.js")
	if err != nil {
		t.Fatal(err)
	}
	if len(src) > 10*1024 {
		t.Errorf("tilepath.js is %d bytes: CloudFront Functions take at most 10 KB", len(src))
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the edge function's tests: %v", err)
	}
	out, err := exec.Command(node, dir+"tilepath.test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("the edge function's tests failed: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
