// Package layer holds tile layer definitions and the catalogue that loads
// them from a YAML file.
//
// A layer names the grid subsets it is cached in, the formats it offers,
// how it is metatiled, which request parameters select distinct tile sets
// (parameter filters), the HTTP cache headers stored with its tiles, and the
// source its tiles are rendered from. Every representation of a layer's
// configuration decodes into one schema, Entry (GridSetEntry for a grid
// set): the layer file's entries and the REST interface's documents
// (internal/gwc); a layer is built from its entry. A wms source's
// options are typed there; the source's own mapping is kept as read, and
// the source package that implements the type decodes it.
package layer

import (
	"fmt"
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
	// Description is free text about the layer for people (GeoWebCache's
	// description, an abstract). Empty: none.
	Description string
	// Enabled is false when the layer file says `enabled: false`
	// (GeoWebCache's switch for taking a layer out of service while
	// keeping its definition); default true.
	Enabled bool
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
	// Private is true when the layer file says `private: true`: its
	// tiles and its own documents are served only to a request carrying
	// a valid tile token for it (internal/tiletoken), and the shared
	// documents leave it out.
	Private bool
	// FeatureInfo is true when the layer file says `featureInfo: true`:
	// GetFeatureInfo requests (WMTS KVP, WMS) of its tiles are passed to
	// its WMS upstream, the pixel translated into the tile's GetMap box
	// (tileserve.FeatureInfo). Off by default.
	FeatureInfo bool
	// ClientExpiry are the layer's expireClients rules: the max-age, in
	// seconds, clients may keep a tile of each zoom (see ClientMaxAge);
	// nil when not configured.
	ClientExpiry []ExpirationRule
	// CacheExpiryRules are the layer's expireCache rules: after how many
	// seconds a stored tile of each zoom is stale, 0 never (see
	// CacheExpiry); nil when not configured.
	CacheExpiryRules []ExpirationRule
	// CachedLevels holds, by grid set id, the levels whose tiles are
	// cached when a subset's minCachedLevel or maxCachedLevel is set (see
	// Cached); a subset without them has no entry.
	CachedLevels map[string]LevelRange
	// RenderOnMiss, if set, lets clients' misses render tiles.
	RenderOnMiss *OnMiss
	// Areas are the layer's coverage geometry prepared for each grid set
	// (nil: no coverage geometry): every request works only tiles it
	// meets, and a miss outside it is not rendered.
	Areas map[string]*area.Shape
	// Coverage is the coverage geometry as configured (nil: none).
	Coverage *Coverage
	// SourceType names the source implementation (e.g. "testpattern").
	SourceType string
	// Source is the whole `source:` mapping, decoded by the source package.
	Source yaml.Node
	// Managed says where the layer is changed: in the layer file
	// (ManagedByFile, the default) or at run time, through the REST
	// interface (ManagedByStore).
	Managed Managed
	// Version fingerprints the layer's definition: its entry and the
	// entries of the custom grid sets it uses. It changes whenever the
	// definition does (the ETag of its document).
	Version string
}

// Coverage is a layer's coverage geometry as the layer file gives it.
type Coverage struct {
	Geometry string  `yaml:"geometry"`         // GeoJSON or WKT text
	SRS      int     `yaml:"srs,omitempty"`    // its EPSG code; 0: EPSG:4326 or the EWKT SRID
	Buffer   float64 `yaml:"buffer,omitempty"` // metres
}

// LevelRange is a subset's minCachedLevel and maxCachedLevel; −1 stands
// for one not given (the subset's first or last level).
type LevelRange struct {
	Min, Max int
}

// Cached reports whether tiles of level z in subset sub are cached: z lies
// within the subset's minCachedLevel and maxCachedLevel (by default its
// zoom range). Requests outside them pass through to the source, in
// GeoWebCache's words.
func (l *Layer) Cached(sub *grid.Subset, z int) bool {
	lo, hi := sub.MinZoom, sub.MaxZoom
	if r, ok := l.CachedLevels[sub.GridSet.ID]; ok {
		if r.Min >= 0 {
			lo = r.Min
		}
		if r.Max >= 0 {
			hi = r.Max
		}
	}
	return z >= lo && z <= hi
}

// setCachedLevels checks and records a subset's minCachedLevel and
// maxCachedLevel: levels of the grid set, min ≤ max.
func (l *Layer) setCachedLevels(s *grid.Subset, lo, hi *int) error {
	if lo == nil && hi == nil {
		return nil
	}
	r := LevelRange{Min: -1, Max: -1}
	last := s.GridSet.Levels() - 1
	if lo != nil {
		if *lo < 0 || *lo > last {
			return fmt.Errorf("minCachedLevel %d is outside the levels 0 to %d", *lo, last)
		}
		r.Min = *lo
	}
	if hi != nil {
		if *hi < 0 || *hi > last {
			return fmt.Errorf("maxCachedLevel %d is outside the levels 0 to %d", *hi, last)
		}
		r.Max = *hi
	}
	if r.Min >= 0 && r.Max >= 0 && r.Min > r.Max {
		return fmt.Errorf("minCachedLevel %d is greater than maxCachedLevel %d", r.Min, r.Max)
	}
	if l.CachedLevels == nil {
		l.CachedLevels = map[string]LevelRange{}
	}
	l.CachedLevels[s.GridSet.ID] = r
	return nil
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
	// Type is "" for a list or regex filter, or "float" or "integer" for a
	// numeric filter: a value is taken as the nearest of Values when it
	// lies less than Threshold from it.
	Type      string
	Threshold float64
}

// Allows reports whether v is an acceptable non-default value.
func (f ParameterFilter) Allows(v string) bool {
	_, ok := f.Apply(v)
	return ok
}

// Apply returns the value v stands for and whether it is acceptable: v
// itself for a list or regex filter, the nearest of Values (as written in
// the layer file) for a numeric filter.
func (f ParameterFilter) Apply(v string) (string, bool) {
	switch {
	case f.Type != "":
		return f.nearest(v)
	case f.Regex != nil:
		return v, f.Regex.MatchString(v)
	default:
		return v, slices.Contains(f.Values, v)
	}
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
		applied, ok := f.Apply(v)
		if !ok {
			return nil, apperr.Invalidf("Invalid value for parameter %s: %s", key, v)
		}
		values[key] = applied
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
