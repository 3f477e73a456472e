package edgepath

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
	"tilecache/internal/tiletoken"
)

// The OGC key-value-pair bindings, answered from the stored tiles as the
// RESTful paths are (functions/edge/ows.js is the edge's twin of OWS; both
// pass testdata/ows-cases.json):
//
//	/gwc/service/wmts?SERVICE=WMTS&REQUEST=GetTile&LAYER=…  (and /wmts?…)
//	/gwc/service/wms?SERVICE=WMS&REQUEST=GetMap&…            (WMS-C)
//
// WMTS 1.0.0 KVP: GetCapabilities is the stored /WMTSCapabilities.xml;
// GetTile (SERVICE, REQUEST, VERSION 1.0.0, LAYER, STYLE, FORMAT a MIME
// type, TILEMATRIXSET, TILEMATRIX, TILEROW, TILECOL, rows from the top)
// is the tile's stored key, as the RESTful path of the same tile maps,
// with the dot before its extension escaped (KVPDot) so that the origin
// knows a miss came from this binding.
// Anything else is an OWS 1.1 ExceptionReport with the code and status
// WMTS 1.0.0 names (Table 28): MissingParameterValue and
// InvalidParameterValue 400 (a request that is no WMTS operation too, as
// the OGC's suite ets-wmts10 asserts), TileOutOfRange 400,
// OperationNotSupported 501 (GetFeatureInfo of a layer that does not offer
// it); and VersionNegotiationFailed 400 when AcceptVersions lists no
// 1.0.0 (OWS 1.1).
//
// WMS-C: a WMS GetMap of one layer whose SRS (CRS in 1.3.0), WIDTH,
// HEIGHT and BBOX match one tile of a grid set of the layer within
// GeoWebCache's tolerance (the resolution within 10 % of a level's, the
// box's corner within a tenth of a tile of the grid) is that tile's stored
// key; GetCapabilities is the stored /WMSCapabilities.xml. Anything else,
// a box that is not a tile above all, is a WMS 1.1.1
// ServiceExceptionReport: nothing is ever rendered for an arbitrary box.
//
// Parameter names are case-insensitive; values are case-sensitive, as the
// standards say. A name given twice (in any case) is refused. The
// layers and grid sets are read from the edge's key-value store (see
// Values and LayerValues): a layer's entry LayerEntry+id, a grid set's
// levels by id, its geometry under GeometryEntry+id. Private layers are
// refused on these bindings (403): their tiles are served only on the
// RESTful paths, with a tile token.

// The key-value store's entries of the OGC bindings.
const (
	// LayerEntry+id holds a layer's grid sets and formats (layerValue).
	LayerEntry = "/layer/"
	// GeometryEntry+id holds a grid set's geometry for WMS-C
	// (geometryValue).
	GeometryEntry = "/wmsc/"
)

// layerValue is a layer's entry: its grid set ids, and the short name and
// extension of each of its formats by MIME type.
type layerValue struct {
	GridSets []string             `json:"g"`
	Formats  map[string][2]string `json:"f"`
}

// geometryValue is a grid set's entry for WMS-C: its CRS code, tile size,
// the corner rows are aligned on (bottom-left, or top-left when TopLeft)
// and its resolutions.
type geometryValue struct {
	// EPSG lists the CRS codes a request may name: the grid set's, and
	// the other Web Mercator codes for a Web Mercator one (grid.SameCRS).
	EPSG        []int     `json:"epsg"`
	TileWidth   int       `json:"w"`
	TileHeight  int       `json:"h"`
	X           float64   `json:"x"`
	Y           float64   `json:"y"`
	TopLeft     bool      `json:"tl"`
	Resolutions []float64 `json:"r"`
}

// webMercator are the codes of the Web Mercator CRS (grid.SameCRS).
var webMercator = []int{900913, 3857, 102113, 102100}

// MaxValue is the longest value a CloudFront KeyValueStore holds; a grid
// set whose geometry is longer is left out (WMS-C then finds no tile of
// it).
const MaxValue = 1024

