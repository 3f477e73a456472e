// Package xmltree reads a whole XML document into a tree of elements,
// strictly: UTF-8 only, exactly one root element, no DTD or other
// directive, no text outside the root. The REST bodies and the
// GeoWebCache documents (both in internal/gwc) are read with it.
package xmltree

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Element is one element of a document.
type Element struct {
	Name  xml.Name
	Attrs []xml.Attr
	// Text is the element's own character data, whole: comments, CDATA
	// sections and entities split it into pieces, which are joined.
	Text string
	Kids []*Element
}

// ErrDirective is the error of a document holding a DTD (<!DOCTYPE …>)
// or another directive.
var ErrDirective = errors.New("DTDs are not accepted")

// SyntaxError is a document that is not one well-formed XML tree.
type SyntaxError struct {
	Msg  string // one line, e.g. "unexpected EOF", "more than one root element"
	Line int    // where the decoder stopped; 0 when not known
}

func (e *SyntaxError) Error() string {
	if e.Line > 0 {
		return "line " + strconv.Itoa(e.Line) + ": " + e.Msg
	}
	return e.Msg
}

// Parse reads data into its tree, returning the root element; the error
// is ErrDirective or a *SyntaxError. An element's text pieces are gathered
// in a builder, so reading is linear in the document's size.
func Parse(data []byte) (*Element, error) {
	type open struct {
		e    *Element
		text strings.Builder
	}
	var (
		stack []*open
		root  *Element
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
			e := &Element{Name: t.Name, Attrs: t.Attr}
			switch {
			case len(stack) > 0:
				p := stack[len(stack)-1].e
				p.Kids = append(p.Kids, e)
			case root != nil:
				return nil, &SyntaxError{Msg: "more than one root element"}
			default:
				root = e
			}
			stack = append(stack, &open{e: e})
		case xml.EndElement:
			top := stack[len(stack)-1]
			top.e.Text = top.text.String()
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(t)
			} else if len(bytes.TrimSpace(t)) != 0 {
				return nil, &SyntaxError{Msg: "text outside the root element"}
			}
		case xml.Directive:
			return nil, ErrDirective
		}
	}
	if root == nil {
		return nil, &SyntaxError{Msg: "no root element"}
	}
	return root, nil
}

// syntaxError makes the decoder's error one line.
func syntaxError(err error) *SyntaxError {
	se := &SyntaxError{Msg: strings.TrimPrefix(err.Error(), "xml: ")}
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
