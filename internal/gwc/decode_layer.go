package gwc

import (
	"net/url"
	"strings"
	"time"

	"tilecache/internal/apperr"
)

// layer decodes a wmsLayer element.
func (d *decoder) layer(e *node, path string) Layer {
	var l Layer
	l.Enabled = d.boolean(e, path, "enabled")
	if s := d.trimmed(e, path, "name"); s != nil && *s != "" {
		l.Name = *s
	} else {
		d.fail(path+"/name", "a layer name is required")
	}
	if m := d.one(e, path, "metaInformation"); m != nil {
		mp := path + "/metaInformation"
		if s := d.str(m, mp, "title"); s != nil {
			l.Title = *s
		}
		if s := d.str(m, mp, "description"); s != nil {
			l.Description = *s
		}
		d.leftovers(m, mp)
	}
	for _, s := range d.list(e, path, "mimeFormats", "string") {
		l.Formats = append(l.Formats, strings.TrimSpace(s))
	}
	d.subsets(e, path, &l)
	d.metatiling(e, path, &l)
	l.ExpireCache, l.ExpireCacheList = d.expiry(e, path, "expireCache")
	l.ExpireClients, l.ExpireClientsList = d.expiry(e, path, "expireClients")
	d.filters(e, path, &l)
	d.wms(e, path, &l)
	d.own(e, path, &l)
	d.leftovers(e, path)
	return l
}

func (d *decoder) subsets(e *node, path string, l *Layer) {
	c := d.one(e, path, "gridSubsets")
	if c == nil {
		return
	}
	cp := path + "/gridSubsets"
	for _, k := range all(c, "gridSubset") {
		kp := cp + "/gridSubset"
		var s Subset
		if n := d.trimmed(k, kp, "gridSetName"); n != nil && *n != "" {
			s.GridSet = *n
		} else {
			d.fail(kp+"/gridSetName", "a grid set name is required")
		}
		s.Extent = d.coords(k, kp)
		s.ZoomStart = d.integer(k, kp, "zoomStart")
		s.ZoomStop = d.integer(k, kp, "zoomStop")
		s.MinCachedLevel = d.integer(k, kp, "minCachedLevel")
		s.MaxCachedLevel = d.integer(k, kp, "maxCachedLevel")
		d.leftovers(k, kp)
		l.GridSubsets = append(l.GridSubsets, s)
	}
	d.leftovers(c, cp)
}

func (d *decoder) metatiling(e *node, path string, l *Layer) {
	texts := d.list(e, path, "metaWidthHeight", "int")
	if texts == nil {
		return
	}
	if len(texts) != 2 {
		d.fail(path+"/metaWidthHeight", "needs 2 integers (width, height), got %d", len(texts))
		return
	}
	for _, s := range texts {
		if n, ok := d.parseInt(path+"/metaWidthHeight/int", s); ok {
			l.Metatiling = append(l.Metatiling, n)
		}
	}
}

// expiry decodes key (seconds) and keyList (expirationRule elements).
func (d *decoder) expiry(e *node, path, key string) (*int, []Rule) {
	single := d.integer(e, path, key)
	c := d.one(e, path, key+"List")
	if c == nil {
		return single, nil
	}
	cp := path + "/" + key + "List"
	if single != nil {
		d.fail(cp, "give either %s or %sList, not both", key, key)
	}
	rules := []Rule{}
	for _, k := range all(c, "expirationRule") {
		kp := cp + "/expirationRule"
		var r Rule
		var ok1, ok2 bool
		if v, ok := k.attr("minZoom"); ok {
			r.MinZoom, ok1 = d.parseInt(kp+"/@minZoom", v)
		} else {
			d.fail(kp, "the minZoom attribute is required")
		}
		if v, ok := k.attr("expiration"); ok {
			r.Expiration, ok2 = d.parseInt(kp+"/@expiration", v)
		} else {
			d.fail(kp, "the expiration attribute is required")
		}
		d.leftovers(k, kp)
		if ok1 && ok2 {
			rules = append(rules, r)
		}
	}
	d.leftovers(c, cp)
	return nil, rules
}

