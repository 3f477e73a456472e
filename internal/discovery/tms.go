package discovery

import (
	"encoding/xml"
	"fmt"
	"strconv"
)

// The TMS 1.0.0 documents (OSGeo Tile Map Service specification). Field
// order is element order. GDAL recognises a TileMap by the literal prefix
// `<TileMap version="1.0.0"`, so version stays the first attribute.

type tileMapXML struct {
	XMLName        xml.Name        `xml:"TileMap"`
	Version        string          `xml:"version,attr"`
	TileMapService string          `xml:"tilemapservice,attr"`
	Title          string          `xml:"Title"`
	Abstract       string          `xml:"Abstract"`
	Attribution    *attributionXML `xml:"Attribution"`
	SRS            string          `xml:"SRS"`
	BoundingBox    boundingBoxXML  `xml:"BoundingBox"`
	Origin         originXML       `xml:"Origin"`
	TileFormat     tileFormatXML   `xml:"TileFormat"`
	TileSets       tileSetsXML     `xml:"TileSets"`
}

type attributionXML struct {
	Title string `xml:"Title"`
}

type boundingBoxXML struct {
	MinX string `xml:"minx,attr"`
	MinY string `xml:"miny,attr"`
	MaxX string `xml:"maxx,attr"`
	MaxY string `xml:"maxy,attr"`
}

type originXML struct {
	X string `xml:"x,attr"`
	Y string `xml:"y,attr"`
}

type tileFormatXML struct {
	Width     int    `xml:"width,attr"`
	Height    int    `xml:"height,attr"`
	MimeType  string `xml:"mime-type,attr"`
	Extension string `xml:"extension,attr"`
}

type tileSetsXML struct {
	Profile  string       `xml:"profile,attr"`
	TileSets []tileSetXML `xml:"TileSet"`
}

type tileSetXML struct {
	Href          string `xml:"href,attr"`
	UnitsPerPixel string `xml:"units-per-pixel,attr"`
	Order         int    `xml:"order,attr"`
}

type tileMapServiceXML struct {
	XMLName  xml.Name          `xml:"TileMapService"`
	Version  string            `xml:"version,attr"`
	Title    string            `xml:"Title"`
	Abstract string            `xml:"Abstract"`
	TileMaps []tileMapEntryXML `xml:"TileMaps>TileMap"`
}

type tileMapEntryXML struct {
	Title   string `xml:"title,attr"`
	SRS     string `xml:"srs,attr"`
	Profile string `xml:"profile,attr"`
	Href    string `xml:"href,attr"`
}

// tileMap renders the tile set's TMS TileMap resource. BoundingBox is the
// tiled extent rather than the layer's coverage because GDAL, the main
// reader, counts tiles from the box's corners; the coverage is in
// index.json and tilejson.json. Origin is the bottom-left corner of tile
// (0, 0); there is one TileSet per level from 0 to the subset's last,
// order = z, whose href is the level's directory, so tile (x, y) is
// href/x/y.extension. Levels before the subset's first are listed too
// (they hold no tiles): GDAL refuses a TileMap whose orders do not run
// 0, 1, 2, …
func tileMap(d *description, baseURL string) ([]byte, error) {
	g := d.subset.GridSet
	doc := tileMapXML{
		Version:        "1.0.0",
		TileMapService: baseURL + "/" + tmsName,
		Title:          d.layer.Title,
		Abstract:       d.abstract(),
		SRS:            d.srs(),
		BoundingBox: boundingBoxXML{
			MinX: formatFloat(d.tiled.MinX), MinY: formatFloat(d.tiled.MinY),
			MaxX: formatFloat(d.tiled.MaxX), MaxY: formatFloat(d.tiled.MaxY),
		},
		Origin:     originXML{X: formatFloat(d.originX), Y: formatFloat(d.originY)},
		TileFormat: tileFormatXML{Width: g.TileWidth, Height: g.TileHeight, MimeType: d.mime, Extension: d.set.Ext},
		TileSets:   tileSetsXML{Profile: d.profile},
	}
	if d.layer.Attribution != "" {
		doc.Attribution = &attributionXML{Title: d.layer.Attribution}
	}
	prefix := baseURL + "/" + d.path() + "/"
	for z := 0; z <= d.subset.MaxZoom; z++ {
		doc.TileSets.TileSets = append(doc.TileSets.TileSets, tileSetXML{
			Href:          prefix + strconv.Itoa(z),
			UnitsPerPixel: formatFloat(g.Resolutions[z]),
			Order:         z,
		})
	}
	return marshalXML(doc)
}

// tileMapService renders the TMS root listing the TileMap resources of ds.
func tileMapService(ds []*description, baseURL string) ([]byte, error) {
	doc := tileMapServiceXML{
		Version:  "1.0.0",
		Title:    "tilecache",
		Abstract: "Tile sets cached by tilecache. Tile rows are counted from the bottom (TMS).",
		TileMaps: []tileMapEntryXML{},
	}
	for _, d := range ds {
		doc.TileMaps = append(doc.TileMaps, tileMapEntryXML{
			Title:   mapTitle(d),
			SRS:     d.srs(),
			Profile: d.profile,
			Href:    baseURL + "/" + d.path() + "/" + tileMapName,
		})
	}
	return marshalXML(doc)
}

// mapTitle tells the tile sets of one layer apart in a list.
func mapTitle(d *description) string {
	t := d.layer.Title + " (" + d.set.GridSetID + ", " + d.set.FormatID
	if len(d.params) > 0 {
		t += ", " + d.paramsText()
	}
	return t + ")"
}

func marshalXML(v any) ([]byte, error) {
	b, err := xml.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode XML: %w", err)
	}
	out := make([]byte, 0, len(xml.Header)+len(b)+1)
	out = append(out, xml.Header...)
	out = append(out, b...)
	return append(out, '\n'), nil
}
