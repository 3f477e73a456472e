package layer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// lazyFile is a layer file the stored entries of the tests below are
// merged with: a custom grid set, a file layer, a store-managed entry.
const lazyFile = `gridSets:
  - id: FileGrid
    epsg: 4326
    extent: [-180, -90, 180, 90]
    resolutions: [0.703125, 0.3515625]
layers:
  - name: file:a
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    source: {type: testpattern}
  - name: file:seeded
    managedBy: store
    gridSubsets: [{gridSet: FileGrid}]
    formats: [image/png]
    source: {type: testpattern}
`

// lazyEntries are stored entries as REST clients write them: quoted and
// plain names, ids, subsets inline and as blocks, keys in any order,
// multi-line and commented values, anchors inside an entry, entries that
// do not build or do not fit the file.
var lazyEntries = []string{
	"name: s:plain\ngridSubsets:\n  - gridSet: EPSG:4326\n    extent: [-10, -5, 10, 5.5]\n    zoomStop: 9\n  - zoomStart: 1\n    gridSet: EPSG:900913\nformats: [image/png, image/jpeg]\nsource: {type: wms, url: 'https://maps.example.org/wms?map=a # b', layers: roads}\n",
	"name: \"s: quoted\"\nid: 's-quoted'\ntitle: |\n  two\n\n  lines\ngridSubsets: [{gridSet: FileGrid}]\nformats: [image/png]\nsource: {type: testpattern}\n",
	"name: s:anchors # a comment\nid: s-anchors\ngridSubsets:\n  - &sub {gridSet: EPSG:4326, zoomStop: 5}\nformats: &f [image/png]\nparameterFilters:\n  - {key: STYLES, default: \"\", values: [\"\", a, 'b c']}\n  - {key: CQL_FILTER, default: INCLUDE, regex: \"[A-Z_ >0-9]*\"}\nexpireCacheList: [{minZoom: 0, expiration: 0}, {minZoom: 5, expiration: 86400}]\nrenderOnMiss: {enabled: true, zoomStart: 1, zoomStop: 4}\ncoverage: {geometry: \"POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))\", buffer: 100}\nsource:\n  type: testpattern\n  formats: *f\n",
	"gridSubsets:\n  - gridSet: EPSG:4326\nname: s:name-last\nformats: [image/png]\nmetatiling: [2, 8]\ngutter: 4\nsource: {type: testpattern}\n",
	"name: s:bad-format\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/bogus]\nsource: {type: testpattern}\n",
	"name: s:unknown-grid\ngridSubsets:\n  - gridSet: Nope\nformats: [image/png]\nsource: {type: testpattern}\n",
	"name: s:unknown-key\ncolour: red\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n",
	"name: file:a\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n",
	"name: s:takes-file-id\nid: file:a\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n",
	"name: s:ab/c\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n",
	"name: '123'\nid: \"true\"\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n",
}

// storedDoc is a stored configuration's document holding entries, with a
// stored grid set and a deletion mark, as the REST interface writes it.
func storedDoc(t *testing.T, entries []string) []byte {
	t.Helper()
	grid, err := entryNode([]byte("id: StoredGrid\nepsg: 3857\nextent: [-20037508.34, -20037508.34, 20037508.34, 20037508.34]\nresolutions: [156543.03392804097, 78271.51696402048]\n"), "id", "StoredGrid")
	if err != nil {
		t.Fatal(err)
	}
	d := entryDoc{GridSets: []*yaml.Node{grid}, Layers: []*yaml.Node{}, Deleting: []Deletion{{Name: "gone", ID: "gone"}}}
	for _, e := range entries {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(e), &n); err != nil {
			t.Fatalf("entry %q: %v", e, err)
		}
		d.Layers = append(d.Layers, n.Content[0])
	}
	b, err := marshalEntries(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLazyCatalogueIsTheEagerOne: a catalogue whose stored layers are
// built on first use answers as the one built whole: the same layers
// (none of those that do not build or fit), each with the same version
// (ETag) and document, the same ids, grid sets and users of grid sets.
func TestLazyCatalogueIsTheEagerOne(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i := range lazyEntries {
		// Every entry alone, then all of them in one document.
		entries := lazyEntries[i : i+1]
		if i == len(lazyEntries)-1 {
			entries = lazyEntries
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			doc := storedDoc(t, entries)
			if _, _, ok := splitStored(doc); !ok {
				t.Fatalf("the document is not split, so the test would compare the eager catalogue with itself:\n%s", doc)
			}
			st := StoredConfig{Version: 3, Doc: doc}
			eager, _, _, err := merge([]byte(lazyFile), "lazy.yaml", st)
			if err != nil {
				t.Fatal(err)
			}
			lazy, _, err := mergeLazy([]byte(lazyFile), "lazy.yaml", st, nil, log)
			if err != nil {
				t.Fatal(err)
			}
			compareCatalogues(t, eager, lazy)
		})
	}
}

