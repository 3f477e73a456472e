package gwc

// The one XML reader of the package: a whole document read strictly into
// the tree of nodes (node.go) that every decoder walks, the REST bodies'
// (xml.go) and the layer and grid set documents' (decoder.go). UTF-8
// only, exactly one root element, no DTD or other directive, no text
// outside the root. An XML element is a node with its local name, its
// namespace, its attributes and its own text, whole (comments, CDATA
// sections and entities split it into pieces, which are joined); it is an
// element node when it has child elements, a text node otherwise.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
)

// errDirective is the error of a document holding a DTD (<!DOCTYPE …>)
// or another directive.
var errDirective = errors.New("DTDs are not accepted")

// xmlSyntaxError is a document that is not one well-formed XML tree.
type xmlSyntaxError struct {
	Msg  string // one line, e.g. "unexpected EOF", "more than one root element"
	Line int    // where the decoder stopped; 0 when not known
}

func (e *xmlSyntaxError) Error() string {
	if e.Line > 0 {
		return "line " + strconv.Itoa(e.Line) + ": " + e.Msg
	}
	return e.Msg
}

// readXML reads data into its tree, returning the root element; the
// error is errDirective or an *xmlSyntaxError. An element's text pieces
// are gathered in a builder, so reading is linear in the document's size.
func readXML(data []byte) (*node, error) {
	type open struct {
		n    *node
		text strings.Builder
	}
	var (
		stack []*open
		root  *node
	)
	d := xml.NewDecoder(bytes.NewReader(data))
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
			return nil, syntaxError(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, space: t.Name.Space, attrs: t.Attr, kind: textNode}
			switch {
			case len(stack) > 0:
				p := stack[len(stack)-1].n
				p.kind, p.children = elemNode, append(p.children, n)
			case root != nil:
				return nil, &xmlSyntaxError{Msg: "more than one root element"}
			default:
				root = n
			}
			stack = append(stack, &open{n: n})
		case xml.EndElement:
			top := stack[len(stack)-1]
			top.n.text = top.text.String()
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(t)
			} else if len(bytes.TrimSpace(t)) != 0 {
				return nil, &xmlSyntaxError{Msg: "text outside the root element"}
			}
		case xml.Directive:
			return nil, errDirective
		}
	}
	if root == nil {
		return nil, &xmlSyntaxError{Msg: "no root element"}
	}
	return root, nil
}

// syntaxError makes the decoder's error one line.
func syntaxError(err error) *xmlSyntaxError {
	se := &xmlSyntaxError{Msg: strings.TrimPrefix(err.Error(), "xml: ")}
	if xe, ok := errors.AsType[*xml.SyntaxError](err); ok {
		se.Msg, se.Line = xe.Msg, xe.Line
	}
	se.Msg = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, se.Msg)
	return se
}
