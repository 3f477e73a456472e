// Package layer holds tile layer definitions and the catalogue that loads
// them from a YAML file.
//
// A layer names the grid subsets it is cached in, the formats it offers,
// how it is metatiled, which request parameters select distinct tile sets
// (parameter filters), the HTTP cache headers stored with its tiles, and the
// source its tiles are rendered from. The source's own options stay a YAML
// node here; the source package that implements the type decodes them.
package layer

import (
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"tilecache/internal/apperr"
	"tilecache/internal/area"
	"tilecache/internal/grid"
)

// Layer is one cached layer.
type Layer struct {
	Name string
	// ID is the layer's key in the tile store; its name unless configured.
	ID string
	// Title is the human-readable name shown by map clients; its name unless
	// configured.
	Title string
	// Attribution credits the data's owners where a map shows the layer
	// (plain text or a short HTML fragment, as map clients expect). Empty:
	// none.
	Attribution string
	// Subsets are the grid subsets in configuration order; the first is the
	// default grid set of a seed request.
	Subsets []*grid.Subset
	// Formats are MIME types in configuration order; the first is the default.
	Formats    []string
	MetaWidth  int
	MetaHeight int
	Gutter     int
	Filters    []ParameterFilter
	// CacheControl is stored as each tile's Cache-Control so a CDN serving the
	// bucket directly honours it. Empty: none.
	CacheControl string
	// RenderOnMiss, if set, lets clients' misses render tiles.
	RenderOnMiss *OnMiss
	// Areas are the layer's coverage geometry prepared for each grid set
	// (nil: no coverage geometry): every request works only tiles it
	// meets, and a miss outside it is not rendered.
	Areas map[string]*area.Shape
	// SourceType names the source implementation (e.g. "testpattern").
	SourceType string
	// Source is the whole `source:` mapping, decoded by the source package.
	Source yaml.Node
}

// Area returns the layer's coverage geometry in grid set gridSetID, nil
// when the layer has none.
func (l *Layer) Area(gridSetID string) *area.Shape { return l.Areas[gridSetID] }

// OnMiss is a layer's render-on-miss setting: a tile missing from the
// store is rendered (its whole metatile, stored) when a client asks for it
// at a level from ZoomStart to ZoomStop (−1: the grid subset's last).
type OnMiss struct {
	ZoomStart, ZoomStop int
}

// RendersOnMiss reports whether a missing tile of level z in subset sub is
// rendered when asked for.
func (l *Layer) RendersOnMiss(sub *grid.Subset, z int) bool {
	m := l.RenderOnMiss
	if m == nil || z < m.ZoomStart || z < sub.MinZoom || z > sub.MaxZoom {
		return false
	}
	return m.ZoomStop < 0 || z <= m.ZoomStop
}

// Subset returns the layer's grid subset of the given grid set id.
func (l *Layer) Subset(gridSetID string) (*grid.Subset, bool) {
	for _, s := range l.Subsets {
		if s.GridSet.ID == gridSetID {
			return s, true
		}
	}
	return nil, false
}

// HasFormat reports whether the layer offers the MIME type.
func (l *Layer) HasFormat(mime string) bool { return slices.Contains(l.Formats, mime) }

// ParameterFilter decides which values of one request parameter are
// allowed and which value stands for "absent".
type ParameterFilter struct {
	Key     string // upper case
	Default string
	Values  []string       // list filter: the allowed values (nil for a regex filter)
	Regex   *regexp.Regexp // regex filter: values must match it entirely
}

// Allows reports whether v is an acceptable non-default value.
func (f ParameterFilter) Allows(v string) bool {
	if f.Regex != nil {
		return f.Regex.MatchString(v)
	}
	return slices.Contains(f.Values, v)
}

// NormaliseParameters applies the layer's filters to request parameters
// (contract §4.4): names match filter keys case-insensitively; names
// without a filter are ignored; an empty value or the default means the
// default; a value the filter rejects is an Invalid error. The result maps
// every filter key to its value, or is nil when every filter is at its
// default (parameters id "default").
func (l *Layer) NormaliseParameters(pairs [][2]string) (map[string]string, error) {
	if len(l.Filters) == 0 {
		return nil, nil
	}
	values := make(map[string]string, len(l.Filters))
	for _, f := range l.Filters {
		values[f.Key] = f.Default
	}
	nonDefault := false
	for _, p := range pairs {
		key := strings.ToUpper(p[0])
		i := slices.IndexFunc(l.Filters, func(f ParameterFilter) bool { return f.Key == key })
		if i < 0 {
			continue
		}
		f := l.Filters[i]
		v := p[1]
		if v == "" || v == f.Default {
			values[key] = f.Default
			continue
		}
		if !f.Allows(v) {
			return nil, apperr.Invalidf("Invalid value for parameter %s: %s", key, v)
		}
		values[key] = v
	}
	for _, f := range l.Filters {
		if values[f.Key] != f.Default {
			nonDefault = true
		}
	}
	if !nonDefault {
		return nil, nil
	}
	return values, nil
}
