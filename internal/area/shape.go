package area

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkb"
	"github.com/paulmach/orb/project"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
)

// Spec is one geometry of a request as given: in srs's coordinates (EPSG
// code; 0 means EPSG:4326), buffered by Buffer metres, for zoom levels
// ZoomStart to ZoomStop (both −1: every level the request plans).
type Spec struct {
	Geometry            orb.Geometry
	SRS                 int
	Buffer              float64
	ZoomStart, ZoomStop int
}

// AllZooms reports whether s applies to every level.
func (s Spec) AllZooms() bool { return s.ZoomStart < 0 }

// Shape is an area prepared for a grid set: polygons in its CRS, by zoom
// level. It is immutable and safe for concurrent use.
type Shape struct {
	grid  *grid.GridSet
	parts []*part
}

// part holds the polygons of levels zs to ze (zs < 0: of every level no
// other part names).
type part struct {
	zs, ze int
	polys  orb.MultiPolygon
	bound  orb.Bound
	boxes  []orb.Bound  // of each polygon
	once   [2]sync.Once // edges by order: rows, columns
	edges  [2][]edge
}

func newPart(zs, ze int, polys orb.MultiPolygon) *part {
	p := &part{zs: zs, ze: ze, polys: polys, bound: polys.Bound(), boxes: make([]orb.Bound, len(polys))}
	for i, poly := range polys {
		p.boxes[i] = poly.Bound()
	}
	return p
}

// Prepare transforms each spec into g's CRS and buffers it into polygons.
// Per-zoom specs must not overlap in their levels, and at most one spec
// applies to every level. Errors are apperr.Invalid.
func Prepare(g *grid.GridSet, specs []Spec) (*Shape, error) {
	if len(specs) == 0 {
		return nil, apperr.Invalidf("no geometry")
	}
	sh := &Shape{grid: g}
	for i, s := range specs {
		if s.Buffer < 0 || math.IsNaN(s.Buffer) || math.IsInf(s.Buffer, 0) {
			return nil, apperr.Invalidf("buffer %v must be a finite number of metres, at least 0", s.Buffer)
		}
		if hasNonAreal(s.Geometry) && s.Buffer == 0 {
			return nil, apperr.Invalidf("geometry: a %s covers no area without a buffer in metres", s.Geometry.GeoJSONType())
		}
		if !s.AllZooms() && (s.ZoomStart > s.ZoomStop || s.ZoomStop < 0) {
			return nil, apperr.Invalidf("geometry for zoom levels %d to %d: zoomStart must be at most zoomStop", s.ZoomStart, s.ZoomStop)
		}
		for _, o := range specs[:i] {
			switch {
			case s.AllZooms() && o.AllZooms():
				return nil, apperr.Invalidf("more than one geometry for every zoom level")
			case !s.AllZooms() && !o.AllZooms() && s.ZoomStart <= o.ZoomStop && o.ZoomStart <= s.ZoomStop:
				return nil, apperr.Invalidf("geometries for zoom levels %d-%d and %d-%d overlap", o.ZoomStart, o.ZoomStop, s.ZoomStart, s.ZoomStop)
			}
		}
		geom, err := transform(s.Geometry, s.SRS, g)
		if err != nil {
			return nil, err
		}
		if n := buffered(geom, s.Buffer); n > MaxVertices {
			return nil, apperr.Invalidf("geometry has %d vertices once buffered by %v metres, more than %d (the limit of a geometry); simplify it or buffer less of it", n, s.Buffer, MaxVertices)
		}
		polys := buffer(geom, s.Buffer, g)
		p := newPart(s.ZoomStart, s.ZoomStop, polys)
		if s.AllZooms() {
			p.zs, p.ze = -1, -1
		}
		sh.parts = append(sh.parts, p)
	}
	return sh, nil
}

// Covers reports whether the shape has polygons for level z.
func (s *Shape) Covers(z int) bool { return s.part(z) != nil }

