package discovery

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
	"tilecache/internal/vectortile"
)

// ErrUndescribable is wrapped by the error returned for a tile set whose
// grid levels do not share one bottom-left origin, so that no TMS origin
// plus x·width, y·height addresses its tiles.
var ErrUndescribable = errors.New("the grid's levels do not share one bottom-left origin")

// Profiles of the TMS specification.
const (
	profileMercator = "global-mercator"
	profileGeodetic = "global-geodetic"
	profileLocal    = "local"
)

const (
	// earthRadius is the sphere of spherical (Web) Mercator, in metres.
	earthRadius = 6378137.0
	// maxLatitude is where Web Mercator maps clamp latitudes.
	maxLatitude = 85.0511
)

// tolerance is how close, in tiles, two positions must be to count as the
// same tile edge: the grid package's edge tolerance.
const tolerance = 1e-6

// description is everything the documents say about one tile set; it is a
// function of the layer file and the parameters only.
type description struct {
	layer  *layer.Layer
	subset *grid.Subset
	mime   string
	// params are the tile set's parameters; empty (not nil) without any.
	params map[string]string
	set    tilestore.TileSet
	// originX, originY is the bottom-left corner of tile (0, 0) at every
	// level from 0 to the subset's last.
	originX, originY float64
	// tiled is the box the tiles of level 0 cover: the grid set's extent
	// grown to whole level-0 tiles (equal to it for whole-tile grids). GDAL
	// anchors every level at its top-left corner and halves its tiles per
	// level, so it must be whole tiles at level 0.
	tiled   grid.Extent
	profile string
	// mercator: the tile set is the usual Web Mercator pyramid (level z has
	// 2^z × 2^z square tiles over the whole world), so TileJSON applies.
	mercator bool
	// vectorLayers are the layers of a vector tile set's first stored
	// tile (see Publisher.vectorLayers); none for images.
	vectorLayers []vectortile.Layer
	// pmtiles: the tile set's PMTiles archive is in the store
	// (tilestore.ArchiveKey), served as it is.
	pmtiles bool
}

// archiveKey is the key, without the key prefix, of the tile set's
// PMTiles archive.
func (d *description) archiveKey() string {
	return tilestore.ArchiveKey(d.set.LayerID, d.set.GridSetID, d.set.FormatID, d.set.ParametersID)
}

// archivePath is archiveKey as a URL path relative to the store's root.
func (d *description) archivePath() string {
	return tilestore.ArchivesDir + "/" + d.path() + ".pmtiles"
}

// describe builds the description of one tile set. It fails with NotFound
// when the layer has no such grid subset or format, and with an error
// wrapping [ErrUndescribable] when the grid cannot be described.
func describe(l *layer.Layer, gridSetID, mime, parametersID string, params map[string]string, keyPrefix string) (*description, error) {
	s, ok := l.Subset(gridSetID)
	if !ok {
		return nil, apperr.New(apperr.NotFound, "layer %s has no grid set %s", l.Name, gridSetID)
	}
	formatID, ext, ok := tilestore.Format(mime)
	if !ok || !l.HasFormat(mime) {
		return nil, apperr.New(apperr.NotFound, "layer %s has no format %s", l.Name, mime)
	}
	ox, oy, err := bottomLeftOrigin(s)
	if err != nil {
		return nil, fmt.Errorf("describe layer %s in grid set %s: %w", l.Name, gridSetID, err)
	}
	if params == nil {
		params = map[string]string{}
	}
	d := &description{
		layer: l, subset: s, mime: mime, params: params,
		set: tilestore.TileSet{SetName: tilestore.SetName{Layer: l.Name, GridSetID: gridSetID, FormatID: formatID,
			ParametersID: parametersID}, Prefix: keyPrefix, LayerID: l.ID, Ext: ext},
		originX: ox, originY: oy,
		tiled:    tiledExtent(s.GridSet, 0, ox, oy),
		mercator: isMercatorPyramid(s),
	}
	switch {
	case d.mercator && s.GridSet.TileWidth == 256:
		d.profile = profileMercator
	case isGeodeticPyramid(s):
		d.profile = profileGeodetic
	default:
		d.profile = profileLocal
	}
	return d, nil
}

