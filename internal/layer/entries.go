package layer

import (
	"errors"
	"fmt"

	"gopkg.in/yaml.v3"
)

// maxEntryNodes bounds the YAML nodes of one entry once its aliases are
// expanded (a few dozen make a layer), so that aliases of aliases cannot
// make a small entry a huge one. The entries of a document together hold
// at most as many nodes as the document has bytes, or maxEntryNodes if
// more: a document without aliases never holds more, so a stored
// configuration of any number of layers up to MaxStoredConfig is read,
// while many entries each expanding aliases up to the bound of one are
// refused.
const maxEntryNodes = 1 << 18

var (
	errAliasCycle    = errors.New("an alias refers to a node that holds it")
	errEntriesLarge  = errors.New("an entry holds more than 262144 YAML nodes once its aliases are expanded")
	errDocumentLarge = errors.New("the entries hold more YAML nodes, once their aliases are expanded, than the document has bytes")
)

// standalone makes entries that stand alone: each entry is recorded,
// stored and written back on its own (Document, Config), so an alias to an
// anchor of another entry would not parse there. Each alias is replaced
// by a copy of the node it names and anchors are dropped. A null written
// as nothing in a flow collection ({buffer}) is given its name, null:
// yaml.v3 writes it back there as an empty quoted string. Each entry has
// a budget of maxEntryNodes nodes, and the entries of a document of size
// bytes share one of max(size, maxEntryNodes).
type standalone struct {
	left, total int
	visiting    map[*yaml.Node]bool
}

func newStandalone(size int) *standalone {
	return &standalone{total: max(size, maxEntryNodes), visiting: map[*yaml.Node]bool{}}
}

// entry returns a copy of n without aliases or anchors.
func (s *standalone) entry(n *yaml.Node) (*yaml.Node, error) {
	s.left = maxEntryNodes
	return s.node(n, false)
}

// text returns the entry of n as yaml.Marshal writes it alone.
func (s *standalone) text(n *yaml.Node) ([]byte, error) {
	e, err := s.entry(n)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(e) // a node parsed from YAML always marshals
}

// readEntry reads back an entry that text wrote.
func readEntry(text []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, fmt.Errorf("read an entry back: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, errors.New("read an entry back: not one node")
	}
	return doc.Content[0], nil
}

// node copies n, which is inside a flow collection when flow is true.
func (s *standalone) node(n *yaml.Node, flow bool) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if s.visiting[n] {
		return nil, errAliasCycle
	}
	if s.left--; s.left < 0 {
		return nil, errEntriesLarge
	}
	if s.total--; s.total < 0 {
		return nil, errDocumentLarge
	}
	c := *n
	c.Anchor, c.Content = "", nil
	if flow && c.Kind == yaml.ScalarNode && c.Value == "" && c.ShortTag() == "!!null" {
		c.Value = "null"
	}
	if c.Kind == yaml.ScalarNode && multiline(c.Value) {
		c.Style = yaml.DoubleQuotedStyle // see quoteMultiline
	}
	flow = flow || c.Style&yaml.FlowStyle != 0
	if len(n.Content) > 0 {
		s.visiting[n] = true
		defer delete(s.visiting, n)
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			var err error
			if c.Content[i], err = s.node(k, flow); err != nil {
				return nil, err
			}
		}
	}
	return &c, nil
}