// LayerValues returns the entries of the OGC bindings for a catalogue:
// each enabled layer's grid sets and formats by id, and the geometry of
// each grid set they use.
func LayerValues(c *layer.Catalogue) map[string]string {
	out := map[string]string{}
	for _, n := range c.Names() {
		l, ok := c.Layer(n)
		if !ok || !l.Enabled {
			continue
		}
		v := layerValue{GridSets: []string{}, Formats: map[string][2]string{}}
		for _, s := range l.Subsets {
			v.GridSets = append(v.GridSets, s.GridSet.ID)
		}
		for _, f := range l.Formats {
			if id, ext, ok := tilestore.Format(f); ok {
				v.Formats[f] = [2]string{id, ext}
			}
		}
		data, _ := json.Marshal(v)
		if len(data) <= MaxValue {
			out[LayerEntry+l.ID] = string(data)
		}
	}
	for _, g := range c.GridSets() {
		v := geometryValue{EPSG: []int{g.EPSG}, TileWidth: g.TileWidth, TileHeight: g.TileHeight, X: g.Extent.MinX, Y: g.Extent.MinY,
			TopLeft: g.TopLeft, Resolutions: g.Resolutions}
		if g.TopLeft {
			v.Y = g.Extent.MaxY
		}
		for _, code := range webMercator {
			if code != g.EPSG && grid.SameCRS(code, g.EPSG) {
				v.EPSG = append(v.EPSG, code)
			}
		}
		if data, _ := json.Marshal(v); len(data) <= MaxValue {
			out[GeometryEntry+g.ID] = string(data)
		}
	}
	return out
}

// ValuesOf returns everything the edge's store holds for a catalogue:
// Values of its grid sets, private layers and keys, and LayerValues.
func ValuesOf(c *layer.Catalogue, keys []tiletoken.Key) map[string]string {
	out := Values(TableOf(c), PrivateOf(c), keys)
	for k, v := range LayerValues(c) {
		out[k] = v
	}
	return out
}

// Answer is what OWS makes of a request: the stored key's path to serve
// (Key, Status 0) or a response of its own.
type Answer struct {
	Key         string
	Status      int
	ContentType string
	Body        string
}

// The paths of the OGC bindings.
const (
	gwcService = "/gwc/service/"
	wmtsKVP    = "/gwc/service/wmts"
	wmsKVP     = "/gwc/service/wms"
	wmtsRoot   = "/wmts"
)

// IsOWS reports whether a path is one OWS answers: /wmts, or under
// /gwc/service/.
func IsOWS(path string) bool {
	return path == wmtsRoot || strings.HasPrefix(path, gwcService)
}

// The stored capabilities documents.
const (
	WMTSCapabilitiesKey = "/WMTSCapabilities.xml"
	WMSCapabilitiesKey  = "/WMSCapabilities.xml"
)

// OWS answers a request of the OGC bindings (path as written, rawQuery
// undecoded) from the edge's store kv; ok is false for a path that is not
// one (IsOWS).
func OWS(path, rawQuery string, kv func(string) (string, bool)) (a Answer, ok bool) {
	if !IsOWS(path) {
		return Answer{}, false
	}
	p, dup := queryParams(rawQuery)
	if dup == "" && p["request"] == "GetFeatureInfo" && (path == wmtsKVP || path == wmtsRoot || path == wmsKVP) {
		// To the origin, the request in the path (the CDN forwards no
		// query): see ParseFeatureInfo.
		return Answer{Key: FeatureInfoPrefix + path + "/" + encodeComponent(sortedQuery(rawQuery))}, true
	}
	switch path {
	case wmtsKVP, wmtsRoot:
		if dup != "" {
			return owsException(400, "InvalidParameterValue", dup, "The parameter "+dup+" is given twice"), true
		}
		return wmts(p, kv), true
	case wmsKVP:
		if dup != "" {
			return serviceException("", "The parameter "+strings.ToUpper(dup)+" is given twice"), true
		}
		return wms(p, kv), true
	}
	return Answer{Status: 404, ContentType: "text/plain; charset=utf-8", Body: "Not found: no such service\n"}, true
}

// queryParams reads a raw query: names lower-cased, both decoded (see
// decodeQuery). dup is the first (sorted) of the names given more than
// once, in any case, "" when none is: such a request is refused, since
// which value counts would depend on the order the edge lists them in
// (its query object's, which is not the request's).
func queryParams(raw string) (p map[string]string, dup string) {
	p = map[string]string{}
	var dups []string
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		k = strings.ToLower(decodeQuery(k))
		if _, seen := p[k]; seen {
			dups = append(dups, k)
			continue
		}
		p[k] = decodeQuery(v)
	}
	if len(dups) > 0 {
		dup = slices.Min(dups)
	}
	return p, dup
}