// bottomLeftOrigin returns the bottom-left corner of tile (0, 0), which
// must be the same at every level from 0 to the subset's last (the TMS
// document lists them all: GDAL needs its levels to start at 0). A bottom-left grid's is
// its extent's corner; a top-left grid's is the extent's top minus its rows,
// which is the same at every level only when the extent is a whole number
// of tiles high (or the levels happen to agree).
func bottomLeftOrigin(s *grid.Subset) (x, y float64, err error) {
	g := s.GridSet
	if !g.TopLeft {
		return g.Extent.MinX, g.Extent.MinY, nil
	}
	y = bottomOf(g, 0)
	for z := 1; z <= s.MaxZoom; z++ {
		_, h := g.Span(z)
		if b := bottomOf(g, z); math.Abs(b-y) > tolerance*h {
			return 0, 0, fmt.Errorf("%w: row 0 starts at y=%s at level %d but y=%s at level %d (alignTopLeft with an extent that is not a whole number of tiles high)",
				ErrUndescribable, formatFloat(y), 0, formatFloat(b), z)
		}
	}
	if _, h := g.Span(0); math.Abs(y-g.Extent.MinY) <= tolerance*h {
		y = g.Extent.MinY // the usual case: whole tiles; avoid float noise
	}
	return g.Extent.MinX, y, nil
}

func bottomOf(g *grid.GridSet, z int) float64 { return g.TileExtent(z, 0, 0).MinY }

// tiledExtent returns the box the tiles of level z cover from the origin,
// snapped to the grid set's extent where they agree within the tolerance.
func tiledExtent(g *grid.GridSet, z int, ox, oy float64) grid.Extent {
	cols, rows := g.Size(z)
	w, h := g.Span(z)
	e := grid.Extent{MinX: ox, MinY: oy, MaxX: ox + float64(cols)*w, MaxY: oy + float64(rows)*h}
	if math.Abs(e.MaxX-g.Extent.MaxX) <= tolerance*w {
		e.MaxX = g.Extent.MaxX
	}
	if math.Abs(e.MaxY-g.Extent.MaxY) <= tolerance*h {
		e.MaxY = g.Extent.MaxY
	}
	return e
}

// isMercatorPyramid reports whether the subset's levels are the standard
// Web Mercator tiles: a Web Mercator CRS, the world extent, square tiles,
// and level z made of 2^z × 2^z tiles exactly covering it.
func isMercatorPyramid(s *grid.Subset) bool { return grid.IsWebMercatorPyramid(s) }

// isGeodeticPyramid reports whether the subset's levels are those of the
// TMS global-geodetic profile: EPSG:4326, −180,−90,180,90, 256-pixel tiles,
// level z made of 2^(z+1) × 2^z tiles (0.703125°/px at level 0).
func isGeodeticPyramid(s *grid.Subset) bool {
	g := s.GridSet
	if g.EPSG != 4326 || g.TileWidth != 256 || g.TileHeight != 256 ||
		g.Extent != (grid.Extent{MinX: -180, MinY: -90, MaxX: 180, MaxY: 90}) {
		return false
	}
	return isPyramid(s, 2, 0.703125)
}

// isPyramid reports whether every level z of s has cols0·2^z × 2^z tiles
// at resolution res0/2^z (within a relative 1e-9).
func isPyramid(s *grid.Subset, cols0 int64, res0 float64) bool {
	g := s.GridSet
	for z := s.MinZoom; z <= s.MaxZoom; z++ {
		if z > 62 {
			return false
		}
		n := int64(1) << z
		cols, rows := g.Size(z)
		want := res0 / float64(n)
		if cols != cols0*n || rows != n || math.Abs(g.Resolutions[z]-want) > 1e-9*want {
			return false
		}
	}
	return true
}

// srs returns the EPSG code clients know the grid set's CRS by: EPSG:3857
// for every alias of spherical Mercator (GDAL and QGIS expect it).
func (d *description) srs() string {
	code := d.subset.GridSet.EPSG
	if grid.SameCRS(code, 3857) {
		code = 3857
	}
	return "EPSG:" + strconv.Itoa(code)
}

