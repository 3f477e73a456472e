package gwc

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"

	"tilecache/internal/xmltree"
)

// Namespace is the XML namespace of tilecache's own elements in
// GeoWebCache documents, written with the prefix tc.
const Namespace = "https://tilecache.dev/xml/1"

// gwcNamespacePrefix starts the namespaces of geowebcache.xml
// (http://geowebcache.org/schema/1.x.x); REST bodies have none.
const gwcNamespacePrefix = "http://geowebcache.org/schema/"

// elem is one parsed element. used marks what a decoder has consumed, so
// that the rest can be reported.
type elem struct {
	name     xml.Name
	attrs    []xml.Attr
	text     string
	kids     []*elem
	used     bool
	attrUsed map[string]bool
}

// parseTree reads a whole document into a tree of elements
// (xmltree.Parse: strict, one root, no DTD).
func parseTree(data []byte) (*elem, error) {
	root, err := xmltree.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("malformed XML: %w", err)
	}
	return elemOf(root), nil
}

// elemOf makes the decoder's element of a parsed one.
func elemOf(x *xmltree.Element) *elem {
	e := &elem{name: x.Name, attrs: x.Attrs, text: x.Text}
	if len(x.Kids) > 0 {
		e.kids = make([]*elem, len(x.Kids))
		for i, k := range x.Kids {
			e.kids[i] = elemOf(k)
		}
	}
	return e
}

// label is how an element is named in paths: tc:x in tilecache's
// namespace, {space}x in any other foreign one.
func (e *elem) label() string {
	switch {
	case isGWC(e.name.Space):
		return e.name.Local
	case e.name.Space == Namespace:
		return "tc:" + e.name.Local
	default:
		return "{" + e.name.Space + "}" + e.name.Local
	}
}

func isGWC(space string) bool { return space == "" || strings.HasPrefix(space, gwcNamespacePrefix) }

// is reports whether e has the label name (tc:x for tilecache's).
func (e *elem) is(name string) bool { return e.label() == name }

// decoder walks one document, collecting every problem with its path.
type decoder struct {
	problems    []string
	unsupported []string
}

func (d *decoder) fail(path, format string, args ...any) {
	d.problems = append(d.problems, path+": "+fmt.Sprintf(format, args...))
}

// one consumes e's child named name, nil if absent; a child given twice is
// a problem.
func (d *decoder) one(e *elem, path, name string) *elem {
	var found *elem
	n := 0
	for _, k := range e.kids {
		if k.is(name) {
			k.used = true
			n++
			if found == nil {
				found = k
			}
		}
	}
	if n > 1 {
		d.fail(path+"/"+name, "given %d times", n)
	}
	return found
}

// all consumes every child of e named name.
func all(e *elem, name string) []*elem {
	var out []*elem
	for _, k := range e.kids {
		if k.is(name) {
			k.used = true
			out = append(out, k)
		}
	}
	return out
}

// attr consumes e's attribute name.
func (e *elem) attr(name string) (string, bool) {
	for _, a := range e.attrs {
		if a.Name.Space == "" && a.Name.Local == name {
			if e.attrUsed == nil {
				e.attrUsed = map[string]bool{}
			}
			e.attrUsed[name] = true
			return a.Value, true
		}
	}
	return "", false
}

// leftovers reports e's children and attributes nothing consumed, and
// non-blank text in an element that has children.
func (d *decoder) leftovers(e *elem, path string) {
	for _, a := range e.attrs {
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") || e.attrUsed[a.Name.Local] {
			continue
		}
		d.unsupported = append(d.unsupported, path+"/@"+a.Name.Local)
	}
	for _, k := range e.kids {
		if !k.used {
			d.unsupported = append(d.unsupported, path+"/"+k.label())
		}
	}
}

// err returns every problem found as one message, nil if none.
func (d *decoder) err() []string {
	var out []string
	if len(d.unsupported) > 0 {
		out = append(out, "unsupported elements: "+strings.Join(d.unsupported, ", "))
	}
	return append(out, d.problems...)
}

// writer writes indented XML the way GeoWebCache (XStream) does: two
// spaces per level, one element per line.
type writer struct {
	b     bytes.Buffer
	depth int
}

func (w *writer) indent() {
	for range w.depth {
		w.b.WriteString("  ")
	}
}

// open starts element name with attributes given as name, value pairs.
func (w *writer) open(name string, attrs ...string) {
	w.indent()
	w.b.WriteString("<" + name)
	w.attrs(attrs)
	w.b.WriteString(">\n")
	w.depth++
}

func (w *writer) close(name string) {
	w.depth--
	w.indent()
	w.b.WriteString("</" + name + ">\n")
}

// leaf writes <name>text</name>.
func (w *writer) leaf(name, text string) {
	w.indent()
	w.b.WriteString("<" + name + ">")
	xml.EscapeText(&w.b, []byte(text))
	w.b.WriteString("</" + name + ">\n")
}

// empty writes <name a="v"/>.
func (w *writer) empty(name string, attrs ...string) {
	w.indent()
	w.b.WriteString("<" + name)
	w.attrs(attrs)
	w.b.WriteString("/>\n")
}

func (w *writer) attrs(pairs []string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		w.b.WriteString(" " + pairs[i] + `="`)
		xml.EscapeText(&w.b, []byte(pairs[i+1]))
		w.b.WriteString(`"`)
	}
}
