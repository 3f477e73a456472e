package discovery

import (
	"slices"
	"strconv"
	"strings"

	"tilecache/internal/grid"
	"tilecache/internal/tilestore"
	"tilecache/internal/vectortile"
)

// OGC API – Tiles (OGC 20-057) as static JSON documents beside the tiles.
// Clients ask for extensionless paths (/ogcapi/collections); the edge
// (internal/edgepath) maps /ogcapi to ogcapi.json and /ogcapi/{p} to
// ogcapi/{p}.json, and a tile's path to its stored key. Each layer with
// tiles of its default parameters is a collection with map tile sets, one
// per grid set, published under the id of the registered tile matrix set
// it is (WebMercatorQuad, WorldCRS84Quad) or else its own id.
const (
	ogcLandingName = "ogcapi.json"
	ogcDir         = "ogcapi/"
)

// The relation types of OGC API – Tiles.
const (
	relTilesetsMap    = "http://www.opengis.net/def/rel/ogc/1.0/tilesets-map"
	relTilesetsVector = "http://www.opengis.net/def/rel/ogc/1.0/tilesets-vector"
	relTilingScheme   = "http://www.opengis.net/def/rel/ogc/1.0/tiling-scheme"
	relTilingSchemes  = "http://www.opengis.net/def/rel/ogc/1.0/tiling-schemes"
	crs84             = "http://www.opengis.net/def/crs/OGC/1.3/CRS84"
)

type ogcLink struct {
	Rel       string `json:"rel"`
	Type      string `json:"type,omitempty"`
	Title     string `json:"title,omitempty"`
	Templated bool   `json:"templated,omitempty"`
	Href      string `json:"href"`
}

type ogcLanding struct {
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Links       []ogcLink `json:"links"`
}

type ogcConformance struct {
	ConformsTo []string `json:"conformsTo"`
}

type ogcCollections struct {
	Links       []ogcLink       `json:"links"`
	Collections []ogcCollection `json:"collections"`
}

type ogcCollection struct {
	ID          string     `json:"id"`
	Title       string     `json:"title"`
	Description string     `json:"description,omitempty"`
	Extent      *ogcExtent `json:"extent,omitempty"`
	DataType    string     `json:"dataType"`
	Links       []ogcLink  `json:"links"`
}

type ogcExtent struct {
	Spatial struct {
		BBox [][4]float64 `json:"bbox"`
		CRS  string       `json:"crs"`
	} `json:"spatial"`
}

type ogcTilesets struct {
	Links    []ogcLink    `json:"links"`
	Tilesets []ogcTileset `json:"tilesets"`
}

// ogcTileset is a tile set, in the list (without limits) and alone.
type ogcTileset struct {
	Title            string      `json:"title"`
	DataType         string      `json:"dataType"`
	CRS              string      `json:"crs"`
	TileMatrixSetURI string      `json:"tileMatrixSetURI,omitempty"`
	Links            []ogcLink   `json:"links"`
	Limits           []ogcLimits `json:"tileMatrixSetLimits,omitempty"`
}

type ogcLimits struct {
	TileMatrix string `json:"tileMatrix"`
	MinRow     int64  `json:"minTileRow"`
	MaxRow     int64  `json:"maxTileRow"`
	MinCol     int64  `json:"minTileCol"`
	MaxCol     int64  `json:"maxTileCol"`
}

type ogcMatrixSets struct {
	Links []ogcLink         `json:"links"`
	Sets  []ogcMatrixSetRef `json:"tileMatrixSets"`
}

type ogcMatrixSetRef struct {
	ID    string    `json:"id"`
	Title string    `json:"title"`
	URI   string    `json:"uri,omitempty"`
	Links []ogcLink `json:"links"`
}

