// Package wmscaps reads a WMS GetCapabilities document (WMS 1.1.1 and
// 1.3.0) and proposes cached layers for its named layers: their bounding
// boxes as the grid subsets' extents, the server's GetMap address, and the
// cheapest lossless upstream format the server offers.
package wmscaps

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
)

// Layer is a named layer of the capabilities.
type Layer struct {
	Name, Title string
	// BBox is the layer's extent in WGS84 degrees (west, south, east,
	// north), its own or its nearest ancestor's; HasBBox is false when
	// neither gives one.
	BBox    [4]float64
	HasBBox bool
	Styles  []string
}

// Capabilities is what a proposal needs of a GetCapabilities document.
type Capabilities struct {
	Version string
	Title   string
	// GetMapURL is the GetMap address the server names (its online
	// resource), "" when it names none.
	GetMapURL string
	// Formats are the GetMap formats the server offers.
	Formats []string
	Layers  []Layer
}

type capsDoc struct {
	XMLName xml.Name
	Version string `xml:"version,attr"`
	Service struct {
		Title string `xml:"Title"`
	} `xml:"Service"`
	Capability struct {
		GetMap struct {
			Formats []string `xml:"Format"`
			Online  struct {
				Href string `xml:"http://www.w3.org/1999/xlink href,attr"`
			} `xml:"DCPType>HTTP>Get>OnlineResource"`
		} `xml:"Request>GetMap"`
		Layers []capsLayer `xml:"Layer"`
	} `xml:"Capability"`
}

type capsLayer struct {
	Name   string `xml:"Name"`
	Title  string `xml:"Title"`
	LatLon *struct {
		MinX float64 `xml:"minx,attr"`
		MinY float64 `xml:"miny,attr"`
		MaxX float64 `xml:"maxx,attr"`
		MaxY float64 `xml:"maxy,attr"`
	} `xml:"LatLonBoundingBox"` // WMS 1.1.1
	Geo *struct {
		West  float64 `xml:"westBoundLongitude"`
		East  float64 `xml:"eastBoundLongitude"`
		South float64 `xml:"southBoundLatitude"`
		North float64 `xml:"northBoundLatitude"`
	} `xml:"EX_GeographicBoundingBox"` // WMS 1.3.0
	Styles []struct {
		Name string `xml:"Name"`
	} `xml:"Style"`
	Layers []capsLayer `xml:"Layer"`
}

// Parse reads a GetCapabilities document of WMS 1.1.1
// (WMT_MS_Capabilities) or 1.3.0 (WMS_Capabilities). Layers without a
// name (groups that cannot be requested) are left out; their children
// are kept, with the group's bounding box when they have none.
func Parse(data []byte) (*Capabilities, error) {
	var doc capsDoc
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	dec.Entity = xml.HTMLEntity
	if err := dec.Decode(&doc); err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "read WMS capabilities: %v", err)
	}
	switch doc.XMLName.Local {
	case "WMT_MS_Capabilities", "WMS_Capabilities":
	case "ServiceExceptionReport", "ExceptionReport":
		return nil, apperr.Invalidf("read WMS capabilities: the server answered an exception report: %s", quote(data))
	default:
		return nil, apperr.Invalidf("read WMS capabilities: the root element is %s, not WMT_MS_Capabilities (1.1.1) or WMS_Capabilities (1.3.0)",
			apperr.Show(doc.XMLName.Local))
	}
	c := &Capabilities{Version: doc.Version, Title: strings.TrimSpace(doc.Service.Title),
		GetMapURL: strings.TrimSpace(doc.Capability.GetMap.Online.Href)}
	for _, f := range doc.Capability.GetMap.Formats {
		c.Formats = append(c.Formats, strings.TrimSpace(f))
	}
	var walk func(ls []capsLayer, bbox *[4]float64)
	walk = func(ls []capsLayer, bbox *[4]float64) {
		for _, l := range ls {
			own := bbox
			switch {
			case l.Geo != nil:
				own = &[4]float64{l.Geo.West, l.Geo.South, l.Geo.East, l.Geo.North}
			case l.LatLon != nil:
				own = &[4]float64{l.LatLon.MinX, l.LatLon.MinY, l.LatLon.MaxX, l.LatLon.MaxY}
			}
			if name := strings.TrimSpace(l.Name); name != "" {
				out := Layer{Name: name, Title: strings.TrimSpace(l.Title)}
				if own != nil {
					out.BBox, out.HasBBox = *own, true
				}
				for _, s := range l.Styles {
					if n := strings.TrimSpace(s.Name); n != "" {
						out.Styles = append(out.Styles, n)
					}
				}
				c.Layers = append(c.Layers, out)
			}
			walk(l.Layers, own)
		}
	}
	walk(doc.Capability.Layers, nil)
	return c, nil
}

// maxQuote bounds how much of a document an error quotes.
const maxQuote = 1000

