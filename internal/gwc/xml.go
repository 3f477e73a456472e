package gwc

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/xmltree"
)

func errDTD() error {
	return apperr.Invalidf("DTDs are not allowed: the body must not contain <!DOCTYPE or other XML directives")
}

// parseXML parses body into a tree rooted at the document element. expect
// describes the wanted document for the empty-body message.
func parseXML(body []byte, expect string) (*node, error) {
	body = trimBOM(body)
	if hasDoctype(body) {
		return nil, errDTD()
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, emptyBody(expect)
	}
	root, err := xmltree.Parse(body)
	if errors.Is(err, xmltree.ErrDirective) {
		return nil, errDTD()
	}
	if se, ok := errors.AsType[*xmltree.SyntaxError](err); ok {
		return nil, apperr.Invalidf("Malformed XML: %s", se.Msg)
	}
	if err != nil {
		return nil, apperr.Invalidf("Malformed XML: %v", err)
	}
	return nodeFromXML(root)
}

// nodeFromXML makes the format-neutral tree of an XML element: an element
// without child elements is a text node; one with them may hold no text
// beside them.
func nodeFromXML(e *xmltree.Element) (*node, error) {
	n := &node{name: e.Name.Local, kind: elemNode}
	if len(e.Kids) == 0 {
		n.kind, n.text = textNode, e.Text
		return n, nil
	}
	if s := strings.TrimSpace(e.Text); s != "" {
		return nil, apperr.Invalidf("Unexpected text in element %s: %s", apperr.Show(n.name), apperr.Show(s))
	}
	n.children = make([]*node, 0, len(e.Kids))
	for _, k := range e.Kids {
		c, err := nodeFromXML(k)
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, c)
	}
	return n, nil
}

// hasDoctype reports whether b contains "<!DOCTYPE" in any letter case.
func hasDoctype(b []byte) bool {
	const word = "<!DOCTYPE"
	for {
		i := bytes.Index(b, []byte("<!"))
		if i < 0 {
			return false
		}
		if len(b)-i >= len(word) && strings.EqualFold(string(b[i:i+len(word)]), word) {
			return true
		}
		b = b[i+2:]
	}
}

// xmlEscape returns s escaped for XML text and attribute values.
func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