// ogcMatrixSet is a tile matrix set in the JSON encoding of OGC 17-083r4
// (TMS 2.0), with the members of the 1.0 encoding alongside (type,
// identifier, supportedCRS, tileMatrix), which GDAL before 3.7 reads.
type ogcMatrixSet struct {
	ID       string      `json:"id"`
	Title    string      `json:"title"`
	URI      string      `json:"uri,omitempty"`
	CRS      string      `json:"crs"`
	Matrices []ogcMatrix `json:"tileMatrices"`

	Type         string        `json:"type"`
	Identifier   string        `json:"identifier"`
	SupportedCRS string        `json:"supportedCRS"`
	Matrices10   []ogcMatrix10 `json:"tileMatrix"`
}

type ogcMatrix struct {
	ID         string     `json:"id"`
	Scale      float64    `json:"scaleDenominator"`
	CellSize   float64    `json:"cellSize"`
	Corner     string     `json:"cornerOfOrigin"`
	Origin     [2]float64 `json:"pointOfOrigin"`
	TileWidth  int        `json:"tileWidth"`
	TileHeight int        `json:"tileHeight"`
	Width      int64      `json:"matrixWidth"`
	Height     int64      `json:"matrixHeight"`
}

type ogcMatrix10 struct {
	Type       string     `json:"type"`
	Identifier string     `json:"identifier"`
	Scale      float64    `json:"scaleDenominator"`
	TopLeft    [2]float64 `json:"topLeftCorner"`
	TileWidth  int        `json:"tileWidth"`
	TileHeight int        `json:"tileHeight"`
	Width      int64      `json:"matrixWidth"`
	Height     int64      `json:"matrixHeight"`
}

