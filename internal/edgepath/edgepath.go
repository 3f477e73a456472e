// Package edgepath maps the paths map clients ask a CDN for — WMTS
// RESTful, XYZ and OGC API – Tiles, rows counted from the top — to the
// keys the tiles are stored under (rows from the bottom, GeoWebCache's
// layout). The same mapping runs at the edge, as a CloudFront Function
// (functions/edge), and in `tilecache serve`; both pass one table of cases
// (testdata/cases.json).
//
//	/wmts/{layer}/{gridSet}/{format}/{parametersId}/{TileMatrix}/{TileCol}/{TileRow}.{ext}
//	/xyz/{layer}/{gridSet}/{format}/{parametersId}/{z}/{x}/{y}.{ext}
//	/ogcapi/collections/{layer}/map/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}.{format}
//	/ogcapi/collections/{layer}/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}.{format}
//
// all become /{layer}/{gridSet}/{format}/{parametersId}/{z}/{x}/{rows(z)−1−y}.{ext}
// (OGC API – Tiles paths name the format by its short name, png8 say, and
// have the default parameters; the vector tiles path, without /map, takes
// only a vector format, mapbox-vectortile or geojson). The grid set segment may also be the id of
// the OGC registered tile matrix set a grid set is published as
// ([grid.TileMatrixSetIDs]), WebMercatorQuad say. A path whose numbers are
// not written canonically (digits only, no leading zero) or lie outside
// the grid set's level, columns or rows is refused, so that it never
// reaches the store; so is a path with a segment that percent-decodes to
// nothing, . or .., a slash (%2F) or not UTF-8, a tile of the service's
// own objects' segment (_tilecache), a known format with another
// extension (…/png/…/0.jpeg), or a key longer than MaxKey.
//
// The other paths under /ogcapi are the OGC API – Tiles documents, stored
// as JSON: /ogcapi and /ogcapi/ are /ogcapi.json, and any other path
// /ogcapi/{p} (a trailing slash dropped) is /ogcapi/{p}.json unless it
// ends in .json already.
package edgepath

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
)

// Levels are the columns and rows of each level of a grid set.
type Levels struct {
	Cols, Rows []int64
	// GridSet is the grid set's id when the table holds it under another
	// id (a registered tile matrix set's), else "".
	GridSet string
}

// Table holds the levels of each grid set by id.
type Table map[string]Levels

// NewTable returns the levels of grid sets, under their ids and under the
// registered tile matrix set ids they are published as
// ([grid.TileMatrixSetIDs]).
func NewTable(sets []*grid.GridSet) Table {
	t := Table{}
	ids := grid.TileMatrixSetIDs(sets)
	for _, g := range sets {
		var l Levels
		for z := range g.Levels() {
			c, r := g.Size(z)
			l.Cols, l.Rows = append(l.Cols, c), append(l.Rows, r)
		}
		t[g.ID] = l
		if id := ids[g.ID]; id != g.ID {
			l.GridSet = g.ID
			t[id] = l
		}
	}
	return t
}

// Encode writes a grid set's levels as the edge function reads them from
// its key-value store: "c0,c1,…;r0,r1,…", and ";{gridSet}" after them for
// an entry under another id.
func (l Levels) Encode() string {
	join := func(v []int64) string {
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = strconv.FormatInt(n, 10)
		}
		return strings.Join(s, ",")
	}
	s := join(l.Cols) + ";" + join(l.Rows)
	if l.GridSet != "" {
		s += ";" + l.GridSet
	}
	return s
}

// Decode reads what Encode wrote.
func Decode(s string) (Levels, bool) {
	parts := strings.Split(s, ";")
	if len(parts) != 2 && len(parts) != 3 {
		return Levels{}, false
	}
	cols, rows := parts[0], parts[1]
	gridSet := ""
	if len(parts) == 3 {
		if gridSet = parts[2]; gridSet == "" {
			return Levels{}, false
		}
	}
	split := func(s string) ([]int64, bool) {
		var out []int64
		for _, p := range strings.Split(s, ",") {
			n, err := strconv.ParseInt(p, 10, 64)
			if err != nil || n < 1 {
				return nil, false
			}
			out = append(out, n)
		}
		return out, true
	}
	c, ok1 := split(cols)
	r, ok2 := split(rows)
	if !ok1 || !ok2 || len(c) != len(r) {
		return Levels{}, false
	}
	return Levels{Cols: c, Rows: r, GridSet: gridSet}, true
}

