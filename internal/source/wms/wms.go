// Package wms is the source that renders tiles from an OGC Web Map Service:
// one GetMap per metatile (with the layer's gutter), decoded once and cut
// into tiles.
//
// Options (the layer's `source:` mapping):
//
//	type: wms
//	url: http://wms.example.org/wms  # required; may carry its own query (e.g. ?map=/srv/world.map)
//	layers: roads,labels             # required: LAYERS
//	styles: ""                       # STYLES when the request selects none
//	version: 1.1.1                   # or 1.3.0 (CRS, EXCEPTIONS=XML and the CRS's axis order)
//	format: image/png                # asked of the WMS; default image/png (lossless), whatever the tile format
//	transparent: false               # TRANSPARENT
//	bgColor: 0xFFFFFF                # BGCOLOR, when set
//	axisOrder: auto                  # 1.3.0 only: auto (lat,lon for EPSG 4000–4999), xy or yx
//	srs: {EPSG:900913: EPSG:3857}    # SRS/CRS to send per grid set id; default EPSG:<the grid set's code>
//	params: {MAP_RESOLUTION: "96"}   # further GetMap parameters
//	timeout: 60s                     # per request
//	retries: 2                       # transient failures (connection, 5xx, 429); -1: never
//	retryBackoff: 250ms              # doubles per retry
//	maxConcurrent: 4                 # this layer's GetMaps in flight at once
//	headers: {Referer: ...}
//	allowPrivateUpstream: false      # true: the url may be at a loopback, link-local, private or unique-local address (layer file only)
//	pngCompression: 1                # zlib level of png/png8 tiles
//	jpegQuality: 85
//	skipBlank: none                  # or transparent / uniform: blank tiles are not stored
//
// A vector tile format (application/vnd.mapbox-vector-tile) is asked of
// the WMS as itself, one GetMap per tile without gutter, and stored as it
// comes once checked (see renderVector); format applies to images only.
//
// format picks what travels between the WMS and the seeder. image/png
// (the default) is the smallest on the wire; on a fast link (the WMS in
// the same region or on the same host) an uncompressed format the server
// offers, image/tiff from MapServer, GeoServer or QGIS Server, saves the
// server its PNG encoding and the seeder its decoding: an 8-bit RGB TIFF
// in strips is used where it lies, without a copy. The price is bytes:
// a 1024² metatile is 3.15 MB as TIFF against 0.9–1.9 MB as a fast
// PNG of a typical basemap (docs/operators.md, "Sources").
// The tiles are encoded in the tile format whatever the source format.
//
// The upstream may not be at a loopback, link-local, private, unique-local
// or other non-public address (upstream.AddressClass), checked at each
// connection after the name is resolved, unless the process allows its
// network (TILECACHE_UPSTREAM_ALLOW) or the layer is one of the layer
// file and sets allowPrivateUpstream: a layer changed through the REST
// interface cannot make the cache fetch from the service's own host or
// network.
//
// The seed request's parameters (the layer's parameter filters: STYLES, a
// CQL_FILTER, any key) are sent as GetMap parameters, overriding the
// options; a filter at its default sends its default value when that is
// not empty.
package wms

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"net/url"
	"strconv"
	"strings"
	"tilecache/internal/metrics"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/imaging"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/vectortile"
)

// Options configure the source; see the package documentation. They are
// the layer's typed source mapping, the one schema the layer file and the
// REST interface decode it into.
type Options = layer.Source

// Source renders metatiles with GetMap requests.
type Source struct {
	opts    Options
	base    *url.URL
	fixed   url.Values // every GetMap parameter that does not depend on the request
	filters []layer.ParameterFilter
	client  *upstream.Client
	pipe    *upstream.Pipeline
	budget  *upstream.Budget
}

var _ source.Source = (*Source)(nil)

// UpstreamCap reports the layer's maxConcurrent; a lane asks one GetMap
// per metatile, one at a time.
func (s *Source) UpstreamCap(metaW, metaH int) (limit, perLane int) {
	return s.client.MaxConcurrent(), 1
}

