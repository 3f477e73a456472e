package discovery

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strconv"

	"tilecache/internal/edgepath"
	"tilecache/internal/grid"
	"tilecache/internal/tilestore"
)

// wmtsName is the WMTS capabilities document, at the root (every tile
// set) and under each layer's id (that layer's).
const wmtsName = "WMTSCapabilities.xml"

// The OGC WMTS 1.0.0 capabilities, RESTful only: each layer's tiles are
// addressed by ResourceURL templates on the CDN's /wmts/ paths, which
// count rows from the top (see internal/edgepath). Field order is element
// order.

type wmtsCapabilitiesXML struct {
	XMLName    xml.Name `xml:"Capabilities"`
	XMLNS      string   `xml:"xmlns,attr"`
	OWS        string   `xml:"xmlns:ows,attr"`
	XLink      string   `xml:"xmlns:xlink,attr"`
	Version    string   `xml:"version,attr"`
	Service    wmtsServiceXML
	Operations wmtsOperationsXML
	Contents   wmtsContentsXML `xml:"Contents"`
}

// wmtsOperationsXML advertises the KVP binding (/gwc/service/wmts, see
// internal/edgepath's OWS) beside the RESTful one (the ResourceURLs).
type wmtsOperationsXML struct {
	XMLName    xml.Name           `xml:"ows:OperationsMetadata"`
	Operations []wmtsOperationXML `xml:"ows:Operation"`
}

type wmtsOperationXML struct {
	Name string       `xml:"name,attr"`
	Gets []wmtsGetXML `xml:"ows:DCP>ows:HTTP>ows:Get"`
}

type wmtsGetXML struct {
	Href       string            `xml:"xlink:href,attr"`
	Constraint wmtsConstraintXML `xml:"ows:Constraint"`
}

type wmtsConstraintXML struct {
	Name   string   `xml:"name,attr"`
	Values []string `xml:"ows:AllowedValues>ows:Value"`
}

// wmtsOperations lists GetCapabilities and GetTile, RESTful under /wmts/
// and in KVP on /gwc/service/wmts. RESTful comes first: a client that
// takes the first encoding listed (OpenLayers' optionsFromCapabilities)
// keeps the RESTful paths; one that asks for KVP (OWSLib's gettile) finds
// it.
func wmtsOperations(baseURL string) wmtsOperationsXML {
	var ops wmtsOperationsXML
	for _, name := range []string{"GetCapabilities", "GetTile"} {
		rest := baseURL + "/wmts/"
		if name == "GetCapabilities" {
			rest = baseURL + "/" + wmtsName
		}
		ops.Operations = append(ops.Operations, wmtsOperationXML{Name: name, Gets: []wmtsGetXML{
			{Href: rest, Constraint: wmtsConstraintXML{Name: "GetEncoding", Values: []string{"RESTful"}}},
			{Href: baseURL + "/gwc/service/wmts?", Constraint: wmtsConstraintXML{Name: "GetEncoding", Values: []string{"KVP"}}},
		}})
	}
	return ops
}

type wmtsServiceXML struct {
	XMLName            xml.Name `xml:"ows:ServiceIdentification"`
	Title              string   `xml:"ows:Title"`
	ServiceType        string   `xml:"ows:ServiceType"`
	ServiceTypeVersion string   `xml:"ows:ServiceTypeVersion"`
}

type wmtsContentsXML struct {
	Layers []wmtsLayerXML     `xml:"Layer"`
	Sets   []wmtsMatrixSetXML `xml:"TileMatrixSet"`
}

type wmtsLayerXML struct {
	Title      string            `xml:"ows:Title"`
	Abstract   string            `xml:"ows:Abstract,omitempty"`
	WGS84      *wmtsBBoxXML      `xml:"ows:WGS84BoundingBox"`
	Identifier string            `xml:"ows:Identifier"`
	Styles     []wmtsStyleXML    `xml:"Style"`
	Formats    []string          `xml:"Format"`
	Infos      []string          `xml:"InfoFormat"`
	Links      []wmtsLinkXML     `xml:"TileMatrixSetLink"`
	Resources  []wmtsResourceXML `xml:"ResourceURL"`
}

type wmtsBBoxXML struct {
	Lower string `xml:"ows:LowerCorner"`
	Upper string `xml:"ows:UpperCorner"`
}

