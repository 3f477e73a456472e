package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"tilecache/internal/vectortile"
)

// tileJSONDoc is a TileJSON 3.0.0 document; field order is output order.
// tileSize is not in the specification, but MapLibre reads it from a
// TileJSON source and otherwise draws raster tiles as 512 pixels wide.
type tileJSONDoc struct {
	TileJSON    string     `json:"tilejson"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Version     string     `json:"version"`
	Attribution string     `json:"attribution,omitempty"`
	Scheme      string     `json:"scheme"`
	Tiles       []string   `json:"tiles"`
	MinZoom     int        `json:"minzoom"`
	MaxZoom     int        `json:"maxzoom"`
	Bounds      [4]float64 `json:"bounds"`
	Center      [3]float64 `json:"center"`
	Format      string     `json:"format"`
	TileSize    int        `json:"tileSize"`
	// VectorLayers describe a vector tile set's layers (nil for images:
	// omitted).
	VectorLayers *[]vectorLayer `json:"vector_layers,omitempty"`
	// PMTiles is the URL of the tile set's PMTiles archive, when one is
	// stored (not in the specification, which allows more fields; the
	// pmtiles library reads it with range requests).
	PMTiles string `json:"pmtiles,omitempty"`
}

// vectorLayer is an entry of TileJSON's vector_layers: a layer of the
// tiles, its attributes and their types (String, Number, Boolean).
type vectorLayer struct {
	ID      string            `json:"id"`
	Fields  map[string]string `json:"fields"`
	MinZoom int               `json:"minzoom"`
	MaxZoom int               `json:"maxzoom"`
}

// tileJSON renders the tile set's TileJSON document; ok is false when the
// tile set is not the usual Web Mercator pyramid, which is all TileJSON
// can describe. With xyz false the tiles are the stored keys and scheme is
// "tms" (y counts rows from the bottom); with xyz true they are the edge's
// /xyz/ paths and scheme is "xyz" (rows from the top), which every
// TileJSON reader takes, those that ignore scheme included.
func tileJSON(d *description, baseURL string, xyz bool) (data []byte, ok bool, err error) {
	if !d.mercator {
		return nil, false, nil
	}
	bounds, _ := d.wgs84Bounds()
	doc := tileJSONDoc{
		TileJSON:    "3.0.0",
		Name:        d.layer.Title,
		Description: d.abstract(),
		Version:     "1.0.0",
		Attribution: safeAttribution(d.layer.Attribution),
		Scheme:      "tms",
		Tiles:       []string{baseURL + "/" + d.path() + "/" + d.tileTemplate()},
		MinZoom:     d.subset.MinZoom,
		MaxZoom:     d.subset.MaxZoom,
		Bounds:      bounds,
		Center: [3]float64{
			roundNearest((bounds[0] + bounds[2]) / 2),
			roundNearest((bounds[1] + bounds[3]) / 2),
			float64(d.centerZoom()),
		},
		Format:   d.set.Ext,
		TileSize: d.subset.GridSet.TileWidth,
	}
	if d.pmtiles {
		doc.PMTiles = baseURL + "/" + d.archivePath()
	}
	if d.mime == vectortile.MVT {
		layers := make([]vectorLayer, 0, len(d.vectorLayers))
		for _, l := range d.vectorLayers {
			fields := make(map[string]string, len(l.Keys))
			for i, k := range l.Keys {
				if t := l.KeyTypes[i]; t != "" {
					fields[k] = t
				}
			}
			layers = append(layers, vectorLayer{ID: l.Name, Fields: fields, MinZoom: doc.MinZoom, MaxZoom: doc.MaxZoom})
		}
		doc.VectorLayers = &layers
	}
	if xyz {
		doc.Scheme = "xyz"
		doc.Tiles = []string{baseURL + "/" + d.xyzPath()}
		doc.Description = strings.Replace(doc.Description, "from the bottom (TMS)", "from the top (XYZ)", 1)
	}
	data, err = marshalJSON(doc)
	return data, err == nil, err
}

func roundNearest(v float64) float64 { return math.Round(v*decimals) / decimals }

// marshalJSON encodes v indented, without HTML escaping (an attribution
// may hold a link; safeAttribution keeps only such markup), with a final
// newline.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return b.Bytes(), nil
}