// part returns the polygons of level z, nil when no spec names it.
func (s *Shape) part(z int) *part {
	var all *part
	for _, p := range s.parts {
		if p.zs < 0 {
			all = p
		} else if p.zs <= z && z <= p.ze {
			return p
		}
	}
	return all
}

// Bound returns the box around the polygons of levels zs to ze, in the
// grid set's CRS; ok is false when no part covers any of those levels.
func (s *Shape) Bound(zs, ze int) (b grid.Extent, ok bool) {
	var u orb.Bound
	for _, p := range s.parts {
		if p.zs >= 0 && (p.ze < zs || p.zs > ze) {
			continue
		}
		if !ok {
			u, ok = p.bound, true
		} else {
			u = u.Union(p.bound)
		}
	}
	return grid.Extent{MinX: u.Min[0], MinY: u.Min[1], MaxX: u.Max[0], MaxY: u.Max[1]}, ok
}

// Vertices returns the number of vertices of the prepared polygons.
func (s *Shape) Vertices() int {
	n := 0
	for _, p := range s.parts {
		for _, poly := range p.polys {
			for _, r := range poly {
				n += len(r)
			}
		}
	}
	return n
}

// stored is the shape as Marshal writes it.
type stored struct {
	Version int          `json:"version"`
	GridSet string       `json:"gridSet"`
	Parts   []storedPart `json:"parts"`
}

type storedPart struct {
	ZoomStart int    `json:"zoomStart"`
	ZoomStop  int    `json:"zoomStop"`
	WKB       string `json:"wkb"` // base64 of the MultiPolygon's WKB
}

// Marshal encodes the prepared shape, exactly (WKB keeps every float64).
func (s *Shape) Marshal() ([]byte, error) {
	out := stored{Version: 1, GridSet: s.grid.ID}
	for _, p := range s.parts {
		b, err := wkb.Marshal(p.polys)
		if err != nil {
			return nil, fmt.Errorf("encode geometry: %w", err)
		}
		out.Parts = append(out.Parts, storedPart{ZoomStart: p.zs, ZoomStop: p.ze, WKB: base64.StdEncoding.EncodeToString(b)})
	}
	return json.Marshal(out)
}

// Unmarshal reads a shape that Marshal wrote for grid set g.
func Unmarshal(data []byte, g *grid.GridSet) (*Shape, error) {
	var in stored
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("decode area: %w", err)
	}
	if in.Version != 1 {
		return nil, fmt.Errorf("decode area: unknown version %d", in.Version)
	}
	if in.GridSet != g.ID {
		return nil, fmt.Errorf("decode area: prepared for grid set %s, not %s", in.GridSet, g.ID)
	}
	s := &Shape{grid: g}
	for _, sp := range in.Parts {
		b, err := base64.StdEncoding.DecodeString(sp.WKB)
		if err != nil {
			return nil, fmt.Errorf("decode area: %w", err)
		}
		geom, err := wkb.Unmarshal(b)
		if err != nil {
			return nil, fmt.Errorf("decode area: %w", err)
		}
		mp, ok := geom.(orb.MultiPolygon)
		if !ok {
			return nil, fmt.Errorf("decode area: %s, not a MultiPolygon", geom.GeoJSONType())
		}
		s.parts = append(s.parts, newPart(sp.ZoomStart, sp.ZoomStop, mp))
	}
	return s, nil
}