// decodeQuery decodes a query's name or value ('+' a space, %XX a byte);
// one that does not decode to UTF-8 is kept as written.
func decodeQuery(s string) string {
	d, err := url.QueryUnescape(s)
	if err != nil || !utf8.ValidString(d) {
		return s
	}
	return d
}

// encodeComponent escapes a key's segment as JavaScript's
// encodeURIComponent does, ':' kept (as a RESTful path keeps it).
func encodeComponent(s string) string {
	const keep = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'():"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(keep, s[i]) >= 0 {
			b.WriteByte(s[i])
		} else {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
	}
	return b.String()
}

// xmlEscape escapes text for an XML element or attribute.
func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// owsException is a WMTS exception: an OWS 1.1 ExceptionReport.
func owsException(status int, code, locator, text string) Answer {
	body := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" +
		`<ExceptionReport xmlns="http://www.opengis.net/ows/1.1" version="1.1.0" xml:lang="en">` +
		`<Exception exceptionCode="` + code + `"`
	if locator != "" {
		body += ` locator="` + xmlEscape(locator) + `"`
	}
	body += `><ExceptionText>` + xmlEscape(text) + "</ExceptionText></Exception></ExceptionReport>\n"
	return Answer{Status: status, ContentType: "application/xml", Body: body}
}

