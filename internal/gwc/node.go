package gwc

import (
	"encoding/xml"
	"math"
	"strconv"
	"strings"

	"tilecache/internal/apperr"
)

// nodeKind tells the three shapes of a tree node apart.
type nodeKind uint8

const (
	textNode  nodeKind = iota // XML element without child elements; JSON string, number, boolean or null
	elemNode                  // XML element with child elements; JSON object
	arrayNode                 // JSON array; its children carry the array's name
)

// node is one element of the tree every decoder of the package walks,
// built by the XML reader (xmlread.go) and the JSON parser (json.go).
type node struct {
	name     string
	kind     nodeKind
	text     string  // the text (JSON: decoded string or number/boolean literal; XML: the element's own, whole)
	children []*node // elemNode: members in document order; arrayNode: elements
	json     bool    // built from JSON (only changes how errors describe the node)
	null     bool    // JSON null inside an array
	raw      []byte  // JSON object: its text, as in the body

	// XML only: the namespace and the attributes; and what a document
	// decoder (decoder.go) consumed, so that the rest can be reported.
	space    string
	attrs    []xml.Attr
	used     bool
	attrUsed map[string]bool
}

// describe names what n is, for "expected X, got Y" messages.
func (n *node) describe() string {
	switch {
	case n.kind == arrayNode:
		return "an array"
	case n.kind == elemNode && n.json:
		return "an object"
	case n.kind == elemNode:
		return "element <" + apperr.Show(n.children[0].name) + ">"
	case n.null:
		return "null"
	}
	return apperr.Show(strings.TrimSpace(n.text))
}

// text returns the text of a scalar node, or an error naming field if n is
// not a scalar.
func text(n *node, field, want string) (string, error) {
	if n.kind != textNode || n.null {
		return "", apperr.Invalidf("Invalid value for %s: expected %s, got %s", field, want, n.describe())
	}
	return n.text, nil
}

// trimmedText is text without surrounding whitespace.
func trimmedText(n *node, field string) (string, error) {
	s, err := text(n, field, "text")
	return strings.TrimSpace(s), err
}

// elems returns the children of an element node. An empty text node (JSON
// "", XML <x/> or <x> </x>) is an element without children.
func elems(n *node, field string) ([]*node, error) {
	switch {
	case n.kind == elemNode:
		return n.children, nil
	case n.kind == textNode && !n.null && strings.TrimSpace(n.text) == "":
		return nil, nil
	}
	want := "elements"
	if n.json {
		want = "an object"
	}
	return nil, apperr.Invalidf("Invalid value for %s: expected %s, got %s", field, want, n.describe())
}

// items returns the values of a list element: the elements of a JSON array,
// or n itself (one XML element, or a JSON object/scalar standing for a list of
// one as Jettison writes it).
func items(n *node) []*node {
	if n.kind == arrayNode {
		return n.children
	}
	return []*node{n}
}

// fieldSet rejects a field that occurs twice.
type fieldSet map[string]bool

func (s fieldSet) add(name string) error {
	if s[name] {
		return apperr.Invalidf("Duplicate field: %s", apperr.Show(name))
	}
	s[name] = true
	return nil
}

func unknownField(name string) error { return apperr.Invalidf("Unknown field: %s", apperr.Show(name)) }

func invalidValue(field, value string) error {
	return apperr.Invalidf("Invalid value for %s: %s", field, apperr.Show(value))
}

// isInteger reports whether s is an optional sign followed by ASCII digits.
func isInteger(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseInt64(n *node, field string) (int64, error) {
	s, err := text(n, field, "an integer")
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if !isInteger(s) {
		return 0, invalidValue(field, s)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, apperr.Invalidf("Invalid value for %s: %s is out of range", field, apperr.Show(s))
	}
	return v, nil
}

func parseInt(n *node, field string) (*int, error) {
	v, err := parseInt64(n, field)
	if err != nil {
		return nil, err
	}
	if v < math.MinInt || v > math.MaxInt {
		return nil, apperr.Invalidf("Invalid value for %s: %d is out of range", field, v)
	}
	i := int(v)
	return &i, nil
}

func parseBool(n *node, field string) (*bool, error) {
	s, err := text(n, field, "true or false")
	if err != nil {
		return nil, err
	}
	s = strings.TrimSpace(s)
	var b bool
	switch {
	case strings.EqualFold(s, "true"):
		b = true
	case strings.EqualFold(s, "false"):
		b = false
	default:
		return nil, invalidValue(field, s)
	}
	return &b, nil
}

// parseFloat reads a decimal number (optional sign, digits with an optional
// fraction, optional exponent). NaN and infinities, spelled out or reached by
// overflow, are rejected as not finite.
func parseFloat(n *node, field string) (float64, error) {
	s, err := text(n, field, "a number")
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if !isDecimal(s) {
		switch strings.ToLower(strings.TrimLeft(s, "+-")) {
		case "nan", "inf", "infinity":
			return 0, apperr.Invalidf("Invalid %s: %s is not a finite number", field, apperr.Show(s))
		}
		return 0, invalidValue(field, s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, apperr.Invalidf("Invalid %s: %s is not a finite number", field, apperr.Show(s))
	}
	if err != nil {
		return 0, invalidValue(field, s)
	}
	return f, nil
}

// isDecimal reports whether s is [+-]digits[.digits][(e|E)[+-]digits], where
// either the integer or the fraction digits may be empty but not both.
func isDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - start
	}
	mantissa := digits()
	if i < len(s) && s[i] == '.' {
		i++
		mantissa += digits()
	}
	if mantissa == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

func emptyBody(expect string) error {
	return apperr.Invalidf("Empty request body: expected %s", expect)
}

// trimBOM drops a leading UTF-8 byte order mark.
func trimBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// jsonRoot checks that a JSON document is an object with exactly one member
// whose key is one of names, and returns that member.
func jsonRoot(doc *node, names ...string) (*node, error) {
	want := strings.Join(names, " or ")
	if doc.kind != elemNode || len(doc.children) != 1 {
		return nil, apperr.Invalidf("The JSON document must be an object with the single key %s", want)
	}
	root := doc.children[0]
	for _, name := range names {
		if root.name == name {
			return root, nil
		}
	}
	return nil, apperr.Invalidf("Unknown root key %s: expected %s", apperr.Show(root.name), want)
}

// xmlRoot checks the root element's name.
func xmlRoot(doc *node, names ...string) (*node, error) {
	for _, name := range names {
		if doc.name == name {
			return doc, nil
		}
	}
	return nil, apperr.Invalidf("Unknown root element %s: expected %s", apperr.Show(doc.name), strings.Join(names, " or "))
}
