package gwcxml

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"tilecache/internal/apperr"
)

// Layer is a GeoWebCache layer in the terms of tilecache's layer file: the
// fields of one entry of its `layers:` list (see [Layer.YAML]).
type Layer struct {
	Name              string        `yaml:"name"`
	ID                string        `yaml:"id,omitempty"`
	Title             string        `yaml:"title,omitempty"`
	Attribution       string        `yaml:"attribution,omitempty"`
	Description       string        `yaml:"description,omitempty"`
	Enabled           *bool         `yaml:"enabled,omitempty"`
	GridSubsets       []Subset      `yaml:"gridSubsets"`
	Formats           []string      `yaml:"formats"`
	Metatiling        []int         `yaml:"metatiling,omitempty"`
	Gutter            int           `yaml:"gutter,omitempty"`
	CacheControl      string        `yaml:"cacheControl,omitempty"`
	ExpireClients     *int          `yaml:"expireClients,omitempty"`
	ExpireClientsList []Rule        `yaml:"expireClientsList,omitempty"`
	ExpireCache       *int          `yaml:"expireCache,omitempty"`
	ExpireCacheList   []Rule        `yaml:"expireCacheList,omitempty"`
	RenderOnMiss      *RenderOnMiss `yaml:"renderOnMiss,omitempty"`
	Coverage          *Coverage     `yaml:"coverage,omitempty"`
	ParameterFilters  []Filter      `yaml:"parameterFilters,omitempty"`
	Source            WMSSource     `yaml:"source"`
}

// Subset is one entry of a layer's gridSubsets.
type Subset struct {
	GridSet        string    `yaml:"gridSet"`
	Extent         []float64 `yaml:"extent,omitempty,flow"`
	ZoomStart      *int      `yaml:"zoomStart,omitempty"`
	ZoomStop       *int      `yaml:"zoomStop,omitempty"`
	MinCachedLevel *int      `yaml:"minCachedLevel,omitempty"`
	MaxCachedLevel *int      `yaml:"maxCachedLevel,omitempty"`
}

// Rule is one expiration rule: seconds from zoom level MinZoom on.
type Rule struct {
	MinZoom    int `yaml:"minZoom"`
	Expiration int `yaml:"expiration"`
}

// RenderOnMiss is a layer's renderOnMiss entry.
type RenderOnMiss struct {
	Enabled   bool `yaml:"enabled"`
	ZoomStart *int `yaml:"zoomStart,omitempty"`
	ZoomStop  *int `yaml:"zoomStop,omitempty"`
}

// Coverage is a layer's coverage entry.
type Coverage struct {
	Geometry string  `yaml:"geometry"`
	SRS      int     `yaml:"srs,omitempty"`
	Buffer   float64 `yaml:"buffer,omitempty"`
}

// Filter is one parameter filter: a list filter (Values), a regex filter
// (Regex) or a numeric one (Type float or integer, Values, Threshold).
type Filter struct {
	Key       string   `yaml:"key"`
	Default   string   `yaml:"default,omitempty"`
	Type      string   `yaml:"type,omitempty"`
	Values    []string `yaml:"values,omitempty"`
	Regex     *string  `yaml:"regex,omitempty"`
	Threshold *float64 `yaml:"threshold,omitempty"`
}

// WMSSource is a layer's `source:` mapping for type wms, with the keys of
// the wms source's options (internal/source/wms). Durations are Go
// duration text (60s).
type WMSSource struct {
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
}

// YAML returns the layer as one entry of the layer file's `layers:` list:
// a mapping, without the list's dash, to be indented under it.
func (l Layer) YAML() ([]byte, error) {
	out, err := yaml.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("write layer %q as YAML: %w", l.Name, err)
	}
	return out, nil
}

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