// ogcAPIDocuments renders the OGC API – Tiles documents of the tile sets
// ds, by key below the store's root (without the key prefix). tmsIDs gives
// each grid set's published id ([grid.TileMatrixSetIDs] of every
// configured grid set, so that the edge's table agrees).
func ogcAPIDocuments(ds []*description, baseURL string, tmsIDs map[string]string) (map[string][]byte, error) {
	api := baseURL + "/ogcapi"
	docs := map[string]any{}
	self := func(href string) ogcLink { return ogcLink{Rel: "self", Type: "application/json", Href: href} }
	matrixSetHref := func(id string) string { return api + "/tileMatrixSets/" + escapeSegment(id) }
	// tmsID is the id a grid set is published under.
	tmsID := func(g *grid.GridSet) string {
		if id := tmsIDs[g.ID]; id != "" {
			return id
		}
		return g.ID
	}

	var collections []ogcCollection
	var sets []*grid.GridSet
	media := map[string]bool{}
	order, byLayer := byLayerID(ds)
	for _, id := range order {
		var group []*description // the default parameters' tile sets
		for _, d := range byLayer[id] {
			if d.set.ParametersID == tilestore.DefaultParametersID {
				group = append(group, d)
			}
		}
		if len(group) == 0 {
			continue
		}
		first := group[0]
		collHref := api + "/collections/" + escapeSegment(id)
		c := ogcCollection{ID: id, Title: first.layer.Title, Description: first.layer.Attribution, DataType: "map",
			Links: []ogcLink{self(collHref)}}
		// Images are map tiles (/map/tiles), vector tiles the vector
		// tiles path (/tiles).
		var maps, vectors []*description
		for _, d := range group {
			if vectortile.Is(d.mime) {
				vectors = append(vectors, d)
			} else {
				maps = append(maps, d)
			}
		}
		if len(maps) == 0 {
			c.DataType = "vector"
		}
		for _, kind := range [...]struct {
			group             []*description
			path, dataType    string
			rel, title, descr string
		}{
			{maps, "/map/tiles", "map", relTilesetsMap, "Map tile sets", "map"},
			{vectors, "/tiles", "vector", relTilesetsVector, "Vector tile sets", "vector"},
		} {
			if len(kind.group) == 0 {
				continue
			}
			tilesHref := collHref + kind.path
			c.Links = append(c.Links, ogcLink{Rel: kind.rel, Type: "application/json", Title: kind.title, Href: tilesHref})
			list := ogcTilesets{Links: []ogcLink{self(tilesHref)}}
			var grids []string
			for _, d := range kind.group {
				if slices.Contains(grids, d.set.GridSetID) {
					continue
				}
				grids = append(grids, d.set.GridSetID)
				g := d.subset.GridSet
				if !slices.ContainsFunc(sets, func(s *grid.GridSet) bool { return s.ID == g.ID }) {
					sets = append(sets, g)
				}
				tms := tmsID(g)
				setHref := tilesHref + "/" + escapeSegment(tms)
				// tileMatrixSetURI: the registered set's URI, else the document's
				// own URL (GDAL selects a tile set by it).
				setURI := registeredURI(tms, g)
				if setURI == "" {
					setURI = matrixSetHref(tms)
				}
				ts := ogcTileset{Title: first.layer.Title + " in " + tms, DataType: kind.dataType, CRS: crsURI(g),
					TileMatrixSetURI: setURI,
					Links: []ogcLink{self(setHref),
						{Rel: relTilingScheme, Type: "application/json", Title: "Tile matrix set " + tms, Href: matrixSetHref(tms)}}}
				entry := ts // the list's entry: no tiles, no limits
				entry.Links = slices.Clone(ts.Links)
				list.Tilesets = append(list.Tilesets, entry)
				for _, f := range kind.group {
					if f.set.GridSetID != g.ID {
						continue
					}
					m := mediaType(f.mime)
					media[m] = true
					ts.Links = append(ts.Links, ogcLink{Rel: "item", Type: m, Title: f.mime + " tiles", Templated: true,
						Href: setHref + "/{tileMatrix}/{tileRow}/{tileCol}." + escapeSegment(f.set.FormatID)})
				}
				for z := d.subset.MinZoom; z <= d.subset.MaxZoom; z++ {
					r := d.subset.CoverageRange(z)
					_, rows := g.Size(z)
					ts.Limits = append(ts.Limits, ogcLimits{TileMatrix: strconv.Itoa(z),
						MinRow: rows - 1 - r.MaxY, MaxRow: rows - 1 - r.MinY, MinCol: r.MinX, MaxCol: r.MaxX})
				}
				docs[ogcDir+"collections/"+id+kind.path+"/"+tms+".json"] = ts
			}
			docs[ogcDir+"collections/"+id+kind.path+".json"] = list
		}
		if bbox := unionWGS84(group); bbox != nil {
			c.Extent = &ogcExtent{}
			c.Extent.Spatial.BBox, c.Extent.Spatial.CRS = [][4]float64{*bbox}, crs84
		}
		docs[ogcDir+"collections/"+id+".json"] = c
		collections = append(collections, c)
	}

	refs := ogcMatrixSets{Links: []ogcLink{self(api + "/tileMatrixSets")}, Sets: []ogcMatrixSetRef{}}
	for _, g := range sets {
		tms := tmsID(g)
		refs.Sets = append(refs.Sets, ogcMatrixSetRef{ID: tms, Title: "Grid set " + g.ID, URI: registeredURI(tms, g),
			Links: []ogcLink{self(matrixSetHref(tms))}})
		docs[ogcDir+"tileMatrixSets/"+tms+".json"] = ogcMatrixSetOf(tms, g)
	}
	if collections == nil {
		collections = []ogcCollection{}
	}
	docs[ogcDir+"tileMatrixSets.json"] = refs
	docs[ogcDir+"collections.json"] = ogcCollections{Links: []ogcLink{self(api + "/collections")}, Collections: collections}

	conf := []string{
		"http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/core",
		"http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/tileset",
		"http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/tilesets-list",
		"http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/geodata-tilesets",
	}
	for _, m := range [...]struct{ media, class string }{{"image/png", "png"}, {"image/jpeg", "jpeg"}, {"image/tiff", "tiff"}, {vectortile.MVT, "mvt"}, {vectortile.GeoJSON, "geojson"}} {
		if media[m.media] {
			conf = append(conf, "http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/"+m.class)
		}
	}
	docs[ogcDir+"conformance.json"] = ogcConformance{ConformsTo: conf}
	docs[ogcLandingName] = ogcLanding{
		Title: "tilecache",
		Description: "Map tiles of the cached layers, as OGC API – Tiles. Tile rows are counted from the top; " +
			"the same tiles are served as TMS, WMTS and XYZ.",
		Links: []ogcLink{self(api),
			{Rel: "conformance", Type: "application/json", Title: "Conformance classes", Href: api + "/conformance"},
			{Rel: "data", Type: "application/json", Title: "Collections", Href: api + "/collections"},
			{Rel: relTilingSchemes, Type: "application/json", Title: "Tile matrix sets", Href: api + "/tileMatrixSets"}},
	}

	out := make(map[string][]byte, len(docs))
	for k, v := range docs {
		data, err := marshalJSON(v)
		if err != nil {
			return nil, err
		}
		out[k] = data
	}
	return out, nil
}