// MaxKey is the longest key path Map gives, in bytes as written (escapes
// included): S3's longest key, so that a longer path is refused before
// any lookup.
const MaxKey = 1024

// Prefixes are the first segments of the paths Map takes.
var Prefixes = []string{"/wmts/", "/xyz/", "/ogcapi/"}

// vectorFormats are the extensions of the vector formats' short names, the
// formats of OGC API – Tiles' vector tiles path (tilestore.formats).
var vectorFormats = map[string]string{"mapbox-vectortile": "pbf", "geojson": "geojson"}

// ogcPrefix starts the OGC API – Tiles paths, the documents' and the
// tiles'; ogcTiles starts a tile's path after ogcPrefix.
const (
	ogcPrefix = "/ogcapi"
	ogcTiles  = "/ogcapi/collections/"
)

// Map returns the stored key's path of an edge path (see the package
// documentation); ok is false for any other path and for a tile that
// cannot exist. Segments are kept as they are written (percent-encoding
// included), so that the key is the one the store would be asked for by
// its own path.
func Map(path string, t Table) (key string, ok bool) {
	if path == ogcPrefix || path == ogcPrefix+"/" {
		return ogcPrefix + ".json", true
	}
	for _, p := range Prefixes[:2] {
		if rest, found := strings.CutPrefix(path, p); found {
			seg := strings.Split(rest, "/")
			if len(seg) != 7 {
				return "", false
			}
			name, ext, found := strings.Cut(seg[6], ".")
			if !found {
				return "", false
			}
			return tileKey(t, seg[0], seg[1], seg[2], seg[3], seg[4], seg[5], name, ext)
		}
	}
	rest, found := strings.CutPrefix(path, ogcPrefix+"/")
	if !found {
		return "", false
	}
	if seg := strings.Split(strings.TrimPrefix(path, ogcTiles), "/"); strings.HasPrefix(path, ogcTiles) &&
		len(seg) == 7 && seg[1] == "map" && seg[2] == "tiles" {
		name, format, found := strings.Cut(seg[6], ".")
		ext, known := tilestore.FormatExt(format)
		if !found || !known {
			return "", false
		}
		return tileKey(t, seg[0], seg[3], format, tilestore.DefaultParametersID, seg[4], name, seg[5], ext)
	}
	if seg := strings.Split(strings.TrimPrefix(path, ogcTiles), "/"); strings.HasPrefix(path, ogcTiles) &&
		len(seg) == 6 && seg[1] == "tiles" {
		name, format, found := strings.Cut(seg[5], ".")
		ext, vector := vectorFormats[format]
		if !found || !vector {
			return "", false
		}
		return tileKey(t, seg[0], seg[2], format, tilestore.DefaultParametersID, seg[3], name, seg[4], ext)
	}
	rest = strings.TrimSuffix(rest, "/")
	for _, s := range strings.Split(rest, "/") {
		if _, ok := segment(s); !ok {
			return "", false
		}
	}
	if !strings.HasSuffix(rest, ".json") {
		rest += ".json"
	}
	if key = ogcPrefix + "/" + rest; len(key) > MaxKey {
		return "", false
	}
	return key, true
}

// segment returns a path segment percent-decoded, as the bucket decodes
// it; ok is false when it does not decode to valid UTF-8 or decodes to
// "", ".", ".." or something with a "/" (written %2F): no key has such a
// segment, and the key would not be the one its segments name.
func segment(s string) (string, bool) {
	d, err := url.PathUnescape(s)
	if err != nil || d == "" || d == "." || d == ".." || strings.Contains(d, "/") || !utf8.ValidString(d) {
		return "", false
	}
	return d, true
}

