package wire

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
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
	type open struct {
		n    *node
		text []byte
	}
	var (
		stack []*open
		root  *node
	)
	d := xml.NewDecoder(bytes.NewReader(body))
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		if strings.EqualFold(label, "utf8") || strings.EqualFold(label, "us-ascii") {
			return in, nil
		}
		return nil, errors.New("the body must be UTF-8")
	}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) && len(stack) == 0 {
			break
		}
		if err != nil {
			return nil, malformedXML(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root != nil && len(stack) == 0 {
				return nil, apperr.Invalidf("Malformed XML: more than one root element")
			}
			stack = append(stack, &open{n: &node{name: t.Name.Local, kind: elemNode}})
		case xml.EndElement:
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n := top.n
			if len(n.children) == 0 {
				n.kind, n.text = textNode, string(top.text)
			} else if s := strings.TrimSpace(string(top.text)); s != "" {
				return nil, apperr.Invalidf("Unexpected text in element %s: %s", apperr.Show(n.name), apperr.Show(s))
			}
			if len(stack) == 0 {
				root = n
			} else {
				parent := stack[len(stack)-1].n
				parent.children = append(parent.children, n)
			}
		case xml.CharData:
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				top.text = append(top.text, t...)
			} else if len(bytes.TrimSpace(t)) > 0 {
				return nil, apperr.Invalidf("Malformed XML: text outside the root element")
			}
		case xml.Directive:
			return nil, errDTD()
		}
	}
	if root == nil {
		return nil, apperr.Invalidf("Malformed XML: no root element")
	}
	return root, nil
}

func malformedXML(err error) error {
	msg := strings.TrimPrefix(err.Error(), "xml: ")
	if se, ok := errors.AsType[*xml.SyntaxError](err); ok {
		msg = se.Msg
	}
	return apperr.Invalidf("Malformed XML: %s", oneLine(msg))
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