// transform returns g in gs's CRS. Coordinates in EPSG:4326 are
// longitude, latitude. Between EPSG:4326 and the spherical Mercator,
// edges are densified (at most densifyDegrees of latitude apart) so that
// an edge straight in one CRS follows its curve in the other.
func transform(g orb.Geometry, srs int, gs *grid.GridSet) (orb.Geometry, error) {
	if srs == 0 {
		srs = 4326
	}
	if srs == 4326 {
		if err := geographic(g); err != nil {
			return nil, err
		}
	}
	step := 0.0
	switch {
	case grid.SameCRS(srs, gs.EPSG):
		return g, nil
	case srs == 4326 && grid.SameCRS(gs.EPSG, 900913):
		step = densifyDegrees
	case grid.SameCRS(srs, 900913) && gs.EPSG == 4326:
		step = densifyMetres
	default:
		return nil, apperr.Invalidf("cannot transform a geometry from EPSG:%d to EPSG:%d (grid set %s): give it in EPSG:%d", srs, gs.EPSG, gs.ID, gs.EPSG)
	}
	// Densifying is counted before it is done: an edge's added points
	// grow with its north-south span, which the coordinates alone bound.
	if n := densified(g, step); n > MaxVertices {
		unit := "metres"
		if srs == 4326 {
			unit = "degrees"
		}
		return nil, apperr.Invalidf("geometry has %.0f vertices once densified for the transformation from EPSG:%d to EPSG:%d (a point every %v %s north-south), more than %d (the limit of a geometry); simplify it", n, srs, gs.EPSG, step, unit, MaxVertices)
	}
	if srs == 4326 {
		return project.Geometry(densify(orb.Clone(g), step), toMercator), nil
	}
	return project.Geometry(densify(orb.Clone(g), step), project.Mercator.ToWGS84), nil
}

// geographic checks that g's coordinates are longitudes within ±180 and
// latitudes within ±90 degrees.
func geographic(g orb.Geometry) error {
	var err error
	eachPoint(g, func(p orb.Point) bool {
		if !(p[0] >= -180 && p[0] <= 180 && p[1] >= -90 && p[1] <= 90) {
			err = apperr.Invalidf("geometry: coordinate %v is not a longitude within ±180 and a latitude within ±90 degrees (EPSG:4326 is longitude, latitude)", [2]float64(p))
			return false
		}
		return true
	})
	return err
}

// eachPoint calls yield with every vertex of g until it returns false.
func eachPoint(g orb.Geometry, yield func(orb.Point) bool) bool {
	switch g := g.(type) {
	case orb.Point:
		return yield(g)
	case orb.MultiPoint:
		for _, p := range g {
			if !yield(p) {
				return false
			}
		}
	case orb.LineString:
		return eachPoint(orb.MultiPoint(g), yield)
	case orb.Ring:
		return eachPoint(orb.MultiPoint(g), yield)
	case orb.MultiLineString:
		for _, l := range g {
			if !eachPoint(l, yield) {
				return false
			}
		}
	case orb.Polygon:
		for _, r := range g {
			if !eachPoint(r, yield) {
				return false
			}
		}
	case orb.MultiPolygon:
		for _, p := range g {
			if !eachPoint(p, yield) {
				return false
			}
		}
	case orb.Collection:
		for _, c := range g {
			if !eachPoint(c, yield) {
				return false
			}
		}
	}
	return true
}

// densified returns the number of vertices densify(g, step) gives, as a
// float64 so that no span can overflow it. A ring counts its closing
// edge, which densify adds when the ring is open.
func densified(g orb.Geometry, step float64) float64 {
	line := func(ps []orb.Point, ring bool) float64 {
		n := float64(len(ps))
		for i := 0; i+1 < len(ps); i++ {
			n += added(ps[i], ps[i+1], step)
		}
		if ring && len(ps) > 0 && ps[0] != ps[len(ps)-1] {
			n += 1 + added(ps[len(ps)-1], ps[0], step)
		}
		return n
	}
	switch g := g.(type) {
	case orb.Point:
		return 1
	case orb.MultiPoint:
		return float64(len(g))
	case orb.LineString:
		return line(g, false)
	case orb.MultiLineString:
		n := 0.0
		for _, l := range g {
			n += line(l, false)
		}
		return n
	case orb.Polygon:
		n := 0.0
		for _, r := range g {
			n += line(r, true)
		}
		return n
	case orb.MultiPolygon:
		n := 0.0
		for _, p := range g {
			n += densified(p, step)
		}
		return n
	case orb.Collection:
		n := 0.0
		for _, c := range g {
			n += densified(c, step)
		}
		return n
	}
	return 0
}

