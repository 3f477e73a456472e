package gwc

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
)

// Namespace is the XML namespace of tilecache's own elements in
// GeoWebCache documents, written with the prefix tc.
const Namespace = "https://tilecache.dev/xml/1"

// gwcNamespacePrefix starts the namespaces of geowebcache.xml
// (http://geowebcache.org/schema/1.x.x); REST bodies have none.
const gwcNamespacePrefix = "http://geowebcache.org/schema/"

// parseTree reads a whole layer, grid set or configuration document into
// its tree (readXML: strict, one root, no DTD).
func parseTree(data []byte) (*node, error) {
	root, err := readXML(data)
	if err != nil {
		return nil, fmt.Errorf("malformed XML: %w", err)
	}
	return root, nil
}

// label is how an element is named in paths: tc:x in tilecache's
// namespace, {space}x in any other foreign one.
func (n *node) label() string {
	switch {
	case isGWC(n.space):
		return n.name
	case n.space == Namespace:
		return "tc:" + n.name
	default:
		return "{" + n.space + "}" + n.name
	}
}

func isGWC(space string) bool { return space == "" || strings.HasPrefix(space, gwcNamespacePrefix) }

// is reports whether n has the label name (tc:x for tilecache's).
func (n *node) is(name string) bool { return n.label() == name }

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
func (d *decoder) one(e *node, path, name string) *node {
	var found *node
	n := 0
	for _, k := range e.children {
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
func all(e *node, name string) []*node {
	var out []*node
	for _, k := range e.children {
		if k.is(name) {
			k.used = true
			out = append(out, k)
		}
	}
	return out
}

// attr consumes n's attribute name.
func (n *node) attr(name string) (string, bool) {
	for _, a := range n.attrs {
		if a.Name.Space == "" && a.Name.Local == name {
			if n.attrUsed == nil {
				n.attrUsed = map[string]bool{}
			}
			n.attrUsed[name] = true
			return a.Value, true
		}
	}
	return "", false
}

// leftovers reports e's children and attributes nothing consumed, and
// non-blank text in an element that has children.
func (d *decoder) leftovers(e *node, path string) {
	for _, a := range e.attrs {
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") || e.attrUsed[a.Name.Local] {
			continue
		}
		d.unsupported = append(d.unsupported, path+"/@"+a.Name.Local)
	}
	for _, k := range e.children {
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
