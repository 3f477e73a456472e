package edgepath

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/tiletoken"
)

// The edge functions (functions/edge/*.js) run on CloudFront Functions'
// cloudfront-js-2.0, whose engine is njs, far stricter than node. These
// tests run each file, unchanged, under both node and njs with one driver
// (functions/edge/edgecases.js) on the same cases as the node tests (every
// shared tile token vector; every case of testdata/cases.json, the paths
// that pass unchanged and the private layer cases), and check that both
// engines give, case by case, what the Go twins (tiletoken.Verify, Map and
// Handler's rules) give.

const edgeDir = "../../functions/edge/"

// edgeOutcome is one case's name and outcome, as edgecases.js reports it.
type edgeOutcome [2]string

// requireNjs returns the path of njs, or skips saying so: `make test`
// installs it (infra/browser/install.sh) and fails when it cannot.
func requireNjs(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("njs")
	if err != nil {
		t.Skip("njs is not installed, so the edge functions were NOT run under the edge runtime's engine: install it with infra/browser/install.sh (Debian's njs)")
	}
	return path
}

// runEdge runs edge file (a name under functions/edge) with edgecases.js
// on input under node and under njs, and returns each one's outcomes.
func runEdge(t *testing.T, file string, input any) (node, njs []edgeOutcome) {
	t.Helper()
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	nodePath, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed to run the edge function's tests: %v", err)
	}
	cmd := exec.CommandContext(ctx, nodePath, edgeDir+"runtimes.mjs", edgeDir+file)
	cmd.Stdin = bytes.NewReader(in)
	node = edgeOutcomes(t, "node", file, cmd, "")

	njsPath := requireNjs(t)
	src, err := os.ReadFile(edgeDir + file)
	if err != nil {
		t.Fatal(err)
	}
	driver, err := os.ReadFile(edgeDir + "edgecases.js")
	if err != nil {
		t.Fatal(err)
	}
	// One module script: the file as it is (tiletoken.js given the crypto
	// import tilepath.js holds it under), the driver, and the call, which
	// writes the outcomes to a file (njs's console.log cuts a line at
	// 2,048 bytes).
	dir := t.TempDir()
	outFile := filepath.Join(dir, "outcomes.json")
	var script bytes.Buffer
	script.WriteString("import edgeFs from 'fs';\n")
	const cryptoImport = "import crypto from 'crypto';\n"
	if !bytes.Contains(src, []byte(cryptoImport)) {
		script.WriteString(cryptoImport)
	}
	script.Write(src)
	script.WriteString("\n")
	script.Write(driver)
	fmt.Fprintf(&script, "\nedgeCases(%s).then(function (out) { edgeFs.writeFileSync(%q, JSON.stringify(out)); }, "+
		"function (e) { console.log('edgeCases failed: ' + e + '\\n' + e.stack); });\n", in, outFile)
	name := filepath.Join(dir, file)
	if err := os.WriteFile(name, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs(edgeDir + "njs")
	if err != nil {
		t.Fatal(err)
	}
	njs = edgeOutcomes(t, "njs", file, exec.CommandContext(ctx, njsPath, "-t", "module", "-p", modules, name), outFile)
	if len(node) != len(njs) {
		t.Fatalf("%s: node gave %d outcomes, njs %d", file, len(node), len(njs))
	}
	for i := range node {
		if node[i] != njs[i] {
			t.Errorf("%s, %s: node %q, njs %q", file, node[i][0], node[i][1], njs[i][1])
		}
	}
	return node, njs
}

// edgeOutcomes runs cmd and reads the outcomes it prints, or writes to
// outFile when that is not "".
func edgeOutcomes(t *testing.T, engine, file string, cmd *exec.Cmd, outFile string) []edgeOutcome {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil && outFile != "" {
		var printed []byte
		printed, out = out, nil
		if out, err = os.ReadFile(outFile); err != nil {
			err = fmt.Errorf("no outcomes: %w (printed: %s)", err, printed)
		}
	}
	var got []edgeOutcome
	if err != nil || json.Unmarshal(out, &got) != nil {
		t.Fatalf("%s under %s: %v\n%s%s", file, engine, err, out, stderr.Bytes())
	}
	return got
}

// checkOutcomes compares each engine's outcomes with want's, by name.
func checkOutcomes(t *testing.T, file string, want []edgeOutcome, engines map[string][]edgeOutcome) {
	t.Helper()
	for engine, got := range engines {
		if len(got) != len(want) {
			t.Errorf("%s under %s: %d outcomes, want %d", file, engine, len(got), len(want))
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s under %s, %s: %q, want (Go) %q", file, engine, want[i][0], got[i][1], want[i][1])
			}
		}
	}
}

