package xmltree_test

import (
	"errors"
	"testing"

	"tilecache/internal/xmltree"
)

// TestParse: the tree holds every element in document order with its
// attributes, namespace and whole text (split by a comment, a CDATA
// section and entities).
func TestParse(t *testing.T) {
	root, err := xmltree.Parse([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<r xmlns="urn:x" a="1"><k>one<!-- c -->,<![CDATA[<two>]]>,&amp;&#x33;</k><k b="2"/>tail</r>`))
	if err != nil {
		t.Fatal(err)
	}
	if root.Name.Local != "r" || root.Name.Space != "urn:x" || len(root.Attrs) != 2 || len(root.Kids) != 2 {
		t.Fatalf("root %+v", root)
	}
	if k := root.Kids[0]; k.Name.Local != "k" || k.Text != "one,<two>,&3" || len(k.Kids) != 0 {
		t.Errorf("first child %+v, want <k> with the text one,<two>,&3", k)
	}
	if k := root.Kids[1]; len(k.Attrs) != 1 || k.Attrs[0].Name.Local != "b" || k.Attrs[0].Value != "2" || k.Text != "" {
		t.Errorf("second child %+v, want <k b=\"2\"/>", k)
	}
	if root.Text != "tail" {
		t.Errorf("root text %q, want its own text only", root.Text)
	}
}

// TestParseRefuses: what is no single well-formed tree is refused with a
// one-line message, a directive with ErrDirective.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"truncated", `<r><a>1</a>`, "line 1: unexpected EOF"},
		{"mismatched", `<r><a></b></r>`, "line 1: element <a> closed by </b>"},
		{"two roots", `<r/><s/>`, "more than one root element"},
		{"text after root", `<r/>x`, "text outside the root element"},
		{"not XML", `{"a":1}`, "text outside the root element"},
		{"only a comment", `<!-- x -->`, "no root element"},
		{"empty", ``, "no root element"},
		{"latin1", `<?xml version="1.0" encoding="ISO-8859-1"?><r/>`, `opening charset "ISO-8859-1": the body must be UTF-8`},
		{"invalid UTF-8", "<r>\xff</r>", "line 1: invalid UTF-8"},
		{"newline in the message", "<r>\n<a></b\n></r>", "line 3: element <a> closed by </b>"},
	} {
		_, err := xmltree.Parse([]byte(c.doc))
		if se, ok := errors.AsType[*xmltree.SyntaxError](err); !ok || err.Error() != c.want {
			t.Errorf("%s: got %v, want a syntax error %q", c.name, err, c.want)
		} else if se.Msg == "" {
			t.Errorf("%s: no message", c.name)
		}
	}
	for _, doc := range []string{`<!DOCTYPE r [<!ENTITY e "x">]><r>&e;</r>`, `<r/><!DOCTYPE r>`} {
		if _, err := xmltree.Parse([]byte(doc)); !errors.Is(err, xmltree.ErrDirective) {
			t.Errorf("%s: got %v, want ErrDirective", doc, err)
		}
	}
	if root, err := xmltree.Parse([]byte(`<?xml version="1.0" encoding="us-ascii"?><r/>`)); err != nil || root.Name.Local != "r" {
		t.Errorf("a US-ASCII declaration (a subset of UTF-8): got %v, %v", root, err)
	}
}