// serviceException is a WMS 1.1.1 ServiceExceptionReport (code may be "").
func serviceException(code, text string) Answer {
	body := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<ServiceExceptionReport version="1.1.1"><ServiceException`
	if code != "" {
		body += ` code="` + code + `"`
	}
	body += ">" + xmlEscape(text) + "</ServiceException></ServiceExceptionReport>\n"
	return Answer{Status: 400, ContentType: "application/vnd.ogc.se_xml", Body: body}
}

// canonical is a tile number, width or height as written canonically.
var canonical = regexp.MustCompile(`^(0|[1-9][0-9]{0,14})$`)

// lookupLayer returns a layer's entry, the refusal of a private one, or
// found false.
func lookupLayer(id string, kv func(string) (string, bool)) (v layerValue, private, found bool) {
	if _, ok := kv(PrivateEntry + id); ok {
		return v, true, true
	}
	s, ok := kv(LayerEntry + id)
	if !ok || json.Unmarshal([]byte(s), &v) != nil {
		return v, false, false
	}
	return v, false, true
}

// wmts answers the WMTS KVP binding.
func wmts(p map[string]string, kv func(string) (string, bool)) Answer {
	missing := func(name string) Answer {
		return owsException(400, "MissingParameterValue", name, "The parameter "+name+" is missing")
	}
	invalid := func(name, value string) Answer {
		return owsException(400, "InvalidParameterValue", name, "The value "+value+" of "+name+" is not valid")
	}
	for _, n := range []string{"Service", "Request"} {
		if p[strings.ToLower(n)] == "" {
			return missing(n)
		}
	}
	if p["service"] != "WMTS" {
		return invalid("Service", p["service"])
	}
	if v := p["acceptversions"]; v != "" && !slices.Contains(strings.Split(v, ","), "1.0.0") {
		return owsException(400, "VersionNegotiationFailed", "AcceptVersions", "Only 1.0.0 is offered")
	}
	switch p["request"] {
	case "GetCapabilities":
		return Answer{Key: WMTSCapabilitiesKey}
	case "GetTile":
	default:
		// Not an operation of WMTS (GetFeatureInfo went to the origin,
		// which answers OperationNotSupported where it is not offered).
		return invalid("Request", p["request"])
	}
	for _, n := range []string{"Version", "Layer", "Style", "Format", "TileMatrixSet", "TileMatrix", "TileRow", "TileCol"} {
		if v, ok := p[strings.ToLower(n)]; !ok || (v == "" && n != "Style") {
			return missing(n)
		}
	}
	if p["version"] != "1.0.0" {
		return invalid("Version", p["version"])
	}
	id := p["layer"]
	l, private, found := lookupLayer(id, kv)
	if private {
		return owsException(403, "NoApplicableCode", "Layer", "The layer "+id+" is private: use the RESTful paths with a tile token")
	}
	if !found {
		return invalid("Layer", id)
	}
	style := p["style"]
	if style == "" {
		style = tilestore.DefaultParametersID
	}
	if style == "." || style == ".." || strings.ContainsAny(style, "/%") {
		return invalid("Style", style)
	}
	f, known := l.Formats[p["format"]]
	if !known {
		return invalid("Format", p["format"])
	}
	gs := p["tilematrixset"]
	levelsText, ok := kv(gs)
	levels, decoded := Decode(levelsText)
	if ok && decoded && levels.GridSet != "" {
		gs = levels.GridSet
	}
	if !ok || !decoded || !contains(l.GridSets, gs) {
		return invalid("TileMatrixSet", p["tilematrixset"])
	}
	z, okz := canonicalNumber(p["tilematrix"])
	if !okz || z >= int64(len(levels.Rows)) {
		return invalid("TileMatrix", p["tilematrix"])
	}
	for _, n := range []string{"TileRow", "TileCol"} {
		v, ok := canonicalNumber(p[strings.ToLower(n)])
		if !ok {
			return invalid(n, p[strings.ToLower(n)])
		}
		if limit := map[string]int64{"TileRow": levels.Rows[z], "TileCol": levels.Cols[z]}[n]; v >= limit {
			return owsException(400, "TileOutOfRange", n, fmt.Sprintf("The %s %d is out of the tile matrix's range 0 to %d", n, v, limit-1))
		}
	}
	y, _ := canonicalNumber(p["tilerow"])
	return Answer{Key: "/" + encodeComponent(id) + "/" + encodeComponent(gs) + "/" + f[0] + "/" + encodeComponent(style) + "/" +
		p["tilematrix"] + "/" + p["tilecol"] + "/" + strconv.FormatInt(levels.Rows[z]-1-y, 10) + KVPDot + f[1]}
}

// KVPDot is the dot before the extension of the key path a WMTS KVP
// GetTile maps to, percent-encoded: the bucket decodes it (the same
// object as the RESTful path's), while the tile origin, which a miss
// fails over to with the path as the edge wrote it, tells from it that
// the request came from the KVP binding, whose tile outside the layer's
// subset is an OWS TileOutOfRange rather than a 404 (KVPTile). The
// CDN's cache keeps the two bindings' answers apart for the same reason.
const KVPDot = "%2E"

// KVPTile reports whether a path (as written) is one a WMTS KVP GetTile
// mapped to (KVPDot before its extension), and returns the tile it names:
// the layer and grid set ids (unescaped), level, column and row from the
// bottom.
func KVPTile(escapedPath string) (layerID, gridSet string, z int, x, y int64, ok bool) {
	seg := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	if len(seg) != 7 {
		return "", "", 0, 0, 0, false
	}
	ys, _, found := strings.Cut(seg[6], KVPDot)
	if !found {
		return "", "", 0, 0, 0, false
	}
	var oks [5]bool
	var zz int64
	layerID, oks[0] = segment(seg[0])
	gridSet, oks[1] = segment(seg[1])
	zz, oks[2] = canonicalNumber(seg[4])
	x, oks[3] = canonicalNumber(seg[5])
	y, oks[4] = canonicalNumber(ys)
	if slices.Contains(oks[:], false) || zz > 64 {
		return "", "", 0, 0, 0, false
	}
	return layerID, gridSet, int(zz), x, y, true
}

func canonicalNumber(s string) (int64, bool) {
	if !canonical.MatchString(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// wmsParams are the GetMap parameters WMS-C takes; any other would ask
// for something else than the stored tile.
var wmsParams = map[string]bool{"service": true, "version": true, "request": true, "layers": true, "styles": true, "srs": true,
	"crs": true, "bbox": true, "width": true, "height": true, "format": true, "transparent": true, "tiled": true,
	"exceptions": true, "bgcolor": true}

// decimal is a number of a BBOX.
var decimal = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$`)