func compareCatalogues(t *testing.T, eager, lazy *Catalogue) {
	t.Helper()
	var built []string
	for _, n := range lazy.Names() {
		if _, ok := lazy.Layer(n); ok {
			built = append(built, n)
		}
	}
	if want := eager.Names(); !slices.Equal(built, want) {
		t.Fatalf("layers %q, want %q", built, want)
	}
	for _, n := range built {
		e, _ := eager.Layer(n)
		l, _ := lazy.Layer(n)
		if l.Version != e.Version || l.ID != e.ID || l.Managed != e.Managed || l.Title != e.Title || !slices.Equal(l.Formats, e.Formats) ||
			len(l.Subsets) != len(e.Subsets) || len(l.Filters) != len(e.Filters) || l.SourceType != e.SourceType {
			t.Errorf("layer %s: got %+v, want %+v", n, l, e)
		}
		ed, _ := eager.Document(n)
		ld, _ := lazy.Document(n)
		if !bytes.Equal(ed, ld) {
			t.Errorf("layer %s: document\n%s\nwant\n%s", n, ld, ed)
		}
		if b, ok := lazy.ByID(e.ID); !ok || b.Name != n {
			t.Errorf("ByID(%q): %v, %v", e.ID, b, ok)
		}
	}
	ids := func(c *Catalogue) (out []string) {
		for _, g := range c.GridSets() {
			out = append(out, g.ID)
		}
		return out
	}
	if len(built) == len(lazy.Names()) {
		if got, want := ids(lazy), ids(eager); !slices.Equal(got, want) {
			t.Errorf("grid sets %q, want %q", got, want)
		}
		for _, id := range eager.GridSetIDs() {
			if got, want := lazy.UsersOf(id), eager.UsersOf(id); !slices.Equal(got, want) {
				t.Errorf("users of %s: %q, want %q", id, got, want)
			}
		}
	}
	if !slices.Equal(lazy.GridSetIDs(), eager.GridSetIDs()) || len(lazy.Deletions()) != len(eager.Deletions()) {
		t.Errorf("grid sets %q and %d deletion marks, want %q and %d", lazy.GridSetIDs(), len(lazy.Deletions()), eager.GridSetIDs(), len(eager.Deletions()))
	}
}

// TestLazyCatalogueBuildsOnUse: at load only the index is made; a layer
// is built when asked for, and a reload after one entry changed builds
// that one again, taking the others over as they were (built or not).
func TestLazyCatalogueBuildsOnUse(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	entry := func(i int, title string) string {
		return fmt.Sprintf("name: s:l%d\ntitle: %s\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n", i, title)
	}
	var entries []string
	for i := range 50 {
		entries = append(entries, entry(i, "one"))
	}
	c1, _, err := mergeLazy([]byte(lazyFile), "lazy.yaml", StoredConfig{Version: 1, Doc: storedDoc(t, entries)}, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	k1 := c1.get()
	builtOf := func(k *contents) (n int) {
		for _, name := range k.names {
			if s := k.layers[name]; s.build == nil || s.l != nil || s.err != nil {
				n++
			}
		}
		return n
	}
	if n := builtOf(k1); n != 1 { // file:a, built with the file
		t.Fatalf("%d layers built at load, want 1 (the file's)", n)
	}
	if got := len(c1.Names()); got != 51 {
		t.Fatalf("%d names, want 51", got)
	}
	// The grid sets and their users come from the index.
	if gs := c1.GridSets(); len(gs) != 1 || gs[0].ID != "EPSG:4326" {
		t.Fatalf("GridSets: %v", gs)
	}
	if u := c1.UsersOf("EPSG:4326"); len(u) != 51 {
		t.Fatalf("UsersOf(EPSG:4326): %d layers, want 51", len(u))
	}
	if n := builtOf(k1); n != 1 {
		t.Fatalf("%d layers built after GridSets and UsersOf, want 1", n)
	}
	if l, ok := c1.ByID("s:l7"); !ok || l.Title != "one" {
		t.Fatalf("ByID(s:l7): %+v, %v", l, ok)
	}
	c1.Layer("s:l8")
	if n := builtOf(k1); n != 3 {
		t.Fatalf("%d layers built after two were used, want 3", n)
	}
	entries[7] = entry(7, "two")
	c2, _, err := mergeLazy([]byte(lazyFile), "lazy.yaml", StoredConfig{Version: 2, Doc: storedDoc(t, entries)}, k1, log)
	if err != nil {
		t.Fatal(err)
	}
	k2 := c2.get()
	if k2.layers["s:l8"] != k1.layers["s:l8"] || k2.layers["s:l9"] != k1.layers["s:l9"] || k2.layers["s:l7"] == k1.layers["s:l7"] {
		t.Fatal("the unchanged entries' slots were not taken over, or the changed one was")
	}
	if l, ok := c2.Layer("s:l7"); !ok || l.Title != "two" {
		t.Fatalf("the changed layer: %+v, %v", l, ok)
	}
	if n := builtOf(k2); n != 3 {
		t.Fatalf("%d layers built after the reload and one use, want 3", n)
	}
}

// TestEntriesBudgetPerEntry: the node budget bounds each entry, not the
// document: a stored configuration of more nodes than one entry's budget
// is read; entries that together expand aliases beyond the document's
// size are refused.
func TestEntriesBudgetPerEntry(t *testing.T) {
	var b strings.Builder
	b.WriteString("layers:\n")
	for i := range 3 {
		fmt.Fprintf(&b, "  - name: l%d\n    values: [", i)
		for j := range 100_000 {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("a")
		}
		b.WriteString("]\n")
	}
	if _, err := ParseConfig([]byte(b.String())); err != nil {
		t.Fatalf("3 entries of 100,000 nodes each: %v", err)
	}
	// Entries of 8⁵ = 32,768 nodes each through aliases, in a few
	// hundred bytes each: within one entry's budget, beyond the document's.
	b.Reset()
	b.WriteString("layers:\n")
	for i := range 20 {
		fmt.Fprintf(&b, "  - name: l%d\n    l0: &l0 [x, x, x, x, x, x, x, x]\n", i)
		for d := 1; d < 5; d++ {
			fmt.Fprintf(&b, "    l%d: &l%d [", d, d)
			for j := range 8 {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "*l%d", d-1)
			}
			b.WriteString("]\n")
		}
	}
	if _, err := ParseConfig([]byte(b.String())); !errors.Is(err, errDocumentLarge) {
		t.Errorf("20 entries of 32,768 nodes through aliases: got %v, want %v", err, errDocumentLarge)
	}
}
