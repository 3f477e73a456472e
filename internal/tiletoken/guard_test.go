package tiletoken

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestGuard: a private layer's request passes with a valid token, which
// next does not see in the query; a CORS preflight and a public layer's
// request pass without one; refusals name the problem.
func TestGuard(t *testing.T) {
	ring, err := NewKeyring(Key{ID: "k", Secret: strings.Repeat("s", 32)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1800000000, 0)
	var seen string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r.URL.RawQuery; io.WriteString(w, "tile") })
	g := Guard{Keys: ring, Now: func() time.Time { return now }, LayerOf: func(r *http.Request) (string, bool, bool) {
		id := strings.Split(r.URL.Path, "/")[1]
		return id, id == "private", true
	}}
	srv := httptest.NewServer(g.Wrap(next))
	defer srv.Close()
	tok, _ := ring.Issue([]string{"private"}, now.Add(time.Minute))
	other, _ := ring.Issue([]string{"public"}, now.Add(time.Minute))
	for _, c := range []struct {
		method, path string
		status       int
		says, query  string
	}{
		{"GET", "/private/0.png?token=" + tok + "&STYLES=a", 200, "tile", "STYLES=a"},
		{"GET", "/private/0.png", 401, "layer private is private", ""},
		{"GET", "/private/0.png?token=" + other, 403, "not for layer private", ""},
		{"OPTIONS", "/private/0.png", 200, "tile", ""},
		{"GET", "/public/0.png?token=junk", 200, "tile", "token=junk"},
	} {
		seen = ""
		req, _ := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.status || !strings.Contains(string(body), c.says) || seen != c.query {
			t.Errorf("%s %s: %d %q, next saw query %q; want %d saying %q, query %q", c.method, c.path, res.StatusCode, body, seen, c.status, c.says, c.query)
		}
	}
}
