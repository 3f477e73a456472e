package layer

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// Entry is one layer as its configuration describes it: an entry of the
// layer file's `layers:` list, and what the REST interface's wmsLayer
// document says (internal/gwc decodes into it and encodes from it). A
// layer is built from its entry (see Parse); yaml.Marshal of an Entry
// writes the entry the stored configuration holds.
type Entry struct {
	Name              string           `yaml:"name"`
	ID                string           `yaml:"id,omitempty"`
	Title             string           `yaml:"title,omitempty"`
	Attribution       string           `yaml:"attribution,omitempty"`
	Description       string           `yaml:"description,omitempty"`
	Enabled           *bool            `yaml:"enabled,omitempty"`
	GridSubsets       []SubsetEntry    `yaml:"gridSubsets"`
	Formats           []string         `yaml:"formats"`
	Metatiling        []int            `yaml:"metatiling,omitempty"`
	Gutter            int              `yaml:"gutter,omitempty"`
	CacheControl      string           `yaml:"cacheControl,omitempty"`
	Private           bool             `yaml:"private,omitempty"`
	FeatureInfo       bool             `yaml:"featureInfo,omitempty"`
	ExpireClients     *int             `yaml:"expireClients,omitempty"`
	ExpireClientsList []ExpirationRule `yaml:"expireClientsList,omitempty"`
	ExpireCache       *int             `yaml:"expireCache,omitempty"`
	ExpireCacheList   []ExpirationRule `yaml:"expireCacheList,omitempty"`
	RenderOnMiss      *OnMissEntry     `yaml:"renderOnMiss,omitempty"`
	Coverage          *Coverage        `yaml:"coverage,omitempty"`
	ParameterFilters  []FilterEntry    `yaml:"parameterFilters,omitempty"`
	Source            Source           `yaml:"source"`
	ManagedBy         Managed          `yaml:"managedBy,omitempty"`
}

// SubsetEntry is one entry of a layer's gridSubsets.
type SubsetEntry struct {
	GridSet        string    `yaml:"gridSet"`
	Extent         []float64 `yaml:"extent,omitempty,flow"`
	ZoomStart      *int      `yaml:"zoomStart,omitempty"`
	ZoomStop       *int      `yaml:"zoomStop,omitempty"`
	MinCachedLevel *int      `yaml:"minCachedLevel,omitempty"`
	MaxCachedLevel *int      `yaml:"maxCachedLevel,omitempty"`
}

// OnMissEntry is a layer's renderOnMiss entry.
type OnMissEntry struct {
	Enabled   bool `yaml:"enabled"`
	ZoomStart *int `yaml:"zoomStart,omitempty"`
	ZoomStop  *int `yaml:"zoomStop,omitempty"`
}

// FilterEntry is one parameter filter: a list filter (Values), a regex
// filter (Regex) or a numeric one (Type float or integer, Values,
// Threshold).
type FilterEntry struct {
	Key       string   `yaml:"key"`
	Default   string   `yaml:"default,omitempty"`
	Type      string   `yaml:"type,omitempty"`
	Values    []string `yaml:"values,omitempty"`
	Regex     *string  `yaml:"regex,omitempty"`
	Threshold *float64 `yaml:"threshold,omitempty"`
}

// GridSetEntry is one custom grid set as its configuration describes it:
// an entry of the layer file's `gridSets:` list, and what the REST
// interface's gridSet document says.
type GridSetEntry struct {
	ID                string    `yaml:"id"`
	Description       string    `yaml:"description,omitempty"`
	EPSG              int       `yaml:"epsg"`
	Extent            []float64 `yaml:"extent,flow"`
	TileWidth         int       `yaml:"tileWidth,omitempty"`
	TileHeight        int       `yaml:"tileHeight,omitempty"`
	Resolutions       []float64 `yaml:"resolutions,omitempty,flow"`
	ScaleDenominators []float64 `yaml:"scaleDenominators,omitempty,flow"`
	MetersPerUnit     *float64  `yaml:"metersPerUnit,omitempty"`
	PixelSize         *float64  `yaml:"pixelSize,omitempty"`
	ScaleNames        []string  `yaml:"scaleNames,omitempty,flow"`
	AlignTopLeft      bool      `yaml:"alignTopLeft,omitempty"`
	YCoordinateFirst  bool      `yaml:"yCoordinateFirst,omitempty"`
	ManagedBy         Managed   `yaml:"managedBy,omitempty"`
}