type wmtsStyleXML struct {
	IsDefault  bool   `xml:"isDefault,attr"`
	Title      string `xml:"ows:Title,omitempty"`
	Identifier string `xml:"ows:Identifier"`
}

type wmtsLinkXML struct {
	Set    string          `xml:"TileMatrixSet"`
	Limits []wmtsLimitsXML `xml:"TileMatrixSetLimits>TileMatrixLimits"`
}

type wmtsLimitsXML struct {
	Matrix string `xml:"TileMatrix"`
	MinRow int64  `xml:"MinTileRow"`
	MaxRow int64  `xml:"MaxTileRow"`
	MinCol int64  `xml:"MinTileCol"`
	MaxCol int64  `xml:"MaxTileCol"`
}

type wmtsResourceXML struct {
	Format   string `xml:"format,attr"`
	Type     string `xml:"resourceType,attr"`
	Template string `xml:"template,attr"`
}

type wmtsMatrixSetXML struct {
	Identifier string          `xml:"ows:Identifier"`
	CRS        string          `xml:"ows:SupportedCRS"`
	Matrices   []wmtsMatrixXML `xml:"TileMatrix"`
}

type wmtsMatrixXML struct {
	Identifier string `xml:"ows:Identifier"`
	Scale      string `xml:"ScaleDenominator"`
	TopLeft    string `xml:"TopLeftCorner"`
	TileWidth  int    `xml:"TileWidth"`
	TileHeight int    `xml:"TileHeight"`
	Width      int64  `xml:"MatrixWidth"`
	Height     int64  `xml:"MatrixHeight"`
}

// metresPerDegree is the length of a degree on the sphere WMTS scale
// denominators of geographic CRSs are computed on (OGC WMTS 1.0.0, 6.1).
const metresPerDegree = 2 * math.Pi * earthRadius / 360

// pixelSize is the standardised rendering pixel size of WMTS, in metres.
const pixelSize = 0.00028

// wmtsCapabilities renders the capabilities of the tile sets ds: a Layer
// per layer (its formats, a Style per parameters id, a TileMatrixSetLink
// per grid set with the limits of its grid subset, a ResourceURL per
// format) and a TileMatrixSet per grid set.
func wmtsCapabilities(ds []*description, baseURL string) ([]byte, error) {
	doc := wmtsCapabilitiesXML{
		XMLNS: "http://www.opengis.net/wmts/1.0", OWS: "http://www.opengis.net/ows/1.1",
		XLink: "http://www.w3.org/1999/xlink", Version: "1.0.0",
		Service:    wmtsServiceXML{Title: "tilecache", ServiceType: "OGC WMTS", ServiceTypeVersion: "1.0.0"},
		Operations: wmtsOperations(baseURL),
	}
	sets := map[string]bool{}
	featureInfo := false
	order, byLayer := byLayerID(ds)
	for _, id := range order {
		group := byLayer[id]
		first := group[0]
		l := wmtsLayerXML{Title: first.layer.Title, Identifier: id}
		if first.layer.Attribution != "" {
			l.Abstract = first.layer.Attribution
		}
		var styles, formats, grids []string
		for _, d := range group {
			if !slices.Contains(styles, d.set.ParametersID) {
				styles = append(styles, d.set.ParametersID)
			}
			if !slices.Contains(formats, d.mime) {
				formats = append(formats, d.mime)
				l.Resources = append(l.Resources, wmtsResourceXML{Format: d.mime, Type: "tile",
					Template: baseURL + "/wmts/" + escapeSegment(id) + "/{TileMatrixSet}/" + escapeSegment(d.set.FormatID) +
						"/{Style}/{TileMatrix}/{TileCol}/{TileRow}." + d.set.Ext})
			}
			if !slices.Contains(grids, d.set.GridSetID) {
				grids = append(grids, d.set.GridSetID)
				l.Links = append(l.Links, wmtsLink(d.subset))
				if !sets[d.set.GridSetID] {
					sets[d.set.GridSetID] = true
					doc.Contents.Sets = append(doc.Contents.Sets, wmtsMatrixSet(d.subset.GridSet))
				}
			}
		}
		if wgs84 := unionWGS84(group); wgs84 != nil {
			l.WGS84 = &wmtsBBoxXML{Lower: formatFloat(wgs84[0]) + " " + formatFloat(wgs84[1]),
				Upper: formatFloat(wgs84[2]) + " " + formatFloat(wgs84[3])}
		}
		// The default parameters are the default style; a tile set of
		// other parameters is a style named by its parameters id.
		slices.SortFunc(styles, func(a, b string) int {
			switch {
			case a == tilestore.DefaultParametersID:
				return -1
			case b == tilestore.DefaultParametersID:
				return 1
			}
			return 0
		})
		for i, s := range styles {
			st := wmtsStyleXML{IsDefault: i == 0, Identifier: s}
			for _, d := range group {
				if d.set.ParametersID == s && len(d.params) > 0 {
					st.Title = d.paramsText()
				}
			}
			l.Styles = append(l.Styles, st)
		}
		l.Formats = formats
		if first.layer.FeatureInfo && !first.layer.Private {
			// The RESTful FeatureInfo resource, a template per info
			// format (edgepath.FeatureInfoPath); KVP GetFeatureInfo on
			// /gwc/service/wmts.
			featureInfo = true
			for _, f := range edgepath.InfoFormats {
				l.Infos = append(l.Infos, f.MIME)
				l.Resources = append(l.Resources, wmtsResourceXML{Format: f.MIME, Type: "FeatureInfo",
					Template: baseURL + edgepath.FeatureInfoPath + escapeSegment(id) +
						"/{Style}/{TileMatrixSet}/{TileMatrix}/{TileRow}/{TileCol}/{J}/{I}." + f.Ext})
			}
		}
		doc.Contents.Layers = append(doc.Contents.Layers, l)
	}
	if featureInfo {
		doc.Operations.Operations = append(doc.Operations.Operations, wmtsOperationXML{Name: "GetFeatureInfo", Gets: []wmtsGetXML{
			{Href: baseURL + edgepath.FeatureInfoPath, Constraint: wmtsConstraintXML{Name: "GetEncoding", Values: []string{"RESTful"}}},
			{Href: baseURL + "/gwc/service/wmts?", Constraint: wmtsConstraintXML{Name: "GetEncoding", Values: []string{"KVP"}}},
		}})
	}
	return marshalXML(doc)
}

