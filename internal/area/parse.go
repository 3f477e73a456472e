// Package area turns the areas of seed requests and layer coverages into
// the tiles a plan works: geometries (GeoJSON or WKT, in EPSG:4326 or the
// grid set's CRS, lines and points buffered by a distance in metres) and
// lists of tiles (z/x/y lines as tile-expiry tools write them).
//
// A geometry is prepared once for a grid set ([Prepare]): transformed into
// its CRS and buffered into polygons, which can be stored with a job
// ([Shape.Marshal]) and read back by every worker ([Unmarshal]). Its tiles
// at a level ([Shape.Lines]) are those whose square meets a polygon's
// interior: a polygon that only touches a tile's edge does not take it.
package area

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/paulmach/orb"
	"github.com/paulmach/orb/encoding/wkt"
	"github.com/paulmach/orb/geojson"

	"tilecache/internal/apperr"
)

// MaxVertices bounds the vertices of one geometry, as given and once
// densified and buffered: enough for a detailed country outline, few
// enough that preparing and sweeping it stays well under a second and
// some tens of MiB (a few hundred bytes a vertex at most).
const MaxVertices = 100_000

// Parse reads a geometry: GeoJSON (a geometry object, a Feature or a
// FeatureCollection, whose geometries are taken together) or WKT. An EWKT
// "SRID=n;" prefix gives the coordinates' EPSG code as srs (0 otherwise).
// Only areal, linear and point geometries are accepted; errors are
// apperr.Invalid and name the problem.
func Parse(text string) (g orb.Geometry, srs int, err error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return nil, 0, apperr.Invalidf("geometry is empty")
	}
	if s[0] == '{' {
		g, err = parseGeoJSON([]byte(s))
	} else {
		if rest, ok := cutPrefixFold(s, "SRID="); ok {
			code, wktText, found := strings.Cut(rest, ";")
			if !found {
				return nil, 0, apperr.Invalidf("geometry: SRID=n must be followed by ';' and the WKT")
			}
			if srs, err = strconv.Atoi(strings.TrimSpace(code)); err != nil || srs <= 0 {
				return nil, 0, apperr.Invalidf("geometry: invalid SRID %q", code)
			}
			s = strings.TrimSpace(wktText)
		}
		g, err = wkt.Unmarshal(s)
		if err != nil {
			err = apperr.Invalidf("geometry is neither GeoJSON nor valid WKT: %v", err)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	if err := check(g); err != nil {
		return nil, 0, err
	}
	return g, srs, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func parseGeoJSON(data []byte) (orb.Geometry, error) {
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, apperr.Invalidf("geometry is not valid GeoJSON: %v", err)
	}
	switch probe.Type {
	case "Feature":
		f, err := geojson.UnmarshalFeature(data)
		if err != nil {
			return nil, apperr.Invalidf("geometry: invalid GeoJSON Feature: %v", err)
		}
		if f.Geometry == nil {
			return nil, apperr.Invalidf("geometry: the GeoJSON Feature has no geometry")
		}
		return f.Geometry, nil
	case "FeatureCollection":
		fc, err := geojson.UnmarshalFeatureCollection(data)
		if err != nil {
			return nil, apperr.Invalidf("geometry: invalid GeoJSON FeatureCollection: %v", err)
		}
		var c orb.Collection
		for _, f := range fc.Features {
			if f.Geometry != nil {
				c = append(c, f.Geometry)
			}
		}
		if len(c) == 0 {
			return nil, apperr.Invalidf("geometry: the GeoJSON FeatureCollection has no geometry")
		}
		return c, nil
	case "":
		return nil, apperr.Invalidf("geometry: GeoJSON object without a type")
	}
	g, err := geojson.UnmarshalGeometry(data)
	if err != nil {
		return nil, apperr.Invalidf("geometry: invalid GeoJSON %s: %v", probe.Type, err)
	}
	if g.Coordinates == nil && g.Geometries == nil {
		return nil, apperr.Invalidf("geometry: GeoJSON %s without coordinates", probe.Type)
	}
	return g.Geometry(), nil
}

// check refuses geometries that cannot be an area: unsupported types,
// non-finite coordinates, rings of fewer than three distinct points, empty
// geometries and more than MaxVertices vertices.
func check(g orb.Geometry) error {
	n := 0
	var walk func(g orb.Geometry) error
	walk = func(g orb.Geometry) error {
		switch g := g.(type) {
		case orb.Point:
			n++
			return finite(g)
		case orb.MultiPoint:
			for _, p := range g {
				if err := walk(p); err != nil {
					return err
				}
			}
		case orb.LineString:
			if len(g) < 2 {
				return apperr.Invalidf("geometry: a LineString needs at least 2 points, got %d", len(g))
			}
			for _, p := range g {
				if err := walk(p); err != nil {
					return err
				}
			}
		case orb.MultiLineString:
			for _, l := range g {
				if err := walk(l); err != nil {
					return err
				}
			}
		case orb.Polygon:
			if len(g) == 0 {
				return apperr.Invalidf("geometry: a Polygon without rings")
			}
			for _, r := range g {
				if distinct(r) < 3 {
					return apperr.Invalidf("geometry: a polygon ring needs at least 3 distinct points, got %d", distinct(r))
				}
				for _, p := range r {
					if err := walk(p); err != nil {
						return err
					}
				}
			}
		case orb.MultiPolygon:
			for _, p := range g {
				if err := walk(p); err != nil {
					return err
				}
			}
		case orb.Collection:
			for _, c := range g {
				if err := walk(c); err != nil {
					return err
				}
			}
		case nil:
			return apperr.Invalidf("geometry is empty")
		default:
			return apperr.Invalidf("geometry: %s is not supported (Polygon, MultiPolygon, LineString, MultiLineString, Point, MultiPoint)", g.GeoJSONType())
		}
		if n > MaxVertices {
			return apperr.Invalidf("geometry has more than %d vertices; simplify it", MaxVertices)
		}
		return nil
	}
	if err := walk(g); err != nil {
		return err
	}
	if n == 0 {
		return apperr.Invalidf("geometry is empty")
	}
	return nil
}

func finite(p orb.Point) error {
	if math.IsNaN(p[0]) || math.IsInf(p[0], 0) || math.IsNaN(p[1]) || math.IsInf(p[1], 0) {
		return apperr.Invalidf("geometry: coordinate %v is not a finite number", [2]float64(p))
	}
	return nil
}

// distinct counts the distinct points of a ring (a closed ring repeats its
// first point).
func distinct(r orb.Ring) int {
	seen := map[orb.Point]bool{}
	for _, p := range r {
		seen[p] = true
	}
	return len(seen)
}

// hasNonAreal reports whether g holds a line or a point.
func hasNonAreal(g orb.Geometry) bool {
	switch g := g.(type) {
	case orb.Point, orb.MultiPoint, orb.LineString, orb.MultiLineString:
		return true
	case orb.Collection:
		for _, c := range g {
			if hasNonAreal(c) {
				return true
			}
		}
	}
	return false
}
