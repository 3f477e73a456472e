package app_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/browsertest"
	"tilecache/internal/testenv"
)

// openConsole opens the console of a in Chromium, signed in with the
// test account (Basic credentials sent with every request), and waits
// until it has loaded the layers.
func openConsole(t *testing.T, a *apptest.App, hash string) *browsertest.Page {
	t.Helper()
	testenv.RequireChromium(t)
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(apptest.User+":"+apptest.Password))
	page := browsertest.OpenWithHeaders(t, a.URL+"/console/"+hash, 120*time.Second, map[string]string{"Authorization": auth})
	page.WaitFor(t, `body[data-ready="1"]`)
	return page
}

// evalJSON evaluates a JavaScript expression and decodes its value
// (JSON.stringify'd in the page) into v.
func evalJSON(t *testing.T, page *browsertest.Page, expr string, v any) {
	t.Helper()
	s := page.Eval(t, "JSON.stringify("+expr+")")
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%s = %s: %v", expr, s, err)
	}
}

// waitEval evaluates a boolean JavaScript expression until it is true,
// for at most d.
func waitEval(t *testing.T, page *browsertest.Page, expr string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if page.Eval(t, "String(!!("+expr+"))") == "true" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, still not %s (console: %q)", d, expr, page.Console())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func noConsoleErrors(t *testing.T, page *browsertest.Page) {
	t.Helper()
	for _, m := range page.Console() {
		t.Errorf("page logged %s", m)
	}
}

// TestConsoleServed checks what /console/ answers: the page, its script
// and style sheet behind the accounts of /rest, with a strict
// Content-Security-Policy, nosniff, no caching of the page, and the
// redirect of /console to /console/.
func TestConsoleServed(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	if r := a.DoAuth(t, "", "", http.MethodGet, "/console/", ""); r.Status != http.StatusUnauthorized {
		t.Errorf("GET /console/ without credentials: %d, want 401", r.Status)
	}
	if r := a.DoAuth(t, "", "", http.MethodGet, "/console/app.js", ""); r.Status != http.StatusUnauthorized {
		t.Errorf("GET /console/app.js without credentials: %d, want 401", r.Status)
	}
	r := a.Do(t, http.MethodGet, "/console/", "")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `<script type="module" src="app.js">`) {
		t.Fatalf("GET /console/: %d %q", r.Status, r.Body)
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("Content-Security-Policy %q allows inline script or eval", csp)
	}
	if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", got)
	}
	if got := r.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("the page's Cache-Control %q, want no-store", got)
	}
	js := a.Do(t, http.MethodGet, "/console/app.js", "")
	if js.Status != http.StatusOK || !strings.HasPrefix(js.Header.Get("Content-Type"), "text/javascript") || js.Header.Get("ETag") == "" ||
		!strings.Contains(js.Header.Get("Cache-Control"), "private") {
		t.Errorf("GET /console/app.js: %d %v", js.Status, js.Header)
	}
	if r := a.Do(t, http.MethodGet, "/console/other.js", ""); r.Status != http.StatusNotFound {
		t.Errorf("GET /console/other.js: %d, want 404", r.Status)
	}
	if r := a.Do(t, http.MethodPost, "/console/", ""); r.Status != http.StatusMethodNotAllowed && r.Status != http.StatusForbidden {
		t.Errorf("POST /console/: %d, want 405", r.Status)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodGet, a.URL+"/console", nil)
	req.SetBasicAuth(apptest.User, apptest.Password)
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/console/" {
		t.Errorf("GET /console: %d Location %q, want 301 to /console/", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestConsoleLoads opens the console in Chromium: it loads without an
// error or a CSP violation and lists the layers.
func TestConsoleLoads(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	page := openConsole(t, a, "#seed")
	var layers []string
	evalJSON(t, page, `Array.from(document.querySelectorAll('#page-seed select')[0].options).map(o => o.value)`, &layers)
	if strings.Join(layers, ",") != "demo:world,topp:states,slow:world,broken:world" {
		t.Errorf("layers offered: %q", layers)
	}
	time.Sleep(time.Second)
	noConsoleErrors(t, page)
}