// added returns the points densify inserts between a and b.
func added(a, b orb.Point, step float64) float64 {
	if n := math.Ceil(math.Abs(b[1]-a[1]) / step); n > 1 {
		return n - 1
	}
	return 0
}

// buffered returns the most vertices buffer(g, d, ·) can give: g's
// polygons, and for d > 0 a closed circle around each point and the hull
// of two circles around each segment.
func buffered(g orb.Geometry, d float64) int64 {
	var n int64
	circle, hull := int64(circleSides+1), int64(2*circleSides+1)
	line := func(ps []orb.Point) {
		if d == 0 {
			return
		}
		if len(ps) == 1 {
			n += circle
		}
		if len(ps) > 1 {
			n += int64(len(ps)-1) * hull
		}
	}
	var walk func(g orb.Geometry)
	walk = func(g orb.Geometry) {
		switch g := g.(type) {
		case orb.Point:
			if d > 0 {
				n += circle
			}
		case orb.MultiPoint:
			if d > 0 {
				n += int64(len(g)) * circle
			}
		case orb.LineString:
			line(g)
		case orb.MultiLineString:
			for _, l := range g {
				line(l)
			}
		case orb.Polygon:
			for _, r := range g {
				// The ring, closed, and its edges buffered.
				edges := int64(len(r))
				if len(r) > 0 && r[0] == r[len(r)-1] {
					edges--
				}
				n += edges + 1
				if d > 0 {
					n += edges * hull
				}
			}
		case orb.MultiPolygon:
			for _, p := range g {
				walk(p)
			}
		case orb.Collection:
			for _, c := range g {
				walk(c)
			}
		}
	}
	walk(g)
	return n
}

// maxMercatorLat is the latitude of the spherical Mercator's edge.
const maxMercatorLat = 85.0511287798066

// toMercator projects longitude, latitude, clamping latitudes to the
// projection's square.
func toMercator(p orb.Point) orb.Point {
	p[1] = max(-maxMercatorLat, min(p[1], maxMercatorLat))
	return project.WGS84.ToMercator(p)
}

// densifyDegrees and densifyMetres are the longest edges, in degrees of
// latitude or the Mercator's metres (about as long at the equator), kept
// as one segment across the EPSG:4326 / Mercator transformation: only
// the north-south span of an edge bends.
const (
	densifyDegrees = 0.25
	densifyMetres  = 27_830
)

// densify inserts points into every edge of g spanning more than step
// along y (latitude, or Mercator northing).
func densify(g orb.Geometry, step float64) orb.Geometry {
	line := func(ps []orb.Point) []orb.Point {
		if len(ps) < 2 {
			return ps
		}
		out := make([]orb.Point, 0, len(ps))
		for i := 0; i < len(ps)-1; i++ {
			a, b := ps[i], ps[i+1]
			out = append(out, a)
			if n := int(math.Ceil(math.Abs(b[1]-a[1]) / step)); n > 1 {
				for k := 1; k < n; k++ {
					t := float64(k) / float64(n)
					out = append(out, orb.Point{a[0] + t*(b[0]-a[0]), a[1] + t*(b[1]-a[1])})
				}
			}
		}
		return append(out, ps[len(ps)-1])
	}
	switch g := g.(type) {
	case orb.LineString:
		return orb.LineString(line(g))
	case orb.MultiLineString:
		for i := range g {
			g[i] = line(g[i])
		}
		return g
	case orb.Polygon:
		for i := range g {
			g[i] = line(closeRing(g[i]))
		}
		return g
	case orb.MultiPolygon:
		for i := range g {
			g[i] = densify(g[i], step).(orb.Polygon)
		}
		return g
	case orb.Collection:
		for i := range g {
			g[i] = densify(g[i], step)
		}
		return g
	}
	return g
}

func closeRing(r orb.Ring) orb.Ring {
	if len(r) > 0 && r[0] != r[len(r)-1] {
		r = append(r, r[0])
	}
	return r
}

