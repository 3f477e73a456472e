package rest

import (
	"strings"

	"tilecache/internal/layer"
)

// overviewParam is one parameter filter of a layer, as the overview
// tells a console what to offer: a list filter's values, a numeric
// filter's values and threshold, a regex filter's pattern.
type overviewParam struct {
	Key string `json:"key"`
	// Kind is "list", "regex", "float" or "integer".
	Kind    string   `json:"kind"`
	Default string   `json:"default"`
	Values  []string `json:"values,omitempty"`
	// Regex is a regex filter's pattern as the layer gives it; a value
	// must match it entirely.
	Regex     string  `json:"regex,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
}

// layerParams describes the parameter filters of l, in its order.
func layerParams(l *layer.Layer) []overviewParam {
	out := []overviewParam{}
	for _, f := range l.Filters {
		p := overviewParam{Key: f.Key, Default: f.Default}
		switch {
		case f.Type != "":
			p.Kind, p.Values, p.Threshold = f.Type, append([]string{}, f.Values...), f.Threshold
		case f.Regex != nil:
			p.Kind = "regex"
			p.Regex = strings.TrimSuffix(strings.TrimPrefix(f.Regex.String(), "^(?:"), ")$")
		default:
			p.Kind, p.Values = "list", append([]string{}, f.Values...)
		}
		out = append(out, p)
	}
	return out
}
