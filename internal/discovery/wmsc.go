package discovery

import (
	"encoding/xml"
	"slices"
	"strconv"
	"strings"

	"tilecache/internal/tilestore"
)

// wmscName is the WMS-C capabilities document, at the root: what
// /gwc/service/wms?REQUEST=GetCapabilities answers (see internal/edgepath's
// OWS).
const wmscName = "WMSCapabilities.xml"

// The WMS 1.1.1 capabilities of a tiled WMS (WMS-C), as GeoWebCache
// writes them: GetMap on /gwc/service/wms, a Layer per layer, and in
// VendorSpecificCapabilities a TileSet per layer, grid set and format of
// the default parameters, whose SRS, box (anchored on the tile origin),
// resolutions and tile size are those a GetMap must ask for to get a
// stored tile. Field order is element order.

type wmscCapabilitiesXML struct {
	XMLName    xml.Name `xml:"WMT_MS_Capabilities"`
	Version    string   `xml:"version,attr"`
	Service    wmscServiceXML
	Capability wmscCapabilityXML
}

type wmscServiceXML struct {
	XMLName  xml.Name        `xml:"Service"`
	Name     string          `xml:"Name"`
	Title    string          `xml:"Title"`
	Resource wmscResourceXML `xml:"OnlineResource"`
}

type wmscResourceXML struct {
	XLink string `xml:"xmlns:xlink,attr"`
	Type  string `xml:"xlink:type,attr"`
	Href  string `xml:"xlink:href,attr"`
}

type wmscCapabilityXML struct {
	XMLName    xml.Name `xml:"Capability"`
	Request    wmscRequestXML
	Exceptions []string         `xml:"Exception>Format"`
	TileSets   []wmscTileSetXML `xml:"VendorSpecificCapabilities>TileSet"`
	Layer      wmscLayerXML     `xml:"Layer"`
}

type wmscRequestXML struct {
	XMLName         xml.Name          `xml:"Request"`
	GetCapabilities wmscOperationXML  `xml:"GetCapabilities"`
	GetMap          wmscOperationXML  `xml:"GetMap"`
	GetFeatureInfo  *wmscOperationXML `xml:"GetFeatureInfo"`
}

// featureInfoFormats are the INFO_FORMATs listed for the queryable layers
// (those whose file says featureInfo: true); the upstream answers them.
var featureInfoFormats = []string{"text/plain", "text/html", "application/vnd.ogc.gml", "application/json"}

type wmscOperationXML struct {
	Formats []string        `xml:"Format"`
	Get     wmscResourceXML `xml:"DCPType>HTTP>Get>OnlineResource"`
}

type wmscTileSetXML struct {
	SRS         string     `xml:"SRS"`
	Box         wmscBoxXML `xml:"BoundingBox"`
	Resolutions string     `xml:"Resolutions"`
	Width       int        `xml:"Width"`
	Height      int        `xml:"Height"`
	Format      string     `xml:"Format"`
	Layers      string     `xml:"Layers"`
	Styles      string     `xml:"Styles"`
}

type wmscBoxXML struct {
	SRS  string `xml:"SRS,attr,omitempty"`
	MinX string `xml:"minx,attr"`
	MinY string `xml:"miny,attr"`
	MaxX string `xml:"maxx,attr"`
	MaxY string `xml:"maxy,attr"`
}

type wmscLayerXML struct {
	Queryable string         `xml:"queryable,attr,omitempty"`
	Name      string         `xml:"Name,omitempty"`
	Title     string         `xml:"Title"`
	Abstract  string         `xml:"Abstract,omitempty"`
	SRS       []string       `xml:"SRS"`
	LatLon    *wmscBoxXML    `xml:"LatLonBoundingBox"`
	Boxes     []wmscBoxXML   `xml:"BoundingBox"`
	Layers    []wmscLayerXML `xml:"Layer"`
}

// wmscCapabilities renders the WMS-C capabilities of the tile sets ds
// (the public ones): those of the default parameters are tile sets.
func wmscCapabilities(ds []*description, baseURL string) ([]byte, error) {
	res := wmscResourceXML{XLink: "http://www.w3.org/1999/xlink", Type: "simple", Href: baseURL + "/gwc/service/wms?"}
	doc := wmscCapabilitiesXML{Version: "1.1.1",
		Service: wmscServiceXML{Name: "OGC:WMS", Title: "tilecache", Resource: res}}
	c := &doc.Capability
	c.Request.GetCapabilities = wmscOperationXML{Formats: []string{"application/vnd.ogc.wms_xml"}, Get: res}
	c.Request.GetMap.Get = res
	c.Exceptions = []string{"application/vnd.ogc.se_xml"}
	c.Layer.Title = "tilecache"
	order, byLayer := byLayerID(ds)
	for _, id := range order {
		l := wmscLayerXML{Queryable: "0", Name: id, Title: byLayer[id][0].layer.Title, Abstract: byLayer[id][0].layer.Attribution}
		if byLayer[id][0].layer.FeatureInfo {
			l.Queryable = "1"
			c.Request.GetFeatureInfo = &wmscOperationXML{Formats: featureInfoFormats, Get: res}
		}
		for _, d := range byLayer[id] {
			if d.set.ParametersID != tilestore.DefaultParametersID || !strings.HasPrefix(d.mime, "image/") {
				continue
			}
			g := d.subset.GridSet
			srs := "EPSG:" + strconv.Itoa(g.EPSG)
			var res []string
			for z := d.subset.MinZoom; z <= d.subset.MaxZoom; z++ {
				res = append(res, strconv.FormatFloat(g.Resolutions[z], 'g', -1, 64))
			}
			box := wmscBoxXML{SRS: srs, MinX: formatFloat(d.originX), MinY: formatFloat(d.originY),
				MaxX: formatFloat(d.tiled.MaxX), MaxY: formatFloat(d.tiled.MaxY)}
			c.TileSets = append(c.TileSets, wmscTileSetXML{SRS: srs, Box: box, Resolutions: strings.Join(res, " "),
				Width: g.TileWidth, Height: g.TileHeight, Format: d.mime, Layers: id})
			if !slices.Contains(l.SRS, srs) {
				l.SRS = append(l.SRS, srs)
				l.Boxes = append(l.Boxes, box)
			}
			if !slices.Contains(c.Request.GetMap.Formats, d.mime) {
				c.Request.GetMap.Formats = append(c.Request.GetMap.Formats, d.mime)
			}
		}
		if len(l.SRS) == 0 {
			continue
		}
		if wgs84 := unionWGS84(byLayer[id]); wgs84 != nil {
			l.LatLon = &wmscBoxXML{MinX: formatFloat(wgs84[0]), MinY: formatFloat(wgs84[1]), MaxX: formatFloat(wgs84[2]), MaxY: formatFloat(wgs84[3])}
		}
		for _, s := range l.SRS {
			if !slices.Contains(c.Layer.SRS, s) {
				c.Layer.SRS = append(c.Layer.SRS, s)
			}
		}
		c.Layer.Layers = append(c.Layer.Layers, l)
	}
	return marshalXML(doc)
}