// wms answers WMS-C.
func wms(p map[string]string, kv func(string) (string, bool)) Answer {
	if s, ok := p["service"]; ok && s != "WMS" {
		return serviceException("", "The service "+s+" is not WMS")
	}
	switch p["request"] {
	case "GetCapabilities":
		return Answer{Key: WMSCapabilitiesKey}
	case "GetMap":
	case "":
		return serviceException("", "The parameter REQUEST is missing")
	default:
		return serviceException("OperationNotSupported", "The operation "+p["request"]+" is not supported")
	}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		if !wmsParams[k] {
			return serviceException("", "The parameter "+strings.ToUpper(k)+" is not one of a stored tile")
		}
	}
	id := p["layers"]
	l, private, found := lookupLayer(id, kv)
	if private {
		return serviceException("LayerNotDefined", "The layer "+id+" is private: use the RESTful paths with a tile token")
	}
	if !found {
		return serviceException("LayerNotDefined", "The layer "+id+" is not one of this service")
	}
	if s := p["styles"]; s != "" && s != tilestore.DefaultParametersID {
		return serviceException("StyleNotDefined", "The style "+s+" is not cached: only the default style is")
	}
	f, known := l.Formats[p["format"]]
	if !known {
		return serviceException("InvalidFormat", "The format "+p["format"]+" is not one of layer "+id)
	}
	srs, ok := p["srs"]
	if !ok {
		srs = p["crs"]
	}
	epsg := int64(-1)
	if code, ok := strings.CutPrefix(srs, "EPSG:"); ok {
		epsg, _ = canonicalNumber(code)
	}
	if srs == "CRS:84" {
		epsg = 4326
	}
	if epsg < 0 {
		return serviceException("InvalidSRS", "The SRS "+srs+" is not one of layer "+id)
	}
	width, okw := canonicalNumber(p["width"])
	height, okh := canonicalNumber(p["height"])
	parts := strings.Split(p["bbox"], ",")
	var box [4]float64
	okb := len(parts) == 4
	for i := 0; okb && i < 4; i++ {
		okb = decimal.MatchString(parts[i])
		box[i], _ = strconv.ParseFloat(parts[i], 64)
	}
	if !okw || !okh || !okb || box[0] >= box[2] || box[1] >= box[3] {
		return serviceException("", "WIDTH, HEIGHT and BBOX (minx,miny,maxx,maxy) are needed")
	}
	if p["version"] == "1.3.0" && epsg == 4326 && srs != "CRS:84" {
		box = [4]float64{box[1], box[0], box[3], box[2]}
	}
	known = false
	for _, gs := range l.GridSets {
		gText, ok1 := kv(GeometryEntry + gs)
		levelsText, ok2 := kv(gs)
		var g geometryValue
		levels, ok3 := Decode(levelsText)
		if !ok1 || !ok2 || !ok3 || json.Unmarshal([]byte(gText), &g) != nil || !slices.Contains(g.EPSG, int(epsg)) {
			continue
		}
		known = true
		if key, ok := wmsTile(g, levels, box, width, height); ok {
			return Answer{Key: "/" + encodeComponent(id) + "/" + encodeComponent(gs) + "/" + f[0] + "/" + tilestore.DefaultParametersID + key + "." + f[1]}
		}
	}
	if !known {
		return serviceException("InvalidSRS", "The SRS "+srs+" is not one of layer "+id)
	}
	return serviceException("", "BBOX, WIDTH and HEIGHT are no tile of layer "+id+": only stored tiles are served")
}

// wmsTile returns "/z/x/y" (y from the bottom) of the tile of g whose
// box is box at width × height pixels, within GeoWebCache's tolerance.
func wmsTile(g geometryValue, levels Levels, box [4]float64, width, height int64) (string, bool) {
	if width != int64(g.TileWidth) || height != int64(g.TileHeight) || len(levels.Rows) != len(g.Resolutions) {
		return "", false
	}
	res := (box[2] - box[0]) / float64(width)
	z, best := -1, math.Inf(1)
	for i, r := range g.Resolutions {
		if e := math.Abs(res - r); e < best {
			z, best = i, e
		}
	}
	if z < 0 { // res is not a number: an infinite box
		return "", false
	}
	r := g.Resolutions[z]
	if best > 0.1*res || math.Abs((box[3]-box[1])/float64(height)-r) > 0.1*r {
		return "", false
	}
	w, h := r*float64(g.TileWidth), r*float64(g.TileHeight)
	fx := (box[0] - g.X) / w
	fy := (box[1] - g.Y) / h
	if g.TopLeft {
		fy = (g.Y - box[3]) / h
	}
	x, y := math.Round(fx), math.Round(fy)
	if math.Abs(fx-x) > 0.1 || math.Abs(fy-y) > 0.1 || x < 0 || y < 0 || x >= float64(levels.Cols[z]) || y >= float64(levels.Rows[z]) {
		return "", false
	}
	if g.TopLeft {
		y = float64(levels.Rows[z]) - 1 - y
	}
	return fmt.Sprintf("/%d/%d/%d", z, int64(x), int64(y)), true
}