// New builds the source of layer l from its `source:` mapping with what
// the process's sources share: the budget that bounds the decoded metatiles
// in flight and the networks every upstream may be at. The upstream may
// be at any address only when l is managed by the layer file and its
// source sets allowPrivateUpstream.
func New(l *layer.Layer, sh upstream.Shared) (*Source, error) {
	o, err := l.WMSSource()
	if err != nil {
		return nil, fmt.Errorf("wms options: %w", err)
	}
	if o.Version == "" {
		o.Version = "1.1.1"
	}
	if o.Format == "" {
		o.Format = "image/png"
	}
	if o.AxisOrder == "" {
		o.AxisOrder = "auto"
	}
	switch {
	case o.URL == "":
		return nil, fmt.Errorf("wms options: url is required")
	case o.Layers == "":
		return nil, fmt.Errorf("wms options: layers is required")
	case o.Version != "1.1.1" && o.Version != "1.3.0":
		return nil, fmt.Errorf("wms options: version %q is not 1.1.1 or 1.3.0", o.Version)
	case o.AxisOrder != "auto" && o.AxisOrder != "xy" && o.AxisOrder != "yx":
		return nil, fmt.Errorf("wms options: axisOrder %q is not auto, xy or yx", o.AxisOrder)
	}
	base, err := url.Parse(o.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("wms options: url %q is not an http(s) URL", upstream.Redact(o.URL))
	}
	httpOpts, err := httpOptions(o)
	if err != nil {
		return nil, fmt.Errorf("wms options: %w", err)
	}
	httpOpts.Layer = l.Name // the metrics' label
	httpOpts.Addresses = sh.Addresses(o.AllowPrivateUpstream && l.Managed == layer.ManagedByFile)
	img := upstream.ImageOptions{PNGCompression: o.PNGCompression, JPEGQuality: o.JPEGQuality, SkipBlank: o.SkipBlank}
	client, pipe, err := upstream.Build(l.Formats, httpOpts, img)
	if err != nil {
		return nil, fmt.Errorf("wms options: %w", err)
	}
	s := &Source{opts: o, base: base, filters: l.Filters, client: client, pipe: pipe, budget: sh.Budget}
	s.fixed = s.fixedParams()
	return s, nil
}

// httpOptions are the upstream client's options of o (its durations
// Go duration text, 60s).
func httpOptions(o Options) (upstream.HTTPOptions, error) {
	h := upstream.HTTPOptions{MaxConcurrent: o.MaxConcurrent, Headers: o.Headers, AllowPrivateUpstream: o.AllowPrivateUpstream}
	if o.Retries != nil {
		h.Retries = *o.Retries
	}
	for _, d := range []struct {
		key, text string
		dst       *time.Duration
	}{{"timeout", o.Timeout, &h.Timeout}, {"retryBackoff", o.RetryBackoff, &h.RetryBackoff}} {
		if d.text == "" {
			continue
		}
		v, err := time.ParseDuration(d.text)
		if err != nil {
			return h, fmt.Errorf("%s %q is not a duration (60s, 500ms): %w", d.key, d.text, err)
		}
		*d.dst = v
	}
	return h, nil
}

// fixedParams merges the URL's own query, the fixed GetMap parameters and
// the configured extras. Keys are kept in upper case so that request
// parameters override them whatever their case.
func (s *Source) fixedParams() url.Values {
	v := url.Values{}
	for k, vals := range s.base.Query() {
		v[strings.ToUpper(k)] = vals
	}
	o := s.opts
	set := func(k, val string) { v[k] = []string{val} }
	set("SERVICE", "WMS")
	set("VERSION", o.Version)
	set("REQUEST", "GetMap")
	set("LAYERS", o.Layers)
	set("STYLES", o.Styles)
	set("FORMAT", o.Format)
	set("TRANSPARENT", strings.ToUpper(strconv.FormatBool(o.Transparent)))
	if o.BGColor != "" {
		set("BGCOLOR", o.BGColor)
	}
	if o.Version == "1.3.0" {
		set("EXCEPTIONS", "XML")
	} else {
		set("EXCEPTIONS", "application/vnd.ogc.se_xml")
	}
	for k, val := range o.Params {
		set(strings.ToUpper(k), val)
	}
	return v
}

