package rest_test

// Contract §1: the 1 MiB body limit, and layer names in paths (":" and "."
// inside names, "+" as space, percent-decoding).

import (
	"io"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
)

const maxBody = 1 << 20

// TestBodyLimit: bodies over 1 MiB are 413 text/plain without being parsed
// (a valid request padded with whitespace would otherwise succeed), with
// and without Content-Length; exactly 1 MiB is accepted.
func TestBodyLimit(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	pad := func(body string, size int) string { return body + strings.Repeat(" ", size-len(body)) }
	type target struct {
		name, method, path, body string
		headers                  []string
	}
	targets := []target{
		{"seed JSON", "POST", "/rest/seed/demo:world.json", seedBodyJSON, []string{"Content-Type", "application/json"}},
		{"seed XML", "POST", "/rest/seed/demo:world.xml", seedBodyXML, []string{"Content-Type", "application/xml"}},
		{"seed without suffix", "POST", "/rest/seed/demo:world", seedBodyJSON, []string{"Content-Type", "application/json"}},
		{"kill all", "POST", "/rest/seed", "kill_all=all&x=", []string{"Content-Type", ctForm}},
		{"kill layer", "POST", "/rest/seed/demo:world", "kill_all=all&x=", []string{"Content-Type", ctForm}},
		{"mass truncate", "POST", "/rest/masstruncate", truncateBody, []string{"Content-Type", "text/xml"}},
		{"disk quota JSON", "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true}}`, nil},
		{"disk quota XML", "PUT", "/rest/diskquota.xml", `<cacheQuotaConfiguration><enabled>true</enabled></cacheQuotaConfiguration>`, nil},
	}
	for _, tg := range targets {
		for _, chunked := range []bool{false, true} {
			name := tg.name + " with Content-Length"
			if chunked {
				name = tg.name + " chunked"
			}
			for _, size := range []int{maxBody + 1, 3 * maxBody} {
				t.Run(name, func(t *testing.T) {
					body := pad(tg.body, size)
					n := int64(len(body))
					var r io.Reader = strings.NewReader(body)
					if chunked {
						n = -1
						r = io.MultiReader(r) // hides the length
					}
					res := doReader(t, a, tg.method, tg.path, r, n, tg.headers...)
					if res.Status != 413 {
						t.Errorf("status: got %d (%q), want 413", res.Status, res.Body)
					}
					if ct := res.Header.Get("Content-Type"); ct != ctText {
						t.Errorf("Content-Type: got %q, want %q", ct, ctText)
					}
				})
			}
		}
	}
	t.Run("nothing changed", func(t *testing.T) {
		if rows := list(t, a, "/rest/seed.json"); len(rows) != 0 {
			t.Errorf("tasks after 413s: got %v, want none", rows)
		}
		if res := a.Do(t, "GET", "/rest/diskquota.json", ""); res.Body != defaultQuotaJSON {
			t.Errorf("disk quota after 413s: got %s, want %s", res.Body, defaultQuotaJSON)
		}
		wantNextID(t, a, 1)
	})
	t.Run("exactly 1 MiB is accepted", func(t *testing.T) {
		for _, chunked := range []bool{false, true} {
			body := pad(`{"cacheQuotaConfiguration":{}}`, maxBody)
			n := int64(len(body))
			var r io.Reader = strings.NewReader(body)
			if chunked {
				n, r = -1, io.MultiReader(r)
			}
			res := doReader(t, a, "PUT", "/rest/diskquota.json", r, n)
			if res.Status != 200 {
				t.Errorf("chunked %v: got %d (%q), want 200", chunked, res.Status, res.Body)
			}
		}
		res := a.Do(t, "POST", "/rest/seed/demo:world.json", pad(seedBodyJSON, maxBody))
		wantOK(t, res, ctJSON)
		wantIDs(t, jsonRows(t, res.Body), 2, 1)
	})
}

// TestLayerNamesInPaths: the layer is the last segment without its suffix,
// with "+" as space and percent-decoded; names may contain ":" and ".".
func TestLayerNamesInPaths(t *testing.T) {
	t.Run("unknown", func(t *testing.T) {
		a := apptest.Start(t, apptest.Options{})
		form := []string{"Content-Type", ctForm}
		for _, c := range []struct {
			name, method, path, body string
			headers                  []string
			want                     string
		}{
			{"dots and colon JSON", "GET", "/rest/seed/test:a.b.c.json", "", nil, "test:a.b.c"},
			{"dots and colon XML", "GET", "/rest/seed/test:a.b.c.xml", "", nil, "test:a.b.c"},
			{"dots and colon seed", "POST", "/rest/seed/test:a.b.c.json", seedBodyJSON, nil, "test:a.b.c"},
			{"dots and colon kill", "POST", "/rest/seed/test:a.b.c", "kill_all=all", form, "test:a.b.c"},
			{"only the last suffix", "GET", "/rest/seed/test:a.b.c.json.xml", "", nil, "test:a.b.c.json"},
			{"plus and percent JSON", "GET", "/rest/seed/no+such%3Alayer.json", "", nil, "no such:layer"},
			{"plus and percent seed", "POST", "/rest/seed/no+such%3Alayer.xml", seedBodyXML, nil, "no such:layer"},
			{"plus and percent kill", "POST", "/rest/seed/no+such%3Alayer", "kill_all=all", form, "no such:layer"},
			{"encoded plus", "GET", "/rest/seed/a%2Bb.json", "", nil, "a+b"},
			{"encoded space", "GET", "/rest/seed/a%20b.json", "", nil, "a b"},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := a.Do(t, c.method, c.path, c.body, c.headers...)
				wantError(t, res, 400, "Unknown layer: "+c.want)
			})
		}
	})

	t.Run("known", func(t *testing.T) {
		extra := `
  - name: test:a.b.c
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern}
  - name: my layer+1
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: testpattern}
`
		a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + extra})
		for _, c := range []struct{ name, path string }{
			{"dots and colon", "/rest/seed/test:a.b.c"},
			{"plus as space, encoded plus", "/rest/seed/my+layer%2B1"},
			{"percent-encoded", "/rest/seed/my%20layer%2b1"},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := a.Do(t, "GET", c.path+".json", "")
				wantOK(t, res, ctJSON)
				res = a.Do(t, "GET", c.path+".xml", "")
				wantOK(t, res, ctXML)
				res = a.Do(t, "POST", c.path, "kill_all=all", "Content-Type", ctForm)
				wantOK(t, res, ctHTML)
			})
		}
		rows := seedJSON(t, a, "test:a.b.c", seedBodyJSON)
		wantIDs(t, rows, 1, 1)
		rows = seedJSON(t, a, "my+layer%2B1", seedBodyJSON)
		wantIDs(t, rows, 2, 1)
		killAll(t, a)
	})
}
