package gwc

import (
	"fmt"

	"tilecache/internal/apperr"
)

// Configuration is what DecodeConfiguration found in a geowebcache.xml.
type Configuration struct {
	// GridSets and Layers are the items decoded without a problem; each
	// layer passed the layer file's checks against the built-in grid sets
	// and the good grid sets.
	GridSets []GridSet
	Layers   []Layer
	// Problems lists, per item, why it was left out.
	Problems []Problem
	// NotMapped names the top-level elements that have no counterpart in
	// tilecache (version, serviceInformation, blobStores, …); they are
	// not errors.
	NotMapped []string
}

// Problem is why one item of a configuration was left out.
type Problem struct {
	// Item is gridSets/gridSet[i] or layers/wmsLayer[i] (0-based, in
	// document order) with its name when it has one, or
	// layers/<element>[i] for a kind of layer that is not supported.
	Item    string
	Message string
}

// DecodeConfiguration reads a whole geowebcache.xml (<gwcConfiguration>).
// An item with a problem is reported and left out; the others are still
// decoded. The error is only for a document that cannot be read at all.
func DecodeConfiguration(data []byte) (Configuration, error) {
	var c Configuration
	root, err := parseTree(data)
	if err != nil {
		return c, apperr.Wrap(apperr.Invalid, err, "invalid configuration: %v", err)
	}
	if !root.is("gwcConfiguration") {
		return c, apperr.Invalidf("invalid configuration: the root element is %s, not gwcConfiguration", root.label())
	}
	for _, k := range root.children {
		switch {
		case k.is("gridSets"):
			c.gridSets(k)
		case k.is("layers"):
		default:
			c.NotMapped = append(c.NotMapped, k.label())
		}
	}
	for _, k := range root.children {
		if k.is("layers") {
			c.layers(k)
		}
	}
	return c, nil
}

func (c *Configuration) gridSets(e *node) {
	for i, k := range e.children {
		item := fmt.Sprintf("gridSets/%s[%d]", k.label(), i)
		if !k.is("gridSet") {
			c.Problems = append(c.Problems, Problem{Item: item, Message: "unsupported element"})
			continue
		}
		var d decoder
		g := d.gridSet(k, "gridSet")
		if g.ID != "" {
			item += " " + g.ID
		}
		if p := d.err(); len(p) > 0 {
			c.Problems = append(c.Problems, Problem{Item: item, Message: invalid("grid set", p).Error()})
			continue
		}
		if err := Check(append(c.GridSets, g), nil); err != nil {
			c.Problems = append(c.Problems, Problem{Item: item, Message: err.Error()})
			continue
		}
		c.GridSets = append(c.GridSets, g)
	}
}

func (c *Configuration) layers(e *node) {
	for i, k := range e.children {
		item := fmt.Sprintf("layers/%s[%d]", k.label(), i)
		if !k.is("wmsLayer") {
			c.Problems = append(c.Problems, Problem{Item: item, Message: "only wmsLayer layers are supported"})
			continue
		}
		var d decoder
		l := d.layer(k, "wmsLayer")
		if l.Name != "" {
			item += " " + l.Name
		}
		if p := d.err(); len(p) > 0 {
			c.Problems = append(c.Problems, Problem{Item: item, Message: invalid("layer", p).Error()})
			continue
		}
		if err := c.checkLayer(l); err != nil {
			c.Problems = append(c.Problems, Problem{Item: item, Message: err.Error()})
			continue
		}
		c.Layers = append(c.Layers, l)
	}
}

// checkLayer checks one layer against the good grid sets and the layers
// already accepted (names and ids must differ).
func (c *Configuration) checkLayer(l Layer) error {
	id := l.ID
	if id == "" {
		id = l.Name
	}
	for _, o := range c.Layers {
		oid := o.ID
		if oid == "" {
			oid = o.Name
		}
		switch {
		case o.Name == l.Name:
			return apperr.Invalidf("layer %s is defined twice", apperr.Show(l.Name))
		case oid == id:
			return apperr.Invalidf("id %s is already the id of layer %s", apperr.Show(id), apperr.Show(o.Name))
		}
	}
	return Check(c.GridSets, []Layer{l})
}
