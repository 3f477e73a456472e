package console

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, path string, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestHandler: the page and its parts with their types and headers;
// gzip only when accepted (not with q=0), with an ETag of its own; a
// revalidation with the ETag is a 304.
func TestHandler(t *testing.T) {
	h := Handler(Options{Backend: "embedded"})
	page := get(t, h, "/")
	if page.Code != 200 || page.Header().Get("Content-Type") != "text/html; charset=utf-8" || page.Header().Get("Cache-Control") != "no-store" ||
		page.Header().Get("Content-Security-Policy") != Policy || page.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET /: %d %v", page.Code, page.Header())
	}
	if !strings.Contains(page.Body.String(), `src="app.js"`) || strings.Contains(page.Body.String(), "<script>") {
		t.Errorf("the page must load app.js and hold no inline script: %s", page.Body)
	}
	plain := get(t, h, "/app.js")
	zipped := get(t, h, "/app.js", "Accept-Encoding", "br, gzip;q=0.8")
	refused := get(t, h, "/app.js", "Accept-Encoding", "gzip;q=0")
	if plain.Header().Get("Content-Encoding") != "" || refused.Header().Get("Content-Encoding") != "" || zipped.Header().Get("Content-Encoding") != "gzip" {
		t.Errorf("Content-Encoding: plain %q, q=0 %q, accepted %q", plain.Header().Get("Content-Encoding"), refused.Header().Get("Content-Encoding"), zipped.Header().Get("Content-Encoding"))
	}
	if zipped.Body.Len() >= plain.Body.Len()/2 {
		t.Errorf("gzipped %d bytes for %d", zipped.Body.Len(), plain.Body.Len())
	}
	etag, zetag := plain.Header().Get("ETag"), zipped.Header().Get("ETag")
	if etag == "" || zetag == "" || etag == zetag {
		t.Errorf("ETags %q and %q: want two, one per encoding", etag, zetag)
	}
	if w := get(t, h, "/app.js", "If-None-Match", etag); w.Code != http.StatusNotModified {
		t.Errorf("revalidation: %d, want 304", w.Code)
	}
	if w := get(t, h, "/app.css"); w.Code != 200 || w.Header().Get("Content-Type") != "text/css; charset=utf-8" {
		t.Errorf("GET /app.css: %d %v", w.Code, w.Header())
	}
	if w := get(t, h, "/../internal/console.go"); w.Code != http.StatusNotFound {
		t.Errorf("GET outside the bundle: %d", w.Code)
	}
}

// TestHandlerOptions: the page names its backend in a meta element; a
// base map's template is named too, and its origin (only it) added to the
// images' sources of the policy; without one the policy is Policy and the
// page names none.
func TestHandlerOptions(t *testing.T) {
	plain := get(t, Handler(Options{Backend: "embedded"}), "/")
	if b := plain.Body.String(); !strings.Contains(b, `<meta name="tilecache-backend" content="embedded">`) || strings.Contains(b, "tilecache-base-map") {
		t.Errorf("the page without a base map: %s", b)
	}
	if p := plain.Header().Get("Content-Security-Policy"); p != Policy {
		t.Errorf("the policy without a base map: %q", p)
	}
	tmpl := "https://maps.example.org:8443/base/{z}/{x}/{y}.png?k=a&b=c"
	h := Handler(Options{Backend: "aws", BaseMap: tmpl})
	page := get(t, h, "/")
	if b := page.Body.String(); !strings.Contains(b, `<meta name="tilecache-backend" content="aws">`) ||
		!strings.Contains(b, `<meta name="tilecache-base-map" content="https://maps.example.org:8443/base/{z}/{x}/{y}.png?k=a&amp;b=c">`) {
		t.Errorf("the page with a base map: %s", b)
	}
	p := page.Header().Get("Content-Security-Policy")
	if !strings.Contains(p, "img-src 'self' data: blob: https://maps.example.org:8443;") || strings.Count(p, "maps.example.org") != 1 {
		t.Errorf("the policy with a base map: %q", p)
	}
	if js := get(t, h, "/app.js"); js.Header().Get("Content-Security-Policy") != p {
		t.Errorf("app.js's policy %q, the page's %q", js.Header().Get("Content-Security-Policy"), p)
	}
	// The page's ETag and gzip follow its new body.
	z := get(t, h, "/", "Accept-Encoding", "gzip")
	if z.Header().Get("Content-Encoding") != "gzip" || z.Body.Len() == 0 {
		t.Errorf("gzipped page: %v", z.Header())
	}
	if got := PolicyFor("javascript:alert(1)"); got != Policy {
		t.Errorf("PolicyFor a non-http template: %q", got)
	}
}
