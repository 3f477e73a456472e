package gwc

import (
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
)

// ErrNotWMS is returned by EncodeLayer for a layer whose source is not a
// WMS: GeoWebCache's wmsLayer cannot describe it.
var ErrNotWMS = errors.New("the layer's source is not a WMS")

// EncodeLayer returns the <wmsLayer> document of a layer with a wms
// source, its elements in GeoWebCache's order followed by tilecache's
// own (see the package documentation).
func EncodeLayer(l *layer.Layer) ([]byte, error) {
	if l.SourceType != "wms" {
		return nil, fmt.Errorf("encode layer %q: %w (its type is %q)", l.Name, ErrNotWMS, l.SourceType)
	}
	src, err := l.WMSSource()
	if err != nil {
		return nil, fmt.Errorf("encode layer %q: %w", l.Name, err)
	}
	w := &writer{}
	w.open("wmsLayer", "xmlns:tc", Namespace)
	w.leaf("enabled", strconv.FormatBool(l.Enabled))
	w.leaf("name", l.Name)
	writeMeta(w, l)
	w.open("mimeFormats")
	for _, f := range l.Formats {
		w.leaf("string", f)
	}
	w.close("mimeFormats")
	writeSubsets(w, l)
	w.open("metaWidthHeight")
	w.leaf("int", strconv.Itoa(l.MetaWidth))
	w.leaf("int", strconv.Itoa(l.MetaHeight))
	w.close("metaWidthHeight")
	writeExpiry(w, "expireCache", l.CacheExpiryRules)
	writeExpiry(w, "expireClients", l.ClientExpiry)
	timeout := writeTimeout(w, src.Timeout)
	writeFilters(w, l.Filters)
	writeWMS(w, l, src)
	writeOwn(w, l, src, timeout)
	w.close("wmsLayer")
	return w.b.Bytes(), nil
}

func writeMeta(w *writer, l *layer.Layer) {
	if l.Title == l.Name && l.Description == "" {
		return // the title defaults to the name
	}
	w.open("metaInformation")
	w.leaf("title", l.Title)
	if l.Description != "" {
		w.leaf("description", l.Description)
	}
	w.close("metaInformation")
}

func writeSubsets(w *writer, l *layer.Layer) {
	w.open("gridSubsets")
	for _, s := range l.Subsets {
		g := s.GridSet
		w.open("gridSubset")
		w.leaf("gridSetName", g.ID)
		if s.Coverage != g.Extent && s.Coverage != (grid.Extent{}) {
			writeExtent(w, []float64{s.Coverage.MinX, s.Coverage.MinY, s.Coverage.MaxX, s.Coverage.MaxY})
		}
		if s.MinZoom != 0 {
			w.leaf("zoomStart", strconv.Itoa(s.MinZoom))
		}
		if s.MaxZoom != g.Levels()-1 {
			w.leaf("zoomStop", strconv.Itoa(s.MaxZoom))
		}
		if r, ok := l.CachedLevels[g.ID]; ok {
			if r.Min >= 0 {
				w.leaf("minCachedLevel", strconv.Itoa(r.Min))
			}
			if r.Max >= 0 {
				w.leaf("maxCachedLevel", strconv.Itoa(r.Max))
			}
		}
		w.close("gridSubset")
	}
	w.close("gridSubsets")
}

func writeExtent(w *writer, v []float64) {
	w.open("extent")
	w.open("coords")
	for _, x := range v {
		w.leaf("double", formatFloat(x))
	}
	w.close("coords")
	w.close("extent")
}

// writeExpiry writes a single rule from zoom 0 as key, else keyList.
func writeExpiry(w *writer, key string, rules []layer.ExpirationRule) {
	switch {
	case len(rules) == 0:
	case len(rules) == 1 && rules[0].MinZoom == 0:
		w.leaf(key, strconv.Itoa(rules[0].Expiration))
	default:
		w.open(key + "List")
		for _, r := range rules {
			w.empty("expirationRule", "minZoom", strconv.Itoa(r.MinZoom), "expiration", strconv.Itoa(r.Expiration))
		}
		w.close(key + "List")
	}
}

// writeTimeout writes a whole number of seconds as backendTimeout and
// returns the text left for tc:timeout otherwise.
func writeTimeout(w *writer, timeout string) string {
	if timeout == "" {
		return ""
	}
	d, err := time.ParseDuration(timeout)
	if err != nil || d%time.Second != 0 || d < 0 {
		return timeout
	}
	w.leaf("backendTimeout", strconv.FormatInt(int64(d/time.Second), 10))
	return ""
}