// filters decodes parameterFilters, keeping their order.
func (d *decoder) filters(e *node, path string, l *Layer) {
	c := d.one(e, path, "parameterFilters")
	if c == nil {
		return
	}
	cp := path + "/parameterFilters"
	for _, k := range c.children {
		kind, ok := strings.CutSuffix(k.label(), "ParameterFilter")
		if !ok || (kind != "string" && kind != "regex" && kind != "float" && kind != "integer") {
			continue // reported by leftovers
		}
		k.used = true
		l.ParameterFilters = append(l.ParameterFilters, d.filter(k, cp+"/"+k.label(), kind))
	}
	d.leftovers(c, cp)
}

func (d *decoder) filter(k *node, kp, kind string) Filter {
	var f Filter
	if s := d.trimmed(k, kp, "key"); s != nil && *s != "" {
		f.Key = *s
	} else {
		d.fail(kp+"/key", "a key is required")
	}
	if s := d.str(k, kp, "defaultValue"); s != nil {
		f.Default = *s
	}
	switch kind {
	case "string":
		f.Values = d.list(k, kp, "values", "string")
		if f.Values == nil {
			f.Values = []string{}
		}
	case "regex":
		if s := d.str(k, kp, "regex"); s != nil {
			f.Regex = s
		} else {
			d.fail(kp+"/regex", "a regex is required")
		}
	case "float", "integer":
		f.Type = kind
		item := map[string]string{"float": "float", "integer": "int"}[kind]
		for _, s := range d.list(k, kp, "values", item) {
			f.Values = append(f.Values, strings.TrimSpace(s))
		}
		f.Threshold = d.number(k, kp, "threshold")
	}
	d.leftovers(k, kp)
	return f
}

// wms decodes the WMS source's elements.
func (d *decoder) wms(e *node, path string, l *Layer) {
	src := &l.Source
	src.Type = "wms"
	urls := d.list(e, path, "wmsUrl", "string")
	switch len(urls) {
	case 0:
		d.fail(path+"/wmsUrl", "one WMS URL is required")
	case 1:
		src.URL = strings.TrimSpace(urls[0])
	default:
		d.fail(path+"/wmsUrl", "%d URLs given: tilecache sends every GetMap to one URL (put a load balancer behind it)", len(urls))
	}
	if s := d.trimmed(e, path, "wmsLayers"); s != nil && *s != "" {
		src.Layers = *s
	} else {
		src.Layers = l.Name // GeoWebCache's default
	}
	if s := d.str(e, path, "wmsStyles"); s != nil {
		src.Styles = *s
	}
	if n := d.integer(e, path, "gutter"); n != nil {
		l.Gutter = *n
	}
	if s := d.trimmed(e, path, "wmsVersion"); s != nil {
		src.Version = *s
	}
	src.Transparent = true // GeoWebCache's default
	if b := d.boolean(e, path, "transparent"); b != nil {
		src.Transparent = *b
	}
	if s := d.trimmed(e, path, "bgColor"); s != nil {
		src.BGColor = *s
	}
	if s := d.trimmed(e, path, "vendorParameters"); s != nil {
		src.Params = d.vendorParams(path+"/vendorParameters", *s)
	}
	if n := d.integer(e, path, "backendTimeout"); n != nil {
		if *n < 0 {
			d.fail(path+"/backendTimeout", "%d seconds is negative", *n)
		}
		src.Timeout = (time.Duration(*n) * time.Second).String()
	}
	if s := d.trimmed(e, path, "httpRequestMode"); s != nil && *s != "Get" {
		d.fail(path+"/httpRequestMode", "%s is not supported: tilecache sends GetMap requests with GET", apperr.Show(*s))
	}
}