// wmtsLink links a layer to its grid set with the limits of its subset,
// rows counted from the top.
func wmtsLink(s *grid.Subset) wmtsLinkXML {
	link := wmtsLinkXML{Set: s.GridSet.ID}
	for z := s.MinZoom; z <= s.MaxZoom; z++ {
		r := s.CoverageRange(z)
		_, rows := s.GridSet.Size(z)
		link.Limits = append(link.Limits, wmtsLimitsXML{Matrix: strconv.Itoa(z),
			MinRow: rows - 1 - r.MaxY, MaxRow: rows - 1 - r.MinY, MinCol: r.MinX, MaxCol: r.MaxX})
	}
	return link
}

// wmtsMatrixSet describes a grid set: a TileMatrix per level, identified
// by its number, with its scale, its top-left corner in the axis order
// the CRS demands (latitude first in EPSG:4326) and its size in tiles.
func wmtsMatrixSet(g *grid.GridSet) wmtsMatrixSetXML {
	code := g.EPSG
	if grid.SameCRS(code, 3857) {
		code = 3857
	}
	set := wmtsMatrixSetXML{Identifier: g.ID, CRS: fmt.Sprintf("urn:ogc:def:crs:EPSG::%d", code)}
	for _, m := range matrices(g) {
		corner := formatFloat(m.left) + " " + formatFloat(m.top)
		if g.EPSG == 4326 {
			corner = formatFloat(m.top) + " " + formatFloat(m.left)
		}
		set.Matrices = append(set.Matrices, wmtsMatrixXML{
			Identifier: m.id,
			Scale:      strconv.FormatFloat(m.scale, 'g', 17, 64),
			TopLeft:    corner,
			TileWidth:  g.TileWidth, TileHeight: g.TileHeight,
			Width: m.cols, Height: m.rows,
		})
	}
	return set
}

// byLayerID groups tile sets by layer id, the ids in order of first
// appearance.
func byLayerID(ds []*description) (order []string, by map[string][]*description) {
	by = map[string][]*description{}
	for _, d := range ds {
		id := d.set.LayerID
		if _, ok := by[id]; !ok {
			order = append(order, id)
		}
		by[id] = append(by[id], d)
	}
	return order, by
}