// Render implements source.Source.
func (s *Source) Render(ctx context.Context, req source.Request) ([]source.Tile, error) {
	if vectortile.Is(req.Format) {
		return s.renderVector(ctx, req)
	}
	u, box, err := s.GetMapURL(req)
	if err != nil {
		return nil, err
	}
	var tiles []source.Tile
	// The answer can take at most the raw size of the image asked for
	// (uncompressed TIFF or BMP is about that; PNG and JPEG less), plus
	// room for headers and an exception report.
	limit := int64(box.Width)*int64(box.Height)*4 + 1<<20
	err = metrics.Stage(ctx, metrics.StageGetMap, func(ctx context.Context) error {
		return s.client.FetchLimited(ctx, u, limit, func(body []byte, contentType string) error {
			var err error
			tiles, err = s.cut(ctx, req, u, box, body, contentType)
			return err
		})
	})
	if err != nil {
		r := req.Tiles
		return nil, fmt.Errorf("wms GetMap for z%d metatile %d..%d,%d..%d: %w", r.Z, r.MinX, r.MaxX, r.MinY, r.MaxY, err)
	}
	return tiles, nil
}

// cut decodes a GetMap's answer and cuts it into the request's tiles.
func (s *Source) cut(ctx context.Context, req source.Request, u string, box Box, body []byte, contentType string) ([]source.Tile, error) {
	// Checked in the header, before a pixel is allocated.
	if w, h, ok := imaging.Size(body); ok && (w != box.Width || h != box.Height) {
		return nil, &upstream.Error{URL: upstream.Redact(u), Status: 200, Msg: fmt.Sprintf("image is %d×%d pixels, asked for %d×%d", w, h, box.Width, box.Height)}
	}
	release, err := s.budget.Acquire(ctx, upstream.DecodedSize(box.Width, box.Height))
	if err != nil {
		return nil, err
	}
	defer release()
	var img image.Image
	err = metrics.Stage(ctx, metrics.StageDecode, func(context.Context) error {
		var err error
		img, err = imaging.Decode(body)
		return err
	})
	if err != nil {
		return nil, upstream.DecodeFailure(u, contentType, err)
	}
	b := img.Bounds()
	if b.Dx() != box.Width || b.Dy() != box.Height {
		return nil, &upstream.Error{URL: upstream.Redact(u), Status: 200, Msg: fmt.Sprintf("image is %d×%d pixels, asked for %d×%d", b.Dx(), b.Dy(), box.Width, box.Height)}
	}
	origin := b.Min.Add(image.Pt(box.Left, box.Top))
	var tiles []source.Tile
	err = metrics.Stage(ctx, metrics.StageEncode, func(context.Context) error {
		var err error
		tiles, err = s.pipe.Cut(img, req.Tiles, origin, req.GridSet.TileWidth, req.GridSet.TileHeight, req.Format, req.Parallel)
		return err
	})
	imaging.Release(img) // the tiles are encoded: its pixel buffer can serve the next Decode
	return tiles, err
}

// Box is the image a GetMap asks for: its size and where the tiles start
// inside it (the gutter on the left and top).
type Box struct {
	Extent        grid.Extent
	Width, Height int
	Left, Top     int
}

// MetatileBox returns the area to request for the tiles of r: the tiles'
// extent grown by gutter pixels on every side that is not at the edge of
// the grid set (nothing lies beyond it).
func MetatileBox(g *grid.GridSet, r grid.TileRange, gutter int) Box {
	cols, rows := g.Size(r.Z)
	side := func(atEdge bool) int {
		if atEdge {
			return 0
		}
		return gutter
	}
	left, right := side(r.MinX == 0), side(r.MaxX == cols-1)
	bottom, top := side(r.MinY == 0), side(r.MaxY == rows-1)
	res := g.Resolutions[r.Z]
	e := g.RangeExtent(r)
	e.MinX -= float64(left) * res
	e.MaxX += float64(right) * res
	e.MinY -= float64(bottom) * res
	e.MaxY += float64(top) * res
	return Box{
		Extent: e,
		Width:  int(r.MaxX-r.MinX+1)*g.TileWidth + left + right,
		Height: int(r.MaxY-r.MinY+1)*g.TileHeight + bottom + top,
		Left:   left, Top: top,
	}
}