// circleSides is the number of sides of the polygon standing for a circle
// of a buffer. It is circumscribed: the buffer holds every point within
// the distance, and at most 2% more.
const circleSides = 16

// buffer returns g's polygons, and around every point and segment of g
// (polygons' edges included) the area within d metres, as polygons whose
// union is the buffered area.
func buffer(g orb.Geometry, d float64, gs *grid.GridSet) orb.MultiPolygon {
	var out orb.MultiPolygon
	circle := func(p orb.Point) []orb.Point {
		rx, ry := radius(p, d, gs)
		k := 1 / math.Cos(math.Pi/circleSides)
		pts := make([]orb.Point, circleSides)
		for i := range pts {
			a := 2 * math.Pi * float64(i) / circleSides
			pts[i] = orb.Point{p[0] + k*rx*math.Cos(a), p[1] + k*ry*math.Sin(a)}
		}
		return pts
	}
	point := func(p orb.Point) {
		if d > 0 {
			out = append(out, orb.Polygon{closeRing(orb.Ring(circle(p)))})
		}
	}
	line := func(ps []orb.Point) {
		if d == 0 {
			return
		}
		if len(ps) == 1 {
			point(ps[0])
		}
		for i := 0; i+1 < len(ps); i++ {
			if ps[i] == ps[i+1] {
				point(ps[i])
				continue
			}
			out = append(out, orb.Polygon{hull(append(circle(ps[i]), circle(ps[i+1])...))})
		}
	}
	var walk func(g orb.Geometry)
	walk = func(g orb.Geometry) {
		switch g := g.(type) {
		case orb.Point:
			point(g)
		case orb.MultiPoint:
			for _, p := range g {
				point(p)
			}
		case orb.LineString:
			line(g)
		case orb.MultiLineString:
			for _, l := range g {
				line(l)
			}
		case orb.Polygon:
			p := make(orb.Polygon, len(g))
			for i, r := range g {
				p[i] = closeRing(r)
				line(p[i])
			}
			out = append(out, p)
		case orb.MultiPolygon:
			for _, p := range g {
				walk(p)
			}
		case orb.Collection:
			for _, c := range g {
				walk(c)
			}
		}
	}
	walk(g)
	return out
}

// radius returns d metres at p as distances along x and y in gs's CRS:
// in the spherical Mercator stretched by 1/cos(latitude), in EPSG:4326 in
// degrees of longitude and latitude, and in any other CRS as metres.
func radius(p orb.Point, d float64, gs *grid.GridSet) (rx, ry float64) {
	switch {
	case grid.SameCRS(gs.EPSG, 900913):
		lat := project.Mercator.ToWGS84(p)[1] * math.Pi / 180
		r := d / max(math.Cos(lat), 1e-6)
		return r, r
	case gs.EPSG == 4326:
		const metresPerDegree = orb.EarthRadius * math.Pi / 180
		lat := max(-89.9, min(p[1], 89.9)) * math.Pi / 180
		return d / (metresPerDegree * math.Cos(lat)), d / metresPerDegree
	}
	return d, d
}

// hull returns the convex hull of ps as a closed counter-clockwise ring
// (Andrew's monotone chain).
func hull(ps []orb.Point) orb.Ring {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i][0] != ps[j][0] {
			return ps[i][0] < ps[j][0]
		}
		return ps[i][1] < ps[j][1]
	})
	cross := func(o, a, b orb.Point) float64 {
		return (a[0]-o[0])*(b[1]-o[1]) - (a[1]-o[1])*(b[0]-o[0])
	}
	h := make([]orb.Point, 0, 2*len(ps))
	for _, p := range ps {
		for len(h) >= 2 && cross(h[len(h)-2], h[len(h)-1], p) <= 0 {
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	lower := len(h) + 1
	for i := len(ps) - 2; i >= 0; i-- {
		p := ps[i]
		for len(h) >= lower && cross(h[len(h)-2], h[len(h)-1], p) <= 0 {
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	return orb.Ring(h) // the last point is the first again
}