// wgs84Bounds returns the subset's coverage as west, south, east, north in
// degrees, when the CRS is EPSG:4326 or Web Mercator. Mercator bounds are
// rounded outwards to 6 decimals (about 0.1 m) and latitudes clamped to
// ±85.0511.
func (d *description) wgs84Bounds() ([4]float64, bool) {
	c := d.subset.Extent()
	g := d.subset.GridSet
	switch {
	case g.EPSG == 4326:
		return [4]float64{max(c.MinX, -180), max(c.MinY, -90), min(c.MaxX, 180), min(c.MaxY, 90)}, true
	case grid.SameCRS(g.EPSG, 3857):
		w, s := mercatorToLonLat(c.MinX, c.MinY)
		e, n := mercatorToLonLat(c.MaxX, c.MaxY)
		return [4]float64{roundDown(w), roundDown(s), roundUp(e), roundUp(n)}, true
	}
	return [4]float64{}, false
}

// unionWGS84 returns the box, in WGS84 degrees, around the coverages of
// the tile sets ds that have one (see wgs84Bounds); nil when none has.
func unionWGS84(ds []*description) *[4]float64 {
	var u *[4]float64
	for _, d := range ds {
		b, ok := d.wgs84Bounds()
		switch {
		case !ok:
		case u == nil:
			u = &b
		default:
			u[0], u[1] = min(u[0], b[0]), min(u[1], b[1])
			u[2], u[3] = max(u[2], b[2]), max(u[3], b[3])
		}
	}
	return u
}

// mercatorToLonLat converts spherical Mercator metres to degrees, clamping
// the longitude to ±180 and the latitude to ±maxLatitude.
func mercatorToLonLat(x, y float64) (lon, lat float64) {
	lon = x / earthRadius * 180 / math.Pi
	lat = (2*math.Atan(math.Exp(y/earthRadius)) - math.Pi/2) * 180 / math.Pi
	return min(max(lon, -180), 180), min(max(lat, -maxLatitude), maxLatitude)
}

const decimals = 1e6

func roundDown(v float64) float64 { return math.Floor(v*decimals) / decimals }
func roundUp(v float64) float64   { return math.Ceil(v*decimals) / decimals }

// centerZoom returns the level whose tiles are about as wide as the
// coverage — the coverage fills a map a tile or two wide — within the
// subset's zoom range.
func (d *description) centerZoom() int {
	g := d.subset.GridSet
	c := d.subset.Extent()
	z := d.subset.MinZoom
	for z < d.subset.MaxZoom {
		if w, _ := g.Span(z + 1); w < c.Width() {
			break
		}
		z++
	}
	return z
}

// path returns the tile set's public path, without the key prefix (the
// CDN's origin path), each segment escaped: "demo:world/EPSG:4326/png/default".
func (d *description) path() string {
	segs := [...]string{d.set.LayerID, d.set.GridSetID, d.set.FormatID, d.set.ParametersID}
	for i, s := range segs {
		segs[i] = escapeSegment(s)
	}
	return strings.Join(segs[:], "/")
}

// escapeSegment percent-escapes a key segment for a URL path. Besides what
// url.PathEscape escapes, '+' becomes %2B: S3 reads a '+' in a path as a
// space.
func escapeSegment(s string) string {
	return strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
}

// xyzPath returns the template of the tile set's tiles on the edge's XYZ
// paths (rows from the top), without the key prefix:
// "xyz/demo:world/EPSG:900913/png/default/{z}/{x}/{y}.png".
func (d *description) xyzPath() string {
	return "xyz/" + d.path() + "/" + d.tileTemplate()
}

// tileTemplate returns the path of the tiles below the tile set's path.
func (d *description) tileTemplate() string {
	return "{z}/{x}/{y}." + escapeSegment(d.set.Ext)
}

// abstract describes the tile set in one sentence.
func (d *description) abstract() string {
	s := fmt.Sprintf("Layer %s in grid set %s, %s", d.layer.Name, d.set.GridSetID, d.mime)
	if len(d.params) > 0 {
		s += ", " + d.paramsText()
	}
	return s + ". Tile rows are counted from the bottom (TMS)."
}

// paramsText lists the parameters: "parameters K1=v1, K2=v2".
func (d *description) paramsText() string {
	var b strings.Builder
	b.WriteString("parameters ")
	for i, k := range slices.Sorted(maps.Keys(d.params)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + d.params[k])
	}
	return b.String()
}

// formatFloat formats v in plain decimal notation with the fewest digits
// that read back as v, as every reader of the documents accepts.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