// Values returns what the edge's store would hold for the catalogue's
// current contents (ValuesOf without tile token keys), for OWS.
func (l *Live) Values() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v := l.c.Version(); v != l.version || l.values == nil {
		snap := l.c.Snapshot()
		l.version, l.t, l.values = snap.Version(), TableOf(snap), ValuesOf(snap, nil)
	}
	return l.values
}

// Handler serves the edge paths (see the package Handler) and the OGC
// bindings (OWS) as the CDN does: a tile or capabilities document they
// map to is served by next as the stored key's path, without the query;
// an exception is answered here.
func (l *Live) Handler(next http.Handler) http.Handler {
	paths := Handler(l.Table, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		if !IsOWS(p) {
			paths.ServeHTTP(w, r)
			return
		}
		values := l.Values()
		a, _ := OWS(p, r.URL.RawQuery, func(k string) (string, bool) { v, ok := values[k]; return v, ok })
		if a.Status != 0 {
			w.Header().Set("Content-Type", a.ContentType)
			w.Header().Set("Access-Control-Allow-Origin", "*")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(a.Status)
			io.WriteString(w, a.Body)
			return
		}
		plain, err := url.PathUnescape(a.Key)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath, r2.URL.RawQuery, r2.RequestURI = plain, a.Key, "", a.Key
		next.ServeHTTP(w, r2)
	})
}

// FeatureInfoPrefix starts the path a GetFeatureInfo request is passed to
// the origin under: FeatureInfoPrefix + the binding's path + "/" + its
// query (sortedQuery) escaped as one segment. It is under the service's
// own objects (layer.ReservedID), so no stored object answers it and the
// CDN fails over to the origin, whose FeatureInfo handler reads it.
const FeatureInfoPrefix = "/_tilecache/ows"

// sortedQuery is a raw query's non-empty parts as written, each "name=value"
// ("name=" without a value), sorted by name: the same text whatever the
// order the edge lists the parameters in.
func sortedQuery(raw string) string {
	type part struct{ k, v string }
	var parts []part
	for p := range strings.SplitSeq(raw, "&") {
		if p != "" {
			k, v, _ := strings.Cut(p, "=")
			parts = append(parts, part{k, v})
		}
	}
	slices.SortStableFunc(parts, func(a, b part) int { return strings.Compare(a.k, b.k) })
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.k + "=" + p.v
	}
	return strings.Join(out, "&")
}

// FeatureInfo is a GetFeatureInfo request of a stored tile's pixel.
type FeatureInfo struct {
	// WMS is true for a WMS GetFeatureInfo (its errors are WMS service
	// exceptions), false for WMTS.
	WMS                   bool
	Layer, GridSet, Style string // as in the tile's key, unescaped
	Z                     int
	X, Y                  int64 // y from the bottom
	I, J                  int
	InfoFormat            string
}