// GetMapURL returns the GetMap URL of a metatile request and its box.
func (s *Source) GetMapURL(req source.Request) (string, Box, error) {
	g := req.GridSet
	if req.Z < 0 || req.Z >= len(g.Resolutions) {
		return "", Box{}, fmt.Errorf("zoom level %d is outside grid set %s", req.Z, g.ID)
	}
	box := MetatileBox(g, req.Tiles, req.Gutter)
	v := make(url.Values, len(s.fixed)+8)
	for k, vals := range s.fixed {
		v[k] = vals
	}
	for _, f := range s.filters {
		val, ok := req.Parameters[f.Key]
		if !ok {
			val = f.Default
		}
		if val != "" {
			v[f.Key] = []string{val}
		}
	}
	srs := s.opts.SRS[g.ID]
	if srs == "" {
		srs = "EPSG:" + strconv.Itoa(g.EPSG)
	}
	e := box.Extent
	coords := []float64{e.MinX, e.MinY, e.MaxX, e.MaxY}
	if s.opts.Version == "1.3.0" {
		v["CRS"] = []string{srs}
		if s.latFirst(g.EPSG) {
			coords = []float64{e.MinY, e.MinX, e.MaxY, e.MaxX}
		}
	} else {
		v["SRS"] = []string{srs}
	}
	var bbox strings.Builder
	for i, c := range coords {
		if i > 0 {
			bbox.WriteByte(',')
		}
		bbox.WriteString(strconv.FormatFloat(c, 'f', -1, 64))
	}
	v["BBOX"] = []string{bbox.String()}
	if vectortile.Is(req.Format) {
		// Asked in the tile format itself: a vector tile is not decoded.
		v["FORMAT"] = []string{req.Format}
	}
	v["WIDTH"] = []string{strconv.Itoa(box.Width)}
	v["HEIGHT"] = []string{strconv.Itoa(box.Height)}
	u := *s.base
	u.RawQuery = v.Encode()
	return u.String(), box, nil
}

// latFirst reports whether WMS 1.3.0 wants the CRS's coordinates as
// latitude, longitude. In the EPSG registry the geographic 2D CRSs, codes
// 4000–4999, are lat/lon; projected ones are easting, northing.
func (s *Source) latFirst(epsg int) bool {
	switch s.opts.AxisOrder {
	case "xy":
		return false
	case "yx":
		return true
	}
	return epsg >= 4000 && epsg < 5000
}

// MaxFeatureInfo is the most bytes a GetFeatureInfo answer may take.
const MaxFeatureInfo = 1 << 20

// FeatureInfo asks the upstream what is at pixel (i, j) of tile (x, y)
// (y from the bottom) of level z of g, with the tile set's parameters: a
// GetFeatureInfo of the tile's own GetMap (the tile's box at the tile's
// size, no gutter) with QUERY_LAYERS the source's layers, and I/J (1.3.0)
// or X/Y (1.1.1) the pixel. The answer is returned as the upstream gave it,
// at most MaxFeatureInfo bytes, with its Content-Type; what bounds a
// GetMap bounds it (the address policy, timeout, retries, concurrency
// cap), and its errors name the URL only redacted.
func (s *Source) FeatureInfo(ctx context.Context, g *grid.GridSet, z int, x, y int64, params map[string]string, i, j int, infoFormat string) (body []byte, contentType string, err error) {
	u, _, err := s.GetMapURL(source.Request{GridSet: g, Z: z, Tiles: grid.TileRange{Z: z, MinX: x, MinY: y, MaxX: x, MaxY: y}, Parameters: params})
	if err != nil {
		return nil, "", err
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return nil, "", err
	}
	v := parsed.Query()
	v.Set("REQUEST", "GetFeatureInfo")
	v.Set("QUERY_LAYERS", v.Get("LAYERS"))
	v.Set("INFO_FORMAT", infoFormat)
	px, py := "X", "Y"
	if s.opts.Version == "1.3.0" {
		px, py = "I", "J"
	}
	v.Set(px, strconv.Itoa(i))
	v.Set(py, strconv.Itoa(j))
	parsed.RawQuery = v.Encode()
	u = parsed.String()
	err = s.client.FetchLimited(ctx, u, MaxFeatureInfo, func(b []byte, ct string) error {
		if strings.Contains(ct, "se_xml") || bytes.Contains(b[:min(len(b), 512)], []byte("<ServiceExceptionReport")) {
			return &upstream.Error{URL: upstream.Redact(u), Status: 200, Msg: "the upstream answered an exception"}
		}
		body, contentType = bytes.Clone(b), ct
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("wms GetFeatureInfo for z%d tile %d,%d: %w", z, x, y, err)
	}
	return body, contentType, nil
}
