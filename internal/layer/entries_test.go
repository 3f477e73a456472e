package layer

import (
	"errors"
	"strings"
	"testing"
)

// aliasedFile shares nodes between entries: anchors in one, aliases in
// others, one of them a whole entry.
const aliasedFile = `
gridSets:
  - &grid {id: G, epsg: 4326, extent: &world [-180, -90, 180, 90], resolutions: [0.703125]}
layers:
  - {name: a, gridSubsets: &subs [{gridSet: G, extent: *world}], formats: &f [image/png], source: {type: testpattern}}
  - {name: b, gridSubsets: *subs, formats: *f, managedBy: store, source: {type: testpattern}}
`

// TestEntriesStandAlone: a layer's definition, the entries the first start
// copies into the store and the merged catalogue do not depend on
// anchors of other entries (a definition holding "*subs" alone did not
// parse).
func TestEntriesStandAlone(t *testing.T) {
	c, err := Parse([]byte(aliasedFile), "aliased.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		doc, _ := c.Document(name)
		if strings.ContainsAny(string(doc), "*&") {
			t.Errorf("the definition of %s holds an anchor or alias:\n%s", name, doc)
		}
		l, err := ParseDefinition(doc, name)
		if err != nil {
			t.Fatalf("the definition of %s: %v\n%s", name, err, doc)
		}
		if want, _ := c.Layer(name); l.Version != want.Version || l.Subsets[0].GridSet.ID != "G" {
			t.Errorf("%s parsed again: version %s, subsets %+v; want version %s", name, l.Version, l.Subsets, want.Version)
		}
	}
	seed, err := seedEntries([]byte(aliasedFile))
	if err != nil || seed == nil {
		t.Fatalf("seedEntries: %v", err)
	}
	if _, err := ParseConfig(seed); err != nil {
		t.Fatalf("the entries copied into the store: %v\n%s", err, seed)
	}
	merged, _, err := Merge([]byte(aliasedFile), "aliased.yaml", StoredConfig{Version: 1, Doc: seed})
	if err != nil {
		t.Fatalf("Merge with the copied entries: %v", err)
	}
	if _, ok := merged.Layer("b"); !ok {
		t.Errorf("the merged catalogue has no layer b: %v", merged.Names())
	}
}

// TestEntriesNullsWritten: a null written as nothing in a flow mapping
// ({buffer}) is written back as null, not as an empty quoted string
// (which a number does not take).
func TestEntriesNullsWritten(t *testing.T) {
	const file = "layers:\n  - name: a\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n" +
		"    coverage: {geometry: \"POLYGON((1 0,0 1,0 0))\", buffer}\n    source: {type: testpattern}\n"
	c, err := Parse([]byte(file), "nulls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := c.Document("a")
	if _, err := ParseDefinition(doc, "a"); err != nil {
		t.Errorf("the definition of a: %v\n%s", err, doc)
	}
	// In block style an empty value is written back as it was, so that
	// the layer's version (a hash of its entry) stays what it was.
	c, err = Parse([]byte(strings.Replace(file, "    formats:", "    description:\n    formats:", 1)), "nulls.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if doc, _ := c.Document("a"); !strings.Contains(string(doc), "description:\n") {
		t.Errorf("the empty description is not written as it was:\n%s", doc)
	}
}

// TestEntriesAliasBounds: aliases of aliases are expanded up to a budget,
// and an alias inside the node it names is refused.
func TestEntriesAliasBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("layers:\n  - name: a\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n")
	b.WriteString("    source:\n      type: testpattern\n      l0: &l0 [x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 8; i++ {
		b.WriteString("      l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [")
		for j := range 8 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	if _, err := ParseConfig([]byte(b.String())); !errors.Is(err, errEntriesLarge) {
		t.Errorf("8⁸ nodes through aliases: got %v, want %v", err, errEntriesLarge)
	}
	if _, err := ParseConfig([]byte("layers:\n  - &a {name: a, self: [*a]}\n")); !errors.Is(err, errAliasCycle) {
		t.Errorf("an alias inside its anchor: got %v, want %v", err, errAliasCycle)
	}
}
