package rest_test

// The cross-site guard (an addition of this project to the contract):
// state-changing requests a browser marks as sent from another site's
// page are refused with a 403 naming the header; requests without those
// headers pass as before.

import (
	"net/http"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
)

// wantRefused checks a 403 text/plain answer, one line containing parts.
func wantRefused(t testing.TB, res apptest.Response, parts ...string) {
	t.Helper()
	if res.Status != http.StatusForbidden {
		t.Errorf("status: got %d (%q), want 403", res.Status, res.Body)
		return
	}
	if ct := res.Header.Get("Content-Type"); ct != ctText {
		t.Errorf("Content-Type: got %q, want %q", ct, ctText)
	}
	msg := trimNL(res.Body)
	if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "Cross-site request refused: ") {
		t.Errorf("body: got %q, want one line starting \"Cross-site request refused: \"", res.Body)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("body: got %q, want it to contain %q", msg, p)
		}
	}
}

func TestCrossSiteRefused(t *testing.T) {
	a := apptest.Start(t, apptest.Options{Env: map[string]string{
		"TILECACHE_ALLOWED_ORIGINS": "https://admin.example.org, http://localhost:3000",
		"TILECACHE_PUBLIC_URL":      "https://tiles.example.org/cache",
	}})
	form := func(h ...string) []string { return append([]string{"Content-Type", ctForm}, h...) }
	const evil = "https://evil.example"
	for _, c := range []struct {
		name, method, path, body string
		headers                  []string
		says                     []string // "" : not refused
	}{
		{"kill, Sec-Fetch-Site cross-site", "POST", "/rest/seed", "kill_all=all", form("Sec-Fetch-Site", "cross-site", "Origin", evil),
			[]string{"Sec-Fetch-Site is cross-site (Origin https://evil.example)", "TILECACHE_ALLOWED_ORIGINS"}},
		{"kill, Sec-Fetch-Site same-site", "POST", "/rest/seed", "kill_all=all", form("Sec-Fetch-Site", "same-site"),
			[]string{"Sec-Fetch-Site is same-site;", "TILECACHE_ALLOWED_ORIGINS"}},
		{"kill, Sec-Fetch-Site in capitals", "POST", "/rest/seed", "kill_all=all", form("Sec-Fetch-Site", "Cross-Site"),
			[]string{"Sec-Fetch-Site is cross-site"}},
		{"kill, an Origin of another site", "POST", "/rest/seed/demo:world", "kill_all=all", form("Origin", evil),
			[]string{"Origin https://evil.example is not this service's origin (", "https://tiles.example.org)", "add it to TILECACHE_ALLOWED_ORIGINS"}},
		{"kill, Origin null (a sandboxed page)", "POST", "/rest/seed", "kill_all=all", form("Origin", "null"),
			[]string{"Origin null is not this service's origin"}},
		{"kill, the service's host by another port", "POST", "/rest/seed", "kill_all=all", form("Origin", "http://127.0.0.1:1"),
			[]string{"Origin http://127.0.0.1:1 is not"}},
		{"quota PUT", "PUT", "/rest/diskquota.json", `{"enabled":true}`, []string{"Content-Type", "application/json", "Origin", evil}, []string{"Origin https://evil.example"}},
		{"layer DELETE", "DELETE", "/rest/layers/demo:world.xml", "", []string{"Sec-Fetch-Site", "cross-site"}, []string{"Sec-Fetch-Site is cross-site"}},
		{"seed POST", "POST", "/rest/seed/demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`, []string{"Origin", evil}, []string{"Origin https://evil.example"}},
		{"PATCH", "PATCH", "/rest/diskquota.json", `{}`, []string{"Sec-Fetch-Site", "cross-site"}, []string{"Sec-Fetch-Site is cross-site"}},
		{"console POST", "POST", "/console/anything", "x=1", form("Sec-Fetch-Site", "cross-site"), []string{"Sec-Fetch-Site is cross-site"}},
		{"/rest itself", "POST", "/rest", "", []string{"Origin", evil}, []string{"Origin https://evil.example"}},
		{"an allowed origin's page marked cross-site is refused nothing on a read", "GET", "/rest/seed.json", "", []string{"Sec-Fetch-Site", "cross-site", "Origin", evil}, nil},
		{"no browser headers (curl, the CLI)", "POST", "/rest/seed", "kill_all=running", form(), nil},
		{"the service's own pages (request host)", "POST", "/rest/seed", "kill_all=running", form("Origin", a.URL, "Sec-Fetch-Site", "same-origin"), nil},
		{"the request host by the other scheme", "POST", "/rest/seed", "kill_all=running", form("Origin", strings.Replace(a.URL, "http://", "https://", 1)), nil},
		{"the public URL's origin", "POST", "/rest/seed", "kill_all=running", form("Origin", "https://tiles.example.org"), nil},
		{"the public URL's origin with its default port", "POST", "/rest/seed", "kill_all=running", form("Origin", "https://TILES.example.org:443"), nil},
		{"typed in the address bar", "POST", "/rest/seed", "kill_all=running", form("Sec-Fetch-Site", "none"), nil},
		{"an allowed origin", "POST", "/rest/seed", "kill_all=running", form("Origin", "https://admin.example.org", "Sec-Fetch-Site", "cross-site"), nil},
		{"another allowed origin", "POST", "/rest/seed", "kill_all=running", form("Origin", "http://localhost:3000", "Sec-Fetch-Site", "same-site"), nil},
		{"a path outside the administration interface", "POST", "/tiles/demo:world/EPSG:4326/png/0/0/0.png", "", []string{"Sec-Fetch-Site", "cross-site"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := a.Do(t, c.method, c.path, c.body, c.headers...)
			if c.says != nil {
				wantRefused(t, res, c.says...)
				return
			}
			if res.Status == http.StatusForbidden {
				t.Errorf("got 403 %q, want the request served", res.Body)
			}
			if strings.HasPrefix(c.path, "/rest/") && res.Status != http.StatusOK {
				t.Errorf("got %d %q, want 200", res.Status, res.Body)
			}
		})
	}
	// Nothing was changed by the refused requests: no task was created
	// (the refused seed took no id), the quota is as it was.
	wantNextID(t, a, 1)
	if res := a.Do(t, "GET", "/rest/diskquota.json", ""); !strings.Contains(res.Body, `"enabled":false`) {
		t.Errorf("quota after a refused PUT: %s", res.Body)
	}
	if res := a.Do(t, "GET", "/rest/layers.xml", ""); !strings.Contains(res.Body, "<name>demo:world</name>") {
		t.Errorf("layers after a refused DELETE: %d %s", res.Status, res.Body)
	}
}

// TestCrossSiteUnderBasePath: the guard holds under a base path, and
// only there.
func TestCrossSiteUnderBasePath(t *testing.T) {
	a := apptest.Start(t, apptest.Options{Env: map[string]string{"TILECACHE_BASE_PATH": "/gwc"}})
	wantRefused(t, a.Do(t, "POST", "/gwc/rest/seed", "kill_all=all", "Content-Type", ctForm, "Sec-Fetch-Site", "cross-site"), "Sec-Fetch-Site is cross-site")
	wantRefused(t, a.Do(t, "POST", "/gwc/console/x", "", "Origin", "https://evil.example"), "Origin https://evil.example")
	if res := a.Do(t, "POST", "/gwc/rest/seed", "kill_all=all", "Content-Type", ctForm); res.Status != http.StatusOK {
		t.Errorf("without browser headers: %d %q", res.Status, res.Body)
	}
}

// TestRestNoSniff: every answer under /rest, a refusal, a 401 and a
// success alike, tells browsers not to sniff its type.
func TestRestNoSniff(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	for _, res := range []apptest.Response{
		a.Do(t, "GET", "/rest/seed.json", ""),
		a.Do(t, "GET", "/rest/layers.xml", ""),
		a.Do(t, "GET", "/rest/diskquota.json", ""),
		a.DoAuth(t, "", "", "GET", "/rest/seed.json", ""),
		a.Do(t, "POST", "/rest/seed", "kill_all=all", "Sec-Fetch-Site", "cross-site"),
	} {
		if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%d %q: X-Content-Type-Options %q, want nosniff", res.Status, res.Header.Get("Content-Type"), got)
		}
	}
}
