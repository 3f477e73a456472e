package gwc

import (
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// piecesDoc is a gridSet document of about size bytes whose description
// comes in pieces: a comment after every character splits its text into
// as many character data tokens.
func piecesDoc(size int) []byte {
	const head, tail = "<gridSet><name>g</name><description>", "</description></gridSet>"
	return []byte(head + strings.Repeat("a<!---->", (size-len(head)-len(tail))/8) + tail)
}

// TestTextInPiecesIsLinear: a document of 468 KiB whose text comes in
// 60,000 pieces is read with a few times its size in allocations (joined
// with +=, every piece copied the whole text so far: some 7 GB allocated
// and 1.5 s).
func TestTextInPiecesIsLinear(t *testing.T) {
	doc := piecesDoc(468 << 10)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	root, err := parseTree(doc)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if d := root.children[1]; len(d.text) != (len(doc)-60)/8 {
		t.Fatalf("description of %d characters, want %d", len(d.text), (len(doc)-60)/8)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("reading %d bytes allocated %d MiB (in %v), want at most 32 MiB", len(doc), alloc>>20, took)
	}
	t.Logf("%d KiB in %v", len(doc)>>10, took)
}

// BenchmarkTextInPieces reads documents of growing size whose text comes
// in pieces: the time per byte stays flat.
func BenchmarkTextInPieces(b *testing.B) {
	for _, kib := range []int{117, 468} {
		doc := piecesDoc(kib << 10)
		b.Run(strconv.Itoa(kib)+"KiB", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := parseTree(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReadXML: the tree holds every element in document order with its
// attributes, namespace and whole text (split by a comment, a CDATA
// section and entities); an element with child elements is an element
// node, one without a text node.
func TestReadXML(t *testing.T) {
	root, err := readXML([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<r xmlns="urn:x" a="1"><k>one<!-- c -->,<![CDATA[<two>]]>,&amp;&#x33;</k><k b="2"/>tail</r>`))
	if err != nil {
		t.Fatal(err)
	}
	if root.name != "r" || root.space != "urn:x" || root.kind != elemNode || len(root.attrs) != 2 || len(root.children) != 2 {
		t.Fatalf("root %+v", root)
	}
	if k := root.children[0]; k.name != "k" || k.kind != textNode || k.text != "one,<two>,&3" || len(k.children) != 0 {
		t.Errorf("first child %+v, want <k> with the text one,<two>,&3", k)
	}
	if k := root.children[1]; k.kind != textNode || len(k.attrs) != 1 || k.attrs[0].Name.Local != "b" || k.attrs[0].Value != "2" || k.text != "" {
		t.Errorf("second child %+v, want <k b=\"2\"/>", k)
	}
	if root.text != "tail" {
		t.Errorf("root text %q, want its own text only", root.text)
	}
}

// TestReadXMLRefuses: what is no single well-formed tree is refused with
// a one-line message, a directive with errDirective.
func TestReadXMLRefuses(t *testing.T) {
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
		_, err := readXML([]byte(c.doc))
		if se, ok := errors.AsType[*xmlSyntaxError](err); !ok || err.Error() != c.want {
			t.Errorf("%s: got %v, want a syntax error %q", c.name, err, c.want)
		} else if se.Msg == "" {
			t.Errorf("%s: no message", c.name)
		}
	}
	for _, doc := range []string{`<!DOCTYPE r [<!ENTITY e "x">]><r>&e;</r>`, `<r/><!DOCTYPE r>`} {
		if _, err := readXML([]byte(doc)); !errors.Is(err, errDirective) {
			t.Errorf("%s: got %v, want errDirective", doc, err)
		}
	}
	if root, err := readXML([]byte(`<?xml version="1.0" encoding="us-ascii"?><r/>`)); err != nil || root.name != "r" {
		t.Errorf("a US-ASCII declaration (a subset of UTF-8): got %v, %v", root, err)
	}
}