// vendorParams decodes a query string; a key given twice is a problem.
func (d *decoder) vendorParams(path, s string) map[string]string {
	q, err := url.ParseQuery(strings.TrimPrefix(s, "&"))
	if err != nil {
		d.fail(path, "%s is not a query string: %v", apperr.Show(s), err)
		return nil
	}
	out := map[string]string{}
	for k, v := range q {
		if len(v) > 1 {
			d.fail(path, "parameter %s is given %d times", apperr.Show(k), len(v))
		}
		out[k] = v[0]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// own decodes tilecache's elements.
func (d *decoder) own(e *node, path string, l *Layer) {
	src := &l.Source
	set := func(name string, dst *string) {
		if s := d.str(e, path, name); s != nil {
			*dst = *s
		}
	}
	set("tc:id", &l.ID)
	set("tc:attribution", &l.Attribution)
	set("tc:cacheControl", &l.CacheControl)
	if b := d.boolean(e, path, "tc:private"); b != nil {
		l.Private = *b
	}
	set("tc:format", &src.Format)
	set("tc:axisOrder", &src.AxisOrder)
	set("tc:retryBackoff", &src.RetryBackoff)
	set("tc:skipBlank", &src.SkipBlank)
	if s := d.trimmed(e, path, "tc:timeout"); s != nil {
		if src.Timeout != "" {
			d.fail(path+"/tc:timeout", "give either backendTimeout or tc:timeout, not both")
		}
		src.Timeout = *s
	}
	src.Retries = d.integer(e, path, "tc:retries")
	for _, f := range []struct {
		name string
		dst  *int
	}{{"tc:maxConcurrent", &src.MaxConcurrent}, {"tc:pngCompression", &src.PNGCompression}, {"tc:jpegQuality", &src.JPEGQuality}} {
		if n := d.integer(e, path, f.name); n != nil {
			*f.dst = *n
		}
	}
	src.Headers = d.pairs(e, path, "tc:headers", "tc:header", "name")
	src.SRS = d.pairs(e, path, "tc:srs", "tc:entry", "gridSet")
	if m := d.one(e, path, "tc:renderOnMiss"); m != nil {
		mp := path + "/tc:renderOnMiss"
		r := &RenderOnMiss{Enabled: true}
		if b := d.boolean(m, mp, "tc:enabled"); b != nil {
			r.Enabled = *b
		}
		r.ZoomStart = d.integer(m, mp, "tc:zoomStart")
		r.ZoomStop = d.integer(m, mp, "tc:zoomStop")
		d.leftovers(m, mp)
		l.RenderOnMiss = r
	}
	if c := d.one(e, path, "tc:coverage"); c != nil {
		cp := path + "/tc:coverage"
		cov := &Coverage{}
		if s := d.str(c, cp, "tc:geometry"); s != nil {
			cov.Geometry = *s
		} else {
			d.fail(cp+"/tc:geometry", "a geometry is required")
		}
		if n := d.integer(c, cp, "tc:srs"); n != nil {
			cov.SRS = *n
		}
		if x := d.number(c, cp, "tc:buffer"); x != nil {
			cov.Buffer = *x
		}
		d.leftovers(c, cp)
		l.Coverage = cov
	}
}

// pairs decodes <container><item key="k">v</item>…</container> into a map.
func (d *decoder) pairs(e *node, path, container, item, key string) map[string]string {
	c := d.one(e, path, container)
	if c == nil {
		return nil
	}
	cp := path + "/" + container
	out := map[string]string{}
	for _, k := range all(c, item) {
		kp := cp + "/" + item
		name, ok := k.attr(key)
		switch {
		case !ok || name == "":
			d.fail(kp, "the %s attribute is required", key)
		case hasKey(out, name):
			d.fail(kp, "%s %s is given twice", key, apperr.Show(name))
		default:
			out[name] = k.text
		}
		d.leftovers(k, kp)
	}
	d.leftovers(c, cp)
	return out
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
