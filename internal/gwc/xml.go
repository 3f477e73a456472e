package gwc

import (
	"bytes"
	"encoding/xml"
	"errors"
	"strings"

	"tilecache/internal/apperr"
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
	root, err := readXML(body)
	if errors.Is(err, errDirective) {
		return nil, errDTD()
	}
	if se, ok := errors.AsType[*xmlSyntaxError](err); ok {
		return nil, apperr.Invalidf("Malformed XML: %s", se.Msg)
	}
	if err != nil {
		return nil, apperr.Invalidf("Malformed XML: %v", err)
	}
	if err := noMixedText(root); err != nil {
		return nil, err
	}
	return root, nil
}

// noMixedText refuses a REST body's element that holds text beside its
// child elements (the first in document order).
func noMixedText(n *node) error {
	if n.kind != elemNode {
		return nil
	}
	if s := strings.TrimSpace(n.text); s != "" {
		return apperr.Invalidf("Unexpected text in element %s: %s", apperr.Show(n.name), apperr.Show(s))
	}
	for _, c := range n.children {
		if err := noMixedText(c); err != nil {
			return err
		}
	}
	return nil
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
