package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// indexVersion is the "tilecache" member of index.json: the version of its
// shape.
const indexVersion = 1

// indexDoc is index.json, the root list of the tile sets that have
// documents. Paths in it are relative to index.json and start with "./", so
// a first segment holding ':' ("demo:world") is not read as a URL scheme.
type indexDoc struct {
	TileCache int          `json:"tilecache"`
	Generated string       `json:"generated"`
	TileSets  []indexEntry `json:"tileSets"`
}

type indexEntry struct {
	Layer        string            `json:"layer"`
	LayerID      string            `json:"layerId"`
	Title        string            `json:"title"`
	Attribution  string            `json:"attribution"`
	GridSet      string            `json:"gridSet"`
	SRS          string            `json:"srs"`
	Format       string            `json:"format"`
	FormatID     string            `json:"formatId"`
	Ext          string            `json:"ext"`
	ParametersID string            `json:"parametersId"`
	Parameters   map[string]string `json:"parameters"`
	TileWidth    int               `json:"tileWidth"`
	TileHeight   int               `json:"tileHeight"`
	// Origin is the bottom-left corner of tile (0, 0), in grid units.
	Origin [2]float64 `json:"origin"`
	// Extent is the layer's coverage in grid units.
	Extent [4]float64 `json:"extent"`
	// Bounds is the coverage in WGS84 degrees, when the CRS is EPSG:4326
	// or Web Mercator.
	Bounds *[4]float64 `json:"bounds,omitempty"`
	// Resolutions are those of every level of the grid set, from 0.
	Resolutions []float64 `json:"resolutions"`
	MinZoom     int       `json:"minZoom"`
	MaxZoom     int       `json:"maxZoom"`
	TileMap     string    `json:"tileMap"`
	TileJSON    string    `json:"tileJSON,omitempty"`
	// TileJSONXYZ is the TileJSON document of the XYZ paths.
	TileJSONXYZ string `json:"tileJSONXYZ,omitempty"`
	// Tiles is the template of the stored keys (rows from the bottom).
	Tiles string `json:"tiles"`
	// XYZ is the template of the edge's XYZ paths (rows from the top).
	XYZ string `json:"xyz"`
	// Rows are the rows of every level of the grid set, from 0: a tile's
	// row from the top is Rows[z]-1-y.
	Rows []int64 `json:"rows"`
	// WMTS is the layer's WMTS capabilities.
	WMTS string `json:"wmts"`
	// PMTiles is the tile set's PMTiles archive, when one is stored: read
	// with range requests (the pmtiles library), rows from the top.
	PMTiles string `json:"pmtiles,omitempty"`
}

// newIndexEntry describes d for index.json.
func newIndexEntry(d *description) indexEntry {
	g := d.subset.GridSet
	c := d.subset.Extent()
	rel := "./" + d.path() + "/"
	e := indexEntry{
		Layer:        d.layer.Name,
		LayerID:      d.layer.ID,
		Title:        d.layer.Title,
		Attribution:  d.layer.Attribution,
		GridSet:      d.set.GridSetID,
		SRS:          d.srs(),
		Format:       d.mime,
		FormatID:     d.set.FormatID,
		Ext:          d.set.Ext,
		ParametersID: d.set.ParametersID,
		Parameters:   d.params,
		TileWidth:    g.TileWidth,
		TileHeight:   g.TileHeight,
		Origin:       [2]float64{d.originX, d.originY},
		Extent:       [4]float64{c.MinX, c.MinY, c.MaxX, c.MaxY},
		Resolutions:  g.Resolutions,
		MinZoom:      d.subset.MinZoom,
		MaxZoom:      d.subset.MaxZoom,
		TileMap:      rel + tileMapName,
		Tiles:        rel + d.tileTemplate(),
		XYZ:          "./" + d.xyzPath(),
		WMTS:         "./" + escapeSegment(d.layer.ID) + "/" + wmtsName,
	}
	for z := range g.Levels() {
		_, rows := g.Size(z)
		e.Rows = append(e.Rows, rows)
	}
	if b, ok := d.wgs84Bounds(); ok {
		e.Bounds = &b
	}
	if d.mercator {
		e.TileJSON = rel + tileJSONName
		e.TileJSONXYZ = rel + tileJSONXYZName
	}
	if d.pmtiles {
		e.PMTiles = "./" + d.archivePath()
	}
	return e
}

// index renders index.json for ds, stamped with generated.
func index(ds []*description, generated time.Time) ([]byte, error) {
	doc := indexDoc{TileCache: indexVersion, Generated: generated.UTC().Format(time.RFC3339), TileSets: []indexEntry{}}
	for _, d := range ds {
		doc.TileSets = append(doc.TileSets, newIndexEntry(d))
	}
	return marshalCompactJSON(doc)
}

// sameIndex reports whether stored, an index.json, lists the same tile
// sets as fresh: the generation time does not count.
func sameIndex(stored, fresh []byte) bool {
	var a, b indexDoc
	if json.Unmarshal(stored, &a) != nil || json.Unmarshal(fresh, &b) != nil {
		return false
	}
	a.Generated = b.Generated
	x, err1 := marshalCompactJSON(a)
	y, err2 := marshalCompactJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// parseIndex returns the entries of a stored index.json.
func parseIndex(data []byte) ([]indexEntry, error) {
	var doc indexDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("decode %s: %w", indexName, err)
	}
	return doc.TileSets, nil
}

// marshalCompactJSON encodes v on one line (index.json lists every tile set
// with all its resolutions; indenting would multiply its size), without
// HTML escaping, with a final newline.
func marshalCompactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return b.Bytes(), nil
}