// tokenVectors is ../tiletoken/testdata/vectors.json.
type tokenVectors struct {
	Keys  map[string]string `json:"keys"`
	Cases []struct {
		Name  string   `json:"name"`
		Token string   `json:"token"`
		Ring  []string `json:"ring"`
		Layer string   `json:"layer"`
		Now   int64    `json:"now"`
		Want  string   `json:"want"`
	} `json:"cases"`
}

func loadVectors(t *testing.T) tokenVectors {
	t.Helper()
	data, err := os.ReadFile("../tiletoken/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v tokenVectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestEdgeRuntimesTokenVectors: tiletoken.js gives every shared tile
// token vector (valid, expired, another layer's, wrong key id, rotated
// key, tampered, malformed) the same outcome under node, under njs and in
// Go (tiletoken.Verify).
func TestEdgeRuntimesTokenVectors(t *testing.T) {
	v := loadVectors(t)
	type tokenCase struct {
		Name  string   `json:"name"`
		Token string   `json:"token"`
		Ring  []string `json:"ring"`
		Layer string   `json:"layer"`
		Now   int64    `json:"now"`
	}
	var cases []tokenCase
	var want []edgeOutcome
	for _, c := range v.Cases {
		cases = append(cases, tokenCase{c.Name, c.Token, c.Ring, c.Layer, c.Now})
		secrets := func(id string) (string, bool) {
			if !slices.Contains(c.Ring, id) {
				return "", false
			}
			s, ok := v.Keys[id]
			return s, ok
		}
		_, err := tiletoken.Verify(c.Token, secrets, c.Layer, time.Unix(c.Now, 0))
		code := tiletoken.Code(err)
		if code != c.Want {
			t.Errorf("%s: Go gives %s, the vector wants %s", c.Name, code, c.Want)
		}
		want = append(want, edgeOutcome{c.Name, code})
	}
	for _, file := range []string{"tiletoken.js", "tilepath.js"} {
		node, njs := runEdge(t, file, map[string]any{"keys": v.Keys, "tokens": cases})
		checkOutcomes(t, file, want, map[string][]edgeOutcome{"node": node, "njs": njs})
	}
}

// edgeRequest is one request of edgecases.js.
type edgeRequest struct {
	Name   string `json:"name"`
	Method string `json:"method,omitempty"`
	URI    string `json:"uri"`
	Token  string `json:"token,omitempty"`
	Bearer bool   `json:"bearer,omitempty"`
}

const (
	edgeNotFound = "status 404 public, max-age=86400 Not found: no such tile\n"
)

// edgePass is the outcome of a request passed on as uri.
func edgePass(uri string, query map[string]any, tileToken string) string {
	q, _ := json.Marshal(query)
	if tileToken == "" {
		tileToken = "none"
	}
	return "pass " + uri + " querystring " + string(q) + " x-tile-token " + tileToken
}

// goEdgeKey is where Handler sends a path: its stored key's path, ok
// false for a 404 (a Reserved path, a refused edge path); other paths
// are not the mapping's and pass unchanged.
func goEdgeKey(p string, table Table) (string, bool) {
	if Reserved(p) {
		return "", false
	}
	edge := p == ogcPrefix
	for _, pre := range Prefixes {
		edge = edge || strings.HasPrefix(p, pre)
	}
	if !edge {
		return p, true
	}
	key, ok := Map(p, table)
	if _, err := url.PathUnescape(key); !ok || err != nil {
		return "", false
	}
	return key, true
}

// TestEdgeRuntimesPaths: tilepath.js maps every case of testdata/cases.json
// (and the paths that pass unchanged) as Map and Handler do, and guards a
// private layer's paths as tiletoken.Verify decides (no token, expired,
// tampered, unknown key, malformed, another layer's, valid by query or
// Bearer, signed by the previous key; public layers with tokens; a CORS
// preflight), identically under node and under njs.
func TestEdgeRuntimesPaths(t *testing.T) {
	table, ct := loadCases(t)
	var reqs []edgeRequest
	var want []edgeOutcome
	add := func(r edgeRequest, outcome string) {
		reqs = append(reqs, r)
		want = append(want, edgeOutcome{r.Name, outcome})
	}
	for _, c := range ct.Cases {
		key, ok := goEdgeKey(c.URI, table)
		out := edgeNotFound
		if ok {
			out = edgePass(key, map[string]any{}, "")
		}
		add(edgeRequest{Name: c.URI, URI: c.URI}, out)
	}
	for _, uri := range []string{"/demo:world/EPSG:900913/png/default/0/0/0.png", "/index.html", "/tiles/x", "/xyzzy", "/_tilecachex/a", "/a/_tilecache/b"} {
		add(edgeRequest{Name: uri, URI: uri}, edgePass(uri, map[string]any{}, ""))
	}
	node, njs := runEdge(t, "tilepath.js", map[string]any{"store": ct.Table, "requests": reqs})
	checkOutcomes(t, "tilepath.js", want, map[string][]edgeOutcome{"node": node, "njs": njs})

	// Private layers: the store marks roads private and holds the keys
	// k1 and k2 of the shared vectors (not "other").
	v := loadVectors(t)
	store := map[string]string{"/private/roads": "1", "/key/k1": v.Keys["k1"], "/key/k2": v.Keys["k2"]}
	for k, s := range ct.Table {
		store[k] = s
	}
	secrets := func(id string) (string, bool) {
		if id != "k1" && id != "k2" {
			return "", false
		}
		return v.Keys[id], true
	}
	now := time.Now()
	sign := func(kid string, exp time.Time, layers ...string) string {
		tok, err := tiletoken.Sign(tiletoken.Key{ID: kid, Secret: v.Keys[kid]}, layers, exp)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := sign("k2", now.Add(time.Hour), "parcels", "roads")
	flip := "A"
	if good[len(good)-2] == 'A' {
		flip = "B"
	}
	tokens := []struct{ name, token string }{
		{"no token", ""},
		{"expired", sign("k2", now.Add(-time.Second), "roads")},
		{"tampered", good[:len(good)-2] + flip + good[len(good)-1:]},
		{"unknown key", sign("other", now.Add(time.Hour), "roads")},
		{"malformed", "v1.x"},
		{"another layer's", sign("k2", now.Add(time.Hour), "parcels")},
		{"valid", good},
		{"by the previous key", sign("k1", now.Add(time.Hour), "roads")},
	}
	gs := "EPSG:900913"
	for _, p := range []string{
		"/xyz/roads/" + gs + "/png/default/0/0/0.png", "/wmts/ro%61ds/" + gs + "/png/default/0/0/0.png",
		"/roads/" + gs + "/png/default/0/0/0.png", "/roads/WMTSCapabilities.xml", "/roads/" + gs + "/png/default/tilejson.json",
		"/ogcapi/collections/roads", "/ogcapi/collections/roads/map/tiles", "/ogcapi/collections/roads/map/tiles/" + gs + "/0/0/0.png",
	} {
		key, ok := goEdgeKey(p, table)
		if !ok {
			t.Fatalf("%s: Go refuses it", p)
		}
		for _, tok := range tokens {
			for _, bearer := range []bool{false, true} {
				if bearer && tok.token == "" {
					continue
				}
				r := edgeRequest{Name: p + ", " + tok.name, URI: p, Token: tok.token, Bearer: bearer}
				if bearer {
					r.Name += ", as Bearer"
				}
				_, err := tiletoken.Verify(tok.token, secrets, "roads", now)
				var out string
				switch code := tiletoken.Code(err); code {
				case "ok":
					out = edgePass(key, map[string]any{}, tok.token)
				case "missing":
					out = "status 401 no-store Unauthorized: layer roads is private: a tile token for it is needed\n"
				case "expired":
					out = "status 401 no-store Unauthorized: the tile token has expired\n"
				case "wrong-layer":
					out = "status 403 no-store Forbidden: the tile token is not for layer roads\n"
				default:
					out = "status 401 no-store Unauthorized: the tile token is not valid (" + code + ")\n"
				}
				add(r, out)
			}
		}
		// A CORS preflight carries no token.
		add(edgeRequest{Name: "OPTIONS " + p, Method: "OPTIONS", URI: p}, edgePass(key, map[string]any{}, ""))
	}
	// Public layers and shared documents pass as they are, tokens or not.
	for _, p := range []string{"/xyz/demo/" + gs + "/png/default/0/0/0.png", "/ogcapi/collections", "/WMTSCapabilities.xml", "/index.json"} {
		key, ok := goEdgeKey(p, table)
		if !ok {
			t.Fatalf("%s: Go refuses it", p)
		}
		for _, tok := range []string{"", "v1.x", good} {
			query := map[string]any{}
			if tok != "" {
				query["token"] = map[string]string{"value": tok}
			}
			add(edgeRequest{Name: p + " with token " + tok, URI: p, Token: tok}, edgePass(key, query, ""))
		}
	}
	node, njs = runEdge(t, "tilepath.js", map[string]any{"store": store, "requests": reqs[len(ct.Cases)+6:]})
	checkOutcomes(t, "tilepath.js", want[len(ct.Cases)+6:], map[string][]edgeOutcome{"node": node, "njs": njs})
	t.Logf("%d path cases and %d private layer cases, alike under node, njs and Go", len(ct.Cases)+6, len(reqs)-len(ct.Cases)-6)
}