// ParseFeatureInfo reads the path OWS passed a GetFeatureInfo request
// under (FeatureInfoPrefix…): the tile is found as GetTile (WMTS, with I,
// J and INFO_FORMAT) or WMS-C GetMap (WMS, with QUERY_LAYERS the layer,
// X and Y, or I and J in 1.3.0, and INFO_FORMAT) would find it, and the
// pixel must lie in the tile (WMTS PointIJOutOfRange, WMS InvalidPoint).
// ok is false with the exception to answer.
//
// It reads the RESTful FeatureInfo resource too (FeatureInfoPath…, see
// restFeatureInfo), as the KVP GetFeatureInfo of the same pixel.
func ParseFeatureInfo(escapedPath string, kv func(string) (string, bool)) (FeatureInfo, Answer, bool) {
	if rest, ok := strings.CutPrefix(escapedPath, FeatureInfoPath); ok {
		query, a, ok := restFeatureInfo(rest, kv)
		if !ok {
			return FeatureInfo{}, a, false
		}
		escapedPath = FeatureInfoPrefix + wmtsRoot + "/" + encodeComponent(query)
	}
	rest, _ := strings.CutPrefix(escapedPath, FeatureInfoPrefix)
	at := strings.LastIndexByte(rest, '/')
	var fi FeatureInfo
	query, err := url.PathUnescape(rest[at+1:])
	if at < 0 || err != nil {
		return fi, Answer{Status: 404, ContentType: "text/plain; charset=utf-8", Body: "Not found: no such request\n"}, false
	}
	path := rest[:at]
	p, _ := queryParams(query)
	var a Answer
	pi, pj := "i", "j"
	switch path {
	case wmtsKVP, wmtsRoot:
		for _, n := range []string{"I", "J", "InfoFormat"} {
			if p[strings.ToLower(n)] == "" {
				return fi, owsException(400, "MissingParameterValue", n, "The parameter "+n+" is missing"), false
			}
		}
		p["request"] = "GetTile"
		a = wmts(p, kv)
	case wmsKVP:
		fi.WMS = true
		if p["version"] != "1.3.0" {
			pi, pj = "x", "y"
		}
		if p["query_layers"] != p["layers"] {
			return fi, serviceException("LayerNotQueryable", "QUERY_LAYERS must be the one layer of LAYERS"), false
		}
		if p["info_format"] == "" || p[pi] == "" || p[pj] == "" {
			return fi, serviceException("", "INFO_FORMAT, "+strings.ToUpper(pi)+" and "+strings.ToUpper(pj)+" are needed"), false
		}
		p["infoformat"] = p["info_format"]
		q := map[string]string{}
		for k, v := range p {
			if wmsParams[k] {
				q[k] = v
			}
		}
		q["request"] = "GetMap"
		a = wms(q, kv)
	default:
		return fi, Answer{Status: 404, ContentType: "text/plain; charset=utf-8", Body: "Not found: no such service\n"}, false
	}
	if a.Status != 0 {
		return fi, a, false
	}
	// The tile's key: /{layer}/{gridSet}/{format}/{style}/{z}/{x}/{y}.{ext}.
	seg := strings.Split(strings.TrimPrefix(a.Key, "/"), "/")
	y, _, _ := strings.Cut(strings.Replace(seg[6], KVPDot, ".", 1), ".")
	var ok [5]bool
	var z int64
	fi.Layer, ok[0] = segment(seg[0])
	fi.GridSet, ok[1] = segment(seg[1])
	fi.Style, ok[2] = segment(seg[3])
	z, ok[3] = canonicalNumber(seg[4])
	fi.X, ok[4] = canonicalNumber(seg[5])
	fi.Y, _ = canonicalNumber(y)
	fi.Z, fi.InfoFormat = int(z), p["infoformat"]
	var g geometryValue
	gText, found := kv(GeometryEntry + fi.GridSet)
	if !found || json.Unmarshal([]byte(gText), &g) != nil || slices.Contains(ok[:], false) {
		return fi, Answer{Status: 404, ContentType: "text/plain; charset=utf-8", Body: "Not found: no such tile\n"}, false
	}
	i, oki := canonicalNumber(p[pi])
	j, okj := canonicalNumber(p[pj])
	if !oki || !okj || i >= int64(g.TileWidth) || j >= int64(g.TileHeight) {
		if fi.WMS {
			return fi, serviceException("InvalidPoint", "The pixel "+p[pi]+", "+p[pj]+" is not one of the tile"), false
		}
		return fi, owsException(400, "PointIJOutOfRange", "I", "The pixel "+p[pi]+", "+p[pj]+" is not one of the tile"), false
	}
	fi.I, fi.J = int(i), int(j)
	return fi, Answer{}, true
}

// OWSException returns a WMTS exception answer (an OWS 1.1
// ExceptionReport).
func OWSException(status int, code, locator, text string) Answer {
	return owsException(status, code, locator, text)
}

// ServiceException returns a WMS 1.1.1 ServiceExceptionReport answer (code
// may be "").
func ServiceException(code, text string) Answer { return serviceException(code, text) }

// OWSTile returns the stored key's path (percent-encoded, as Answer.Key)
// of a request of the OGC key-value-pair bindings that the edge answers
// with a stored tile: a WMTS KVP GetTile or a WMS-C GetMap. ok is false
// for anything else: a path that is no binding's, a capabilities
// document, a GetFeatureInfo passed to the origin, an exception. The
// access log ingest counts these reads with it as it counts the RESTful
// ones.
func OWSTile(path, rawQuery string, kv func(string) (string, bool)) (key string, ok bool) {
	a, ok := OWS(path, rawQuery, kv)
	if !ok || a.Status != 0 || a.Key == WMTSCapabilitiesKey || a.Key == WMSCapabilitiesKey ||
		strings.HasPrefix(a.Key, FeatureInfoPrefix+"/") {
		return "", false
	}
	return a.Key, true
}

