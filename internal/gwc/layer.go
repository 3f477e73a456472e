package gwc

import (
	"fmt"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
)

// The documents decode into the layer package's entries, the schema the
// layer file has too (one type per concept; the names below are aliases).
type (
	// Layer is a GeoWebCache layer in the terms of tilecache's layer
	// file: one entry of its `layers:` list.
	Layer = layer.Entry
	// Subset is one entry of a layer's gridSubsets.
	Subset = layer.SubsetEntry
	// Rule is one expiration rule: seconds from zoom level MinZoom on.
	Rule = layer.ExpirationRule
	// RenderOnMiss is a layer's renderOnMiss entry.
	RenderOnMiss = layer.OnMissEntry
	// Coverage is a layer's coverage entry.
	Coverage = layer.Coverage
	// Filter is one parameter filter.
	Filter = layer.FilterEntry
	// WMSSource is a layer's `source:` mapping, of type wms in a
	// wmsLayer document.
	WMSSource = layer.Source
	// GridSet is a GeoWebCache grid set in the terms of tilecache's
	// layer file: one entry of its `gridSets:` list.
	GridSet = layer.GridSetEntry
)

// invalid builds the error of a document with problems.
func invalid(what string, problems []string) error {
	return apperr.Invalidf("invalid %s: %s", what, strings.Join(problems, "; "))
}

// DecodeLayer reads a GeoWebCache <wmsLayer> document. Every unsupported
// element and every malformed value is reported in one apperr.Invalid
// error. The result is not checked against grid sets or the source's
// rules: [Check] does that.
func DecodeLayer(data []byte) (Layer, error) {
	root, err := parseTree(data)
	if err != nil {
		return Layer{}, apperr.Wrap(apperr.Invalid, err, "invalid layer document: %v", err)
	}
	if !root.is("wmsLayer") {
		return Layer{}, apperr.Invalidf("invalid layer document: the root element is %s, not wmsLayer", root.label())
	}
	var d decoder
	l := d.layer(root, "wmsLayer")
	if p := d.err(); len(p) > 0 {
		return Layer{}, invalid(fmt.Sprintf("layer %s", apperr.Show(l.Name)), p)
	}
	return l, nil
}