func writeFilters(w *writer, filters []layer.ParameterFilter) {
	if len(filters) == 0 {
		return
	}
	w.open("parameterFilters")
	for _, f := range filters {
		switch {
		case f.Type != "":
			name, item := "floatParameterFilter", "float"
			if f.Type == layer.FilterInteger {
				name, item = "integerParameterFilter", "int"
			}
			w.open(name)
			w.leaf("key", f.Key)
			w.leaf("defaultValue", f.Default)
			writeList(w, "values", item, f.Values)
			threshold := formatFloat(f.Threshold)
			if f.Type == layer.FilterInteger {
				threshold = strconv.FormatInt(int64(f.Threshold), 10)
			}
			w.leaf("threshold", threshold)
			w.close(name)
		case f.Regex != nil:
			w.open("regexParameterFilter")
			w.leaf("key", f.Key)
			w.leaf("defaultValue", f.Default)
			w.leaf("regex", regexSource(f.Regex.String()))
			w.close("regexParameterFilter")
		default:
			w.open("stringParameterFilter")
			w.leaf("key", f.Key)
			w.leaf("defaultValue", f.Default)
			writeList(w, "values", "string", f.Values)
			w.close("stringParameterFilter")
		}
	}
	w.close("parameterFilters")
}

// regexSource undoes the anchoring the layer file adds to a regex.
func regexSource(s string) string {
	if len(s) >= 6 && s[:4] == "^(?:" && s[len(s)-2:] == ")$" {
		return s[4 : len(s)-2]
	}
	return s
}

func writeList(w *writer, name, item string, values []string) {
	if len(values) == 0 {
		w.empty(name)
		return
	}
	w.open(name)
	for _, v := range values {
		w.leaf(item, v)
	}
	w.close(name)
}

func writeWMS(w *writer, l *layer.Layer, src WMSSource) {
	w.open("wmsUrl")
	w.leaf("string", src.URL)
	w.close("wmsUrl")
	w.leaf("wmsLayers", src.Layers)
	if src.Styles != "" {
		w.leaf("wmsStyles", src.Styles)
	}
	if l.Gutter != 0 {
		w.leaf("gutter", strconv.Itoa(l.Gutter))
	}
	if src.Version != "" {
		w.leaf("wmsVersion", src.Version)
	}
	w.leaf("transparent", strconv.FormatBool(src.Transparent))
	if src.BGColor != "" {
		w.leaf("bgColor", src.BGColor)
	}
	if len(src.Params) > 0 {
		q := url.Values{}
		for k, v := range src.Params {
			q.Set(k, v)
		}
		w.leaf("vendorParameters", q.Encode())
	}
}

// writeOwn writes tilecache's elements.
func writeOwn(w *writer, l *layer.Layer, src WMSSource, timeout string) {
	opt := func(name, v string) {
		if v != "" {
			w.leaf("tc:"+name, v)
		}
	}
	if l.ID != l.Name {
		opt("id", l.ID)
	}
	opt("attribution", l.Attribution)
	opt("cacheControl", l.CacheControl)
	if l.Private {
		w.leaf("tc:private", "true")
	}
	if m := l.RenderOnMiss; m != nil {
		w.open("tc:renderOnMiss")
		w.leaf("tc:enabled", "true")
		w.leaf("tc:zoomStart", strconv.Itoa(m.ZoomStart))
		if m.ZoomStop >= 0 {
			w.leaf("tc:zoomStop", strconv.Itoa(m.ZoomStop))
		}
		w.close("tc:renderOnMiss")
	}
	if c := l.Coverage; c != nil {
		w.open("tc:coverage")
		w.leaf("tc:geometry", c.Geometry)
		if c.SRS != 0 {
			w.leaf("tc:srs", strconv.Itoa(c.SRS))
		}
		if c.Buffer != 0 {
			w.leaf("tc:buffer", formatFloat(c.Buffer))
		}
		w.close("tc:coverage")
	}
	opt("format", src.Format)
	opt("axisOrder", src.AxisOrder)
	writePairs(w, "tc:srs", "tc:entry", "gridSet", src.SRS)
	opt("timeout", timeout)
	if src.Retries != nil {
		w.leaf("tc:retries", strconv.Itoa(*src.Retries))
	}
	opt("retryBackoff", src.RetryBackoff)
	if src.MaxConcurrent != 0 {
		w.leaf("tc:maxConcurrent", strconv.Itoa(src.MaxConcurrent))
	}
	writePairs(w, "tc:headers", "tc:header", "name", src.Headers)
	if src.PNGCompression != 0 {
		w.leaf("tc:pngCompression", strconv.Itoa(src.PNGCompression))
	}
	if src.JPEGQuality != 0 {
		w.leaf("tc:jpegQuality", strconv.Itoa(src.JPEGQuality))
	}
	opt("skipBlank", src.SkipBlank)
}

func writePairs(w *writer, container, item, key string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	w.open(container)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w.indent()
		w.b.WriteString("<" + item)
		w.attrs([]string{key, k})
		w.b.WriteString(">")
		xml.EscapeText(&w.b, []byte(m[k]))
		w.b.WriteString("</" + item + ">\n")
	}
	w.close(container)
}