// Source is a layer's `source:` mapping, a small tagged union on Type.
// A wms source's options are the typed fields (the keys of the wms
// source's options, internal/source/wms; durations are Go duration text,
// 60s): the REST interface reads and writes them, and yaml.Marshal writes
// them. The source types are pluggable, each decoding and checking its
// own options, so the mapping read from YAML is kept as well, whatever
// the type, and it is what the layer hands its source (Layer.Source): a
// layer file entry reaches its source as written, an unknown or
// malformed key reported there as before. A source of another type than
// wms is written back as that mapping.
type Source struct {
	Type           string            `yaml:"type"`
	URL            string            `yaml:"url"`
	Layers         string            `yaml:"layers"`
	Styles         string            `yaml:"styles,omitempty"`
	Version        string            `yaml:"version,omitempty"`
	Format         string            `yaml:"format,omitempty"`
	Transparent    bool              `yaml:"transparent"`
	BGColor        string            `yaml:"bgColor,omitempty"`
	AxisOrder      string            `yaml:"axisOrder,omitempty"`
	SRS            map[string]string `yaml:"srs,omitempty"`
	Params         map[string]string `yaml:"params,omitempty"`
	Timeout        string            `yaml:"timeout,omitempty"`
	Retries        *int              `yaml:"retries,omitempty"`
	RetryBackoff   string            `yaml:"retryBackoff,omitempty"`
	MaxConcurrent  int               `yaml:"maxConcurrent,omitempty"`
	Headers        map[string]string `yaml:"headers,omitempty"`
	PNGCompression int               `yaml:"pngCompression,omitempty"`
	JPEGQuality    int               `yaml:"jpegQuality,omitempty"`
	SkipBlank      string            `yaml:"skipBlank,omitempty"`
	// AllowPrivateUpstream is a layer file's setting (see the wms
	// source): read so that such a layer has a document, never written
	// to one nor decoded from one.
	AllowPrivateUpstream bool `yaml:"allowPrivateUpstream,omitempty"`

	// read is the mapping as read from YAML (nil for a source made in
	// Go, from a wmsLayer document say).
	read *yaml.Node
}

// wmsOptions is Source's typed fields, without its methods.
type wmsOptions Source

// UnmarshalYAML keeps the mapping and reads its type, and a wms source's
// options into the typed fields as far as they decode (what does not is
// the source's to report, when the layer is built).
func (s *Source) UnmarshalYAML(n *yaml.Node) error {
	*s = Source{read: n}
	if n.Kind != yaml.MappingNode {
		return nil // reported by buildLayer
	}
	var t struct {
		Type string `yaml:"type"`
	}
	if n.Decode(&t) != nil {
		return nil // reported by buildLayer
	}
	if t.Type == TypeWMS {
		var w wmsOptions
		_ = n.Decode(&w) // a field that does not decode stays unset; the source reports it
		*s = Source(w)
		s.read = n
	}
	s.Type = t.Type
	return nil
}

// MarshalYAML writes a wms source's typed fields; a source of another
// type read from YAML as it was read.
func (s Source) MarshalYAML() (any, error) {
	if s.Type != TypeWMS && s.read != nil {
		return s.read, nil
	}
	return wmsOptions(s), nil
}

// TypeWMS is the type of a WMS source.
const TypeWMS = "wms"

// node returns the mapping the layer hands its source: as read, or the
// typed fields' when made in Go.
func (s *Source) node() (yaml.Node, error) {
	if s.read != nil {
		return *s.read, nil
	}
	var n yaml.Node
	if err := n.Encode(wmsOptions(*s)); err != nil {
		return n, fmt.Errorf("source: %w", err)
	}
	return n, nil
}

// YAML returns the layer as one entry of the layer file's `layers:` list:
// a mapping, without the list's dash, to be indented under it.
func (e Entry) YAML() ([]byte, error) {
	out, err := yaml.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("write layer %q as YAML: %w", e.Name, err)
	}
	return out, nil
}

// YAML returns the grid set as one entry of the layer file's `gridSets:`
// list: a mapping, without the list's dash.
func (g GridSetEntry) YAML() ([]byte, error) {
	out, err := yaml.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("write grid set %q as YAML: %w", g.ID, err)
	}
	return out, nil
}

// SameSource reports whether layers l and o have the same source
// mapping.
func (l *Layer) SameSource(o *Layer) bool {
	a, errA := yaml.Marshal(&l.Source)
	b, errB := yaml.Marshal(&o.Source)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// WMSSource returns the options of the layer's source, of type wms, in
// the typed fields; a key that none has is an error (so that nothing of
// the source is left out of what is made of them).
func (l *Layer) WMSSource() (Source, error) {
	if l.Source.Kind == 0 {
		return Source{}, fmt.Errorf("the source mapping is empty")
	}
	raw, err := yaml.Marshal(&l.Source)
	if err != nil {
		return Source{}, fmt.Errorf("read wms source: %w", err)
	}
	var w wmsOptions
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&w); err != nil {
		return Source{}, fmt.Errorf("read wms source: %w", err)
	}
	return Source(w), nil
}