// quote returns a document on one line, cut after maxQuote bytes (at a
// character's start) with "…".
func quote(data []byte) string {
	s := strings.Join(strings.Fields(string(data)), " ")
	if len(s) <= maxQuote {
		return s
	}
	cut := maxQuote
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Layer returns the named layer.
func (c *Capabilities) Layer(name string) (Layer, bool) {
	i := slices.IndexFunc(c.Layers, func(l Layer) bool { return l.Name == name })
	if i < 0 {
		return Layer{}, false
	}
	return c.Layers[i], true
}

// UpstreamFormat returns the GetMap format a cache should ask the server
// for: a lossless one, PNG unless near (the server is next to the seeder:
// same host or region), where an uncompressed TIFF saves the server's PNG
// encoding and the cache's decoding. ok is false when the server offers
// no lossless format (PNG, TIFF or GIF).
func (c *Capabilities) UpstreamFormat(near bool) (format string, ok bool) {
	order := []string{"image/png", "image/tiff", "image/gif"}
	if near {
		order = []string{"image/tiff", "image/png", "image/gif"}
	}
	for _, want := range order {
		for _, f := range c.Formats {
			if f == want || strings.HasPrefix(f, want+";") {
				return f, true
			}
		}
	}
	return "", false
}

// maxLatitude is where the spherical Mercator map stops.
const maxLatitude = 85.0511287798066

// mercatorHalf is half the width of the spherical Mercator world, in
// metres.
const mercatorHalf = math.Pi * 6378137

// Options shape a proposal.
type Options struct {
	// URL is the server's GetMap address; "" takes the capabilities'.
	URL string
	// Near picks TIFF before PNG as the upstream format (see
	// [Capabilities.UpstreamFormat]).
	Near bool
	// Formats are the cached tile formats; nil: image/png and image/jpeg.
	Formats []string
}

// Propose returns a cached layer for each of names (every named layer,
// each name once, when names is empty): the WMS layer as its source, transparent, in the
// built-in grid sets EPSG:4326 and EPSG:900913, each subset's extent the
// layer's bounding box (in Web Mercator clamped to the map's latitudes).
// An unknown name, or a server without a lossless format or a GetMap
// address, is an apperr.Invalid error naming it.
func Propose(c *Capabilities, names []string, o Options) ([]gwc.Layer, error) {
	url := o.URL
	if url == "" {
		url = c.GetMapURL
	}
	// Servers often name it with an empty query ("…/wms?"): the source
	// adds its own.
	url = strings.TrimRight(url, "?&")
	if url == "" {
		return nil, apperr.Invalidf("the capabilities name no GetMap address: give the server's URL")
	}
	format, ok := c.UpstreamFormat(o.Near)
	if !ok {
		return nil, apperr.Invalidf("the server offers no lossless GetMap format (PNG, TIFF or GIF), only %s", strings.Join(c.Formats, ", "))
	}
	formats := o.Formats
	if len(formats) == 0 {
		formats = []string{"image/png", "image/jpeg"}
	}
	if len(names) == 0 {
		// Each name once: a server may list a layer in several groups.
		for _, l := range c.Layers {
			if !slices.Contains(names, l.Name) {
				names = append(names, l.Name)
			}
		}
	}
	var out []gwc.Layer
	var unknown []string
	for _, name := range names {
		l, ok := c.Layer(name)
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		p := gwc.Layer{Name: l.Name, Title: l.Title, Formats: slices.Clone(formats),
			Source: gwc.WMSSource{Type: "wms", URL: url, Layers: l.Name, Format: format, Transparent: true}}
		if p.Title == l.Name {
			p.Title = ""
		}
		geo := gwc.Subset{GridSet: "EPSG:4326"}
		merc := gwc.Subset{GridSet: "EPSG:900913"}
		if b, ok := extent(l); ok {
			geo.Extent = []float64{max(b[0], -180), max(b[1], -90), min(b[2], 180), min(b[3], 90)}
			x0, y0 := toMercator(b[0], b[1])
			x1, y1 := toMercator(b[2], b[3])
			merc.Extent = []float64{x0, y0, x1, y1}
		}
		p.GridSubsets = []gwc.Subset{geo, merc}
		out = append(out, p)
	}
	if len(unknown) > 0 {
		return nil, apperr.Invalidf("the capabilities have no layer named %s (named layers: %s)",
			strings.Join(unknown, ", "), strings.Join(layerNames(c), ", "))
	}
	return out, nil
}

// extent returns the box a layer's subsets are cut to; ok is false when
// they are not cut: no box, the whole world, or a box that is not one
// once clamped to the map (not finite, or no area in Web Mercator). A box
// across the antimeridian (west > east) takes every longitude.
func extent(l Layer) (b [4]float64, ok bool) {
	if !l.HasBBox || whole(l.BBox) {
		return b, false
	}
	b = l.BBox
	if b[0] > b[2] {
		b[0], b[2] = -180, 180
	}
	x0, y0 := toMercator(b[0], b[1])
	x1, y1 := toMercator(b[2], b[3])
	for _, v := range b {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, false
		}
	}
	if !(max(b[0], -180) < min(b[2], 180) && max(b[1], -90) < min(b[3], 90) && x0 < x1 && y0 < y1) {
		return b, false
	}
	return b, !whole(b)
}

// whole reports whether a bounding box covers the world, which the
// built-in grid sets do anyway.
func whole(b [4]float64) bool {
	return b[0] <= -180 && b[1] <= -90 && b[2] >= 180 && b[3] >= 90
}

// toMercator projects degrees to spherical Mercator metres, rounded to
// centimetres, latitudes clamped to the map's.
func toMercator(lon, lat float64) (x, y float64) {
	lon = min(max(lon, -180), 180)
	lat = min(max(lat, -maxLatitude), maxLatitude)
	x = lon / 180 * mercatorHalf
	y = math.Log(math.Tan((90+lat)*math.Pi/360)) * 6378137
	return math.Round(x*100) / 100, math.Round(y*100) / 100
}

func layerNames(c *Capabilities) []string {
	out := make([]string, 0, len(c.Layers))
	for _, l := range c.Layers {
		out = append(out, l.Name)
	}
	return out
}

// String describes a layer in one line.
func (l Layer) String() string {
	if !l.HasBBox {
		return l.Name
	}
	return fmt.Sprintf("%s (%g, %g, %g, %g)", l.Name, l.BBox[0], l.BBox[1], l.BBox[2], l.BBox[3])
}