// ogcMatrixSetOf describes grid set g as tile matrix set id.
func ogcMatrixSetOf(id string, g *grid.GridSet) ogcMatrixSet {
	crs := crsURI(g)
	if id == grid.WorldCRS84Quad {
		crs = crs84
	}
	set := ogcMatrixSet{ID: id, Title: "Grid set " + g.ID, URI: registeredURI(id, g), CRS: crs,
		Type: "TileMatrixSetType", Identifier: id, SupportedCRS: crs}
	for _, m := range matrices(g) {
		// The corner in the CRS's axis order: latitude first in
		// EPSG:4326, longitude first in CRS84.
		corner := [2]float64{m.left, m.top}
		if g.EPSG == 4326 && crs != crs84 {
			corner = [2]float64{m.top, m.left}
		}
		set.Matrices = append(set.Matrices, ogcMatrix{ID: m.id, Scale: m.scale, CellSize: m.res, Corner: "topLeft",
			Origin: corner, TileWidth: g.TileWidth, TileHeight: g.TileHeight, Width: m.cols, Height: m.rows})
		set.Matrices10 = append(set.Matrices10, ogcMatrix10{Type: "TileMatrixType", Identifier: m.id, Scale: m.scale,
			TopLeft: corner, TileWidth: g.TileWidth, TileHeight: g.TileHeight, Width: m.cols, Height: m.rows})
	}
	return set
}

// crsURI names a grid set's CRS by its OGC URI (EPSG:3857 for every alias
// of spherical Mercator).
func crsURI(g *grid.GridSet) string {
	code := g.EPSG
	if grid.SameCRS(code, 3857) {
		code = 3857
	}
	return "http://www.opengis.net/def/crs/EPSG/0/" + strconv.Itoa(code)
}

// registeredURI is the URI of registered tile matrix set id, when g is
// published as one, else "".
func registeredURI(id string, g *grid.GridSet) string {
	if id == g.ID || id != g.Registered() {
		return ""
	}
	return "http://www.opengis.net/def/tilematrixset/OGC/1.0/" + id
}

// mediaType is the registered media type of a format's MIME type
// (GeoWebCache's image/png8 and its kin are PNG).
func mediaType(mime string) string {
	if strings.HasPrefix(mime, "image/png") {
		return "image/png"
	}
	return mime
}

// matrix is a level of a grid set as WMTS and OGC API – Tiles describe it:
// its id, scale denominator and resolution, the top-left corner of its
// top-left tile and its size in tiles.
type matrix struct {
	id         string
	scale, res float64
	left, top  float64
	cols, rows int64
}

// matrices describes the levels of g. Scale denominators use the
// standardised 0.28 mm pixel, and for EPSG:4326 the length of a degree on
// the sphere (OGC WMTS 1.0.0, 6.1).
func matrices(g *grid.GridSet) []matrix {
	perUnit := 1.0
	if g.EPSG == 4326 {
		perUnit = metresPerDegree
	}
	out := make([]matrix, 0, g.Levels())
	for z := range g.Levels() {
		cols, rows := g.Size(z)
		top := g.TileExtent(z, 0, rows-1) // the top-left tile
		out = append(out, matrix{id: strconv.Itoa(z), scale: g.Resolutions[z] * perUnit / pixelSize, res: g.Resolutions[z],
			left: top.MinX, top: top.MaxY, cols: cols, rows: rows})
	}
	return out
}
