// The areas of requests: geometries prepared for the request's grid set,
// stored with the job so that every worker plans the same metatiles.

package seed

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"tilecache/internal/apperr"
	"tilecache/internal/area"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
)

// prepareArea parses and prepares a request's geometries for sub's grid
// set, and checks that they give every level zs to ze an area.
func prepareArea(sub *grid.Subset, r gwc.SeedRequest, zs, ze int) (*area.Shape, error) {
	specs := make([]area.Spec, len(r.Geometries))
	for i, g := range r.Geometries {
		geom, srs, err := area.Parse(g.Text)
		if err != nil {
			return nil, err
		}
		if srs == 0 && r.SRS != nil {
			srs = *r.SRS
		}
		specs[i] = area.Spec{Geometry: geom, SRS: srs, Buffer: g.Buffer, ZoomStart: -1, ZoomStop: -1}
		if g.ZoomStart != nil || g.ZoomStop != nil {
			if g.ZoomStart == nil || g.ZoomStop == nil {
				return nil, apperr.Invalidf("a per-zoom geometry needs zoomStart and zoomStop")
			}
			specs[i].ZoomStart, specs[i].ZoomStop = *g.ZoomStart, *g.ZoomStop
		}
	}
	shape, err := area.Prepare(sub.GridSet, specs)
	if err != nil {
		return nil, err
	}
	for z := zs; z <= ze; z++ {
		if !shape.Covers(z) {
			return nil, apperr.Invalidf("no geometry for zoom level %d: give a geometry for every level, or one in geometries for level %d", z, z)
		}
	}
	return shape, nil
}

// clipToArea returns the part of bounds inside the box around the shape's
// polygons of levels zs to ze; Invalid when they do not meet.
func clipToArea(bounds grid.Extent, shape interface {
	Bound(zs, ze int) (grid.Extent, bool)
}, zs, ze int) (grid.Extent, error) {
	b, _ := shape.Bound(zs, ze)
	out := grid.Extent{
		MinX: max(bounds.MinX, b.MinX), MinY: max(bounds.MinY, b.MinY),
		MaxX: min(bounds.MaxX, b.MaxX), MaxY: min(bounds.MaxY, b.MaxY),
	}
	if !out.Valid() {
		return grid.Extent{}, apperr.Invalidf("the request's area (within %v in the grid set's CRS) lies outside the request's bounds %v", b, bounds)
	}
	return out, nil
}

// areaPrefix is the key prefix, under the store's key prefix, of the
// stored areas. No layer can have the reserved id, so no layer's keys
// come under it.
const areaPrefix = layer.ReservedID + "/areas/"

// areaKey returns the key a prepared area is stored under: its content's
// SHA-256, so that equal areas share one object and a stored area never
// changes.
func areaKey(prefix string, data []byte) string {
	sum := sha256.Sum256(data)
	p := strings.TrimSuffix(prefix, "/")
	if p != "" {
		p += "/"
	}
	return p + areaPrefix + hex.EncodeToString(sum[:]) + ".json"
}

// areaCache keeps the areas read by this process, by key. Stored areas
// never change, so an entry is never stale; the cache is emptied when it
// grows past areaCacheMax entries.
type areaCache struct {
	mu     sync.Mutex
	shapes map[string]grid.Area
}

const areaCacheMax = 64

// jobArea returns the area a request of layer l in sub works: the tiles
// that both the request's geometry (shape, nil when it has none) and the
// layer's coverage geometry meet; nil when there is neither.
func jobArea(l *layer.Layer, sub *grid.Subset, given grid.Area) grid.Area {
	cov := l.Area(sub.GridSet.ID)
	switch {
	case given != nil && cov != nil:
		return allOf{given, cov}
	case given != nil:
		return given
	case cov != nil:
		return cov
	}
	return nil
}

// allOf is the tiles in every one of its areas (a request's geometry and
// its layer's coverage, say).
type allOf []grid.Area

// LinesBound implements grid.LinesBounder: Lines holds the lines of
// every one of its areas at once.
func (a allOf) LinesBound(z int, order grid.Order, r grid.TileRange) (int64, error) {
	var n int64
	for _, o := range a {
		if b, ok := o.(grid.LinesBounder); ok {
			lines, err := b.LinesBound(z, order, r)
			if err != nil {
				return 0, err
			}
			n += lines
		}
	}
	return n, nil
}

// Lines implements grid.Area.
func (a allOf) Lines(z int, order grid.Order, r grid.TileRange) (grid.Lines, error) {
	out, err := a[0].Lines(z, order, r)
	if err != nil {
		return grid.Lines{}, err
	}
	for _, o := range a[1:] {
		l, err := o.Lines(z, order, r)
		if err != nil {
			return grid.Lines{}, err
		}
		out = grid.Intersect(out, l)
	}
	return out, nil
}
