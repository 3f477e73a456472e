package discovery

import (
	"encoding/xml"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/edgepath"
)

// parsedWMSC is a WMS-C capabilities document as a reader sees it.
type parsedWMSC struct {
	XMLName xml.Name `xml:"WMT_MS_Capabilities"`
	Version string   `xml:"version,attr"`
	GetMap  struct {
		Href string `xml:"href,attr"`
	} `xml:"Capability>Request>GetMap>DCPType>HTTP>Get>OnlineResource"`
	TileSets []struct {
		SRS string `xml:"SRS"`
		Box struct {
			MinX float64 `xml:"minx,attr"`
			MinY float64 `xml:"miny,attr"`
		} `xml:"BoundingBox"`
		Resolutions string `xml:"Resolutions"`
		Width       int    `xml:"Width"`
		Height      int    `xml:"Height"`
		Format      string `xml:"Format"`
		Layers      string `xml:"Layers"`
	} `xml:"Capability>VendorSpecificCapabilities>TileSet"`
	Layers []string `xml:"Capability>Layer>Layer>Name"`
}

// TestWMSCCapabilitiesTileSetsAreTiles: WMSCapabilities.xml lists a
// TileSet per layer, grid set and image format of the default parameters,
// and every tile a client derives from one (the box's corner, a listed
// resolution, the tile size: tile 0, 0 of that level) is one the edge's
// WMS-C mapping (edgepath.OWS, on what the service writes for the edge)
// answers with that tile set's stored key.
func TestWMSCCapabilitiesTileSetsAreTiles(t *testing.T) {
	c := testCatalogue(t, testLayers)
	var ds []*description
	for _, ts := range [][3]string{{"demo:world", "EPSG:900913", "image/png"}, {"demo:world", "EPSG:4326", "image/jpeg"},
		{"topo", "LAEA", "image/png8"}, {"topo", "TopLeftWhole", "image/png8"}, {"topo", "EPSG:900913", "image/png8"}} {
		d, err := describe(testLayer(t, c, ts[0]), ts[1], ts[2], "default", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	data, err := wmscCapabilities(ds, "https://d123.cloudfront.net")
	if err != nil {
		t.Fatal(err)
	}
	var doc parsedWMSC
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("does not parse: %v\n%s", err, data)
	}
	if doc.Version != "1.1.1" || doc.GetMap.Href != "https://d123.cloudfront.net/gwc/service/wms?" || strings.Join(doc.Layers, ",") != "demo:world,topo 50" {
		t.Errorf("version %s, GetMap %s, layers %v\n%s", doc.Version, doc.GetMap, doc.Layers, data)
	}
	if len(doc.TileSets) != len(ds) {
		t.Fatalf("%d tile sets, want %d\n%s", len(doc.TileSets), len(ds), data)
	}
	values := edgepath.ValuesOf(c, nil)
	kv := func(k string) (string, bool) { v, ok := values[k]; return v, ok }
	checked := 0
	for i, ts := range doc.TileSets {
		d := ds[i]
		if ts.Layers != d.set.LayerID || ts.Format != d.mime || ts.SRS != "EPSG:"+strconv.Itoa(d.subset.GridSet.EPSG) ||
			ts.Width != d.subset.GridSet.TileWidth || ts.Height != d.subset.GridSet.TileHeight {
			t.Errorf("tile set %d: %+v, want %s %s %s", i, ts, d.set.LayerID, d.set.GridSetID, d.mime)
		}
		res := strings.Fields(ts.Resolutions)
		if len(res) != d.subset.MaxZoom-d.subset.MinZoom+1 {
			t.Errorf("%s %s: %d resolutions, want levels %d to %d", ts.Layers, d.set.GridSetID, len(res), d.subset.MinZoom, d.subset.MaxZoom)
		}
		for j, s := range res {
			r, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			z := d.subset.MinZoom + j
			box := fmt.Sprintf("%v,%v,%v,%v", ts.Box.MinX, ts.Box.MinY, ts.Box.MinX+r*float64(ts.Width), ts.Box.MinY+r*float64(ts.Height))
			q := "SERVICE=WMS&VERSION=1.1.1&REQUEST=GetMap&LAYERS=" + strings.ReplaceAll(ts.Layers, " ", "%20") + "&STYLES=&FORMAT=" + ts.Format +
				"&SRS=" + ts.SRS + "&WIDTH=" + strconv.Itoa(ts.Width) + "&HEIGHT=" + strconv.Itoa(ts.Height) + "&BBOX=" + url.QueryEscape(box)
			a, _ := edgepath.OWS("/gwc/service/wms", q, kv)
			set := d.set
			set.Prefix = ""
			if want := "/" + strings.ReplaceAll(set.Key(z, 0, 0), " ", "%20"); a.Key != want {
				t.Errorf("%s %s z%d: the edge answers %q %s, want %s", ts.Layers, d.set.GridSetID, z, a.Key, a.Body, want)
			}
			checked++
		}
	}
	// Only the default parameters' image tile sets are WMS-C tile sets.
	d, err := describe(testLayer(t, c, "demo:world"), "EPSG:900913", "image/png", "0123abcd", map[string]string{"STYLES": "grid"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := wmscCapabilities([]*description{d}, ""); strings.Contains(string(data), "<TileSet>") {
		t.Errorf("a tile set of other parameters is listed:\n%s", data)
	}
	t.Logf("%d levels of %d tile sets answered as their tile 0, 0", checked, len(doc.TileSets))
}