// OWSTile is OWSTile with the catalogue's current values (Values).
func (l *Live) OWSTile(path, rawQuery string) (key string, ok bool) {
	if !IsOWS(path) {
		return "", false
	}
	values := l.Values()
	return OWSTile(path, rawQuery, func(k string) (string, bool) { v, ok := values[k]; return v, ok })
}

// FeatureInfoPath starts the WMTS RESTful FeatureInfo resource (WMTS
// 1.0.0, 10.2.2; GeoWebCache's order of the template's variables):
//
//	/gwc/featureinfo/{layer}/{Style}/{TileMatrixSet}/{TileMatrix}/{TileRow}/{TileCol}/{J}/{I}.{ext}
//
// the extension naming the info format (InfoFormats). The CDN sends it to
// the tile origin as it is (a behaviour of its own, no edge function: the
// first segment is layer.OGCBindingsID, no layer's), and `serve` answers
// it; both as the KVP GetFeatureInfo of the same pixel.
const FeatureInfoPath = "/gwc/featureinfo/"

// InfoFormat is an info format of GetFeatureInfo: the RESTful resource's
// extension and the INFO_FORMAT asked of the upstream.
type InfoFormat struct{ Ext, MIME string }

// InfoFormats are the info formats GetFeatureInfo is advertised with (the
// layer's WMS upstream answers them).
var InfoFormats = []InfoFormat{{"txt", "text/plain"}, {"html", "text/html"}, {"gml", "application/vnd.ogc.gml"}, {"json", "application/json"}}

// restFeatureInfo reads a RESTful FeatureInfo path (after FeatureInfoPath)
// into the query of the KVP GetFeatureInfo of the same pixel (on /wmts),
// or the exception to answer: 404 for a path of another shape or
// extension. FORMAT, which the resource does not name, is one of the
// layer's: any finds the same tile.
func restFeatureInfo(rest string, kv func(string) (string, bool)) (string, Answer, bool) {
	notFound := Answer{Status: 404, ContentType: "text/plain; charset=utf-8", Body: "Not found: no such feature info resource\n"}
	seg := strings.Split(rest, "/")
	if len(seg) != 8 {
		return "", notFound, false
	}
	i, ext, found := strings.Cut(seg[7], ".")
	mimeType := ""
	for _, f := range InfoFormats {
		if f.Ext == ext {
			mimeType = f.MIME
		}
	}
	if !found || mimeType == "" {
		return "", notFound, false
	}
	seg[7] = i
	plain := make([]string, len(seg))
	for n, s := range seg {
		d, err := url.PathUnescape(s)
		if err != nil || (n != 1 && d == "") {
			return "", notFound, false
		}
		plain[n] = d
	}
	format := "image/png"
	if l, _, ok := lookupLayer(plain[0], kv); ok && len(l.Formats) > 0 {
		format = slices.Min(slices.Collect(maps.Keys(l.Formats)))
	}
	q := url.Values{"SERVICE": {"WMTS"}, "REQUEST": {"GetFeatureInfo"}, "VERSION": {"1.0.0"}, "LAYER": {plain[0]}, "STYLE": {plain[1]},
		"FORMAT": {format}, "TILEMATRIXSET": {plain[2]}, "TILEMATRIX": {plain[3]}, "TILEROW": {plain[4]}, "TILECOL": {plain[5]},
		"J": {plain[6]}, "I": {plain[7]}, "INFOFORMAT": {mimeType}}
	return q.Encode(), Answer{}, true
}

// IsFeatureInfo reports whether a path (as written) is one
// ParseFeatureInfo reads: a KVP GetFeatureInfo passed under
// FeatureInfoPrefix, or the RESTful FeatureInfo resource (FeatureInfoPath).
func IsFeatureInfo(escapedPath string) bool {
	return strings.HasPrefix(escapedPath, FeatureInfoPrefix+"/") || strings.HasPrefix(escapedPath, FeatureInfoPath)
}
