package layer

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestConfigWritesWhatMarshalWrites: a Config keeps its entries as text,
// yet the document it writes is, byte for byte, what yaml.Marshal writes
// for the entries parsed (each standing alone): for the entry shapes
// REST clients send, put into an empty document, read back and written
// again untouched, and after one of them is replaced and one deleted.
func TestConfigWritesWhatMarshalWrites(t *testing.T) {
	const grid = "id: StoredGrid\nepsg: 3857\nextent: [-20037508.34, -20037508.34, 20037508.34, 20037508.34]\nresolutions: [156543.03392804097, 78271.51696402048]\n"
	entries := append([]string{
		"name: s:long\ntitle: " + strings.Repeat("a long title ", 20) + "\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n",
		"name: s:literal\ndescription: |\n  first\n\n    indented\n  last\ncoverage: {geometry: \"POINT(1 2)\", buffer: }\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n",
		"# a head comment\nname: s:commented\ngridSubsets: [{gridSet: EPSG:4326}] # inline\nformats: [image/png]\nsource: {type: testpattern}\n",
	}, lazyEntries...)
	// want is the document the entries make, parsed whole and written by
	// yaml.Marshal.
	want := func(doc []byte) []byte {
		t.Helper()
		nc, err := parseNodes(doc)
		if err != nil {
			t.Fatal(err)
		}
		out, err := marshalEntries(entryDoc{GridSets: nc.gridSets, Layers: nc.layers, Deleting: nc.deleting})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	cfg, err := ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.PutGridSet("StoredGrid", []byte(grid)); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = entryKeyOf(t, e)
		if _, err := cfg.PutLayer(names[i], []byte(e)); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	cfg.MarkDeleted(Deletion{Name: "gone", ID: "gone"})
	doc, err := cfg.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if w := want(doc); !bytes.Equal(doc, w) {
		t.Fatalf("written:\n%s\nyaml.Marshal writes:\n%s", doc, w)
	}
	if _, _, ok := splitStored(doc); !ok {
		t.Fatalf("the document is not in the layout the lazy catalogue reads:\n%s", doc)
	}
	again, err := ParseConfig(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Layers(); fmt.Sprint(got) != fmt.Sprint(names) {
		t.Fatalf("layers read back %q, want %q", got, names)
	}
	if b, _ := again.Bytes(); !bytes.Equal(b, doc) {
		t.Fatalf("read back and written untouched:\n%s\nwant\n%s", b, doc)
	}
	if _, err := again.PutLayer(names[1], []byte(strings.Replace(entries[1], "first", "changed", 1))); err != nil {
		t.Fatal(err)
	}
	again.DeleteLayer(names[2])
	b, _ := again.Bytes()
	if w := want(b); !bytes.Equal(b, w) {
		t.Fatalf("after a change:\n%s\nyaml.Marshal writes:\n%s", b, w)
	}
	if !bytes.Contains(b, []byte("changed")) || bytes.Contains(b, []byte("s:commented")) {
		t.Fatalf("the change is not in the document:\n%s", b)
	}
	// A document in another layout is read whole and written in this one.
	other := "layers:\n  - name: s:a\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n    source: {type: testpattern}\n"
	c, err := ParseConfig([]byte(other))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Bytes(); !bytes.Equal(b, want([]byte(other))) {
		t.Fatalf("another layout written:\n%s\nwant\n%s", b, want([]byte(other)))
	}
}

func entryKeyOf(t *testing.T, entry string) string {
	t.Helper()
	nc, err := parseNodes([]byte("layers:\n  - " + strings.ReplaceAll(strings.TrimSuffix(entry, "\n"), "\n", "\n    ") + "\n"))
	if err != nil || len(nc.layers) != 1 {
		t.Fatalf("entry %q: %v", entry, err)
	}
	return entryKey(nc.layers[0], "name")
}

// TestMultilineStringsRoundTrip: a string that spans lines and starts
// with a space or a tab (a title pasted from another document, say) is
// stored and read back as it was, through PutLayer and PutLayerEntry; it
// was written as a block scalar whose indentation indicator did not
// survive the entry being cut out and indented again, and the stored
// configuration no longer parsed.
func TestMultilineStringsRoundTrip(t *testing.T) {
	for _, title := range []string{" Roads\nand rivers", "  two\n  spaces", "\ttab\nfirst", "a\n\tb", "plain\nlines\n", " \n "} {
		for _, how := range []string{"PutLayer", "PutLayerEntry"} {
			cfg, err := ParseConfig(nil)
			if err != nil {
				t.Fatal(err)
			}
			if how == "PutLayer" {
				entry := fmt.Sprintf("name: l\ntitle: %q\ngridSubsets: [{gridSet: EPSG:4326}]\nformats: [image/png]\nsource: {type: testpattern}\n", title)
				_, err = cfg.PutLayer("l", []byte(entry))
			} else {
				_, err = cfg.PutLayerEntry(Entry{Name: "l", Title: title, Formats: []string{"image/png"}})
			}
			if err != nil {
				t.Fatalf("%s %q: %v", how, title, err)
			}
			doc, err := cfg.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseConfig(doc)
			if err != nil {
				t.Fatalf("%s %q: the stored configuration does not parse back: %v\n%s", how, title, err, doc)
			}
			b, _ := again.Bytes()
			nc, err := parseNodes(b)
			if err != nil || len(nc.layers) != 1 {
				t.Fatalf("%s %q: %v\n%s", how, title, err, b)
			}
			var e Entry
			if err := nc.layers[0].Decode(&e); err != nil || e.Title != title {
				t.Errorf("%s %q: read back title %q (%v)\n%s", how, title, e.Title, err, b)
			}
		}
	}
}