// tileKey returns the stored key's path of a tile whose row counts from
// the top, or false when a segment is not one a key has (see segment),
// the layer is the service's own (layer.ReservedID), the extension is not
// the format's, the numbers are not canonical or out of the grid set
// (looked up in t by gridSet, which may be an alias), or the key would be
// longer than MaxKey.
func tileKey(t Table, layerID, gridSet, format, parametersID, zs, xs, ys, ext string) (string, bool) {
	var plain [5]string
	for i, s := range [...]string{layerID, gridSet, format, parametersID, ext} {
		d, ok := segment(s)
		if !ok {
			return "", false
		}
		plain[i] = d
	}
	z, okz := number(zs)
	x, okx := number(xs)
	y, oky := number(ys)
	if plain[0] == layer.ReservedID || !okz || !okx || !oky {
		return "", false
	}
	if want, known := tilestore.FormatExt(plain[2]); known && plain[4] != want {
		return "", false
	}
	// The table knows grid sets by their ids; a client may have escaped
	// one (EPSG%3A4326).
	levels, known := t[plain[1]]
	if !known {
		return "", false
	}
	if levels.GridSet != "" {
		gridSet = levels.GridSet
	}
	if z >= int64(len(levels.Rows)) || x >= levels.Cols[z] || y >= levels.Rows[z] {
		return "", false
	}
	key := "/" + layerID + "/" + gridSet + "/" + format + "/" + parametersID + "/" + zs + "/" + xs + "/" +
		strconv.FormatInt(levels.Rows[z]-1-y, 10) + "." + ext
	return key, len(key) <= MaxKey
}

// number parses a tile number of a path: written canonically
// ([tilestore.ParseCanonical]) in at most 15 digits, exact in a JavaScript
// number as the edge's twin reads it.
func number(s string) (int64, bool) {
	if len(s) > 15 {
		return 0, false
	}
	return tilestore.ParseCanonical(s)
}

// Reserved reports whether a path names one of the service's own objects
// (under layer.ReservedID: the prepared areas of seed requests), which the
// CDN never serves. The path is percent-decoded first (the bucket decodes
// it, "%2F" included) and leading slashes do not count.
func Reserved(path string) bool {
	if d, err := url.PathUnescape(path); err == nil {
		path = d
	}
	path = strings.TrimLeft(path, "/")
	return path == layer.ReservedID || strings.HasPrefix(path, layer.ReservedID+"/")
}

// Handler serves the edge paths as the CDN does: a path Map takes is
// served by next as the stored key's path, one it refuses is a 404, a
// Reserved path is a 404, and any other path goes to next unchanged.
func Handler(tables func() Table, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		notFound := func() {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Access-Control-Allow-Origin", "*")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "Not found: no such tile\n")
		}
		p := r.URL.EscapedPath()
		if Reserved(p) {
			notFound()
			return
		}
		edge := p == ogcPrefix
		for _, pre := range Prefixes {
			edge = edge || strings.HasPrefix(p, pre)
		}
		if !edge {
			next.ServeHTTP(w, r)
			return
		}
		key, ok := Map(p, tables())
		plain, err := url.PathUnescape(key)
		if !ok || err != nil {
			notFound()
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = plain, key
		next.ServeHTTP(w, r2)
	})
}

// TableOf returns the table of the grid sets of a layer catalogue's
// layers.
func TableOf(c *layer.Catalogue) Table {
	return NewTable(c.GridSets())
}

// Live keeps the table of a live catalogue (see layer.Registry), built
// again when the catalogue's version changes.
type Live struct {
	c       *layer.Catalogue
	mu      sync.Mutex
	version int64
	t       Table
	values  map[string]string // ValuesOf, built by Values when first asked
}

// NewLive returns the live table of c.
func NewLive(c *layer.Catalogue) *Live {
	snap := c.Snapshot()
	return &Live{c: c, version: snap.Version(), t: TableOf(snap)}
}

// Table returns the table of the catalogue's current contents.
func (l *Live) Table() Table {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v := l.c.Version(); v != l.version {
		snap := l.c.Snapshot()
		l.version, l.t, l.values = snap.Version(), TableOf(snap), nil
	}
	return l.t
}
