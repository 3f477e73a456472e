// Package archive describes what the tile archive formats (PMTiles,
// MBTiles, GeoPackage) have in common, as their consumers see it: a Writer
// that takes tiles in any order and a Reader that finds one tile or walks
// them all. The formats live in the sub-packages pmtiles, mbtiles and gpkg;
// none of them knows the cache, its layers or its grid sets.
//
// Tile coordinates are always z/x/y with y counted from the top (north) of
// the tile matrix, as web maps and PMTiles do; each format converts to its
// own convention (MBTiles flips y to TMS order, GeoPackage counts rows from
// the top as well).
package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNoTiles is what Close returns, wrapped, when a format cannot hold an
// archive of no tiles and none was put: PMTiles' directories must not be
// empty. The formats that can (MBTiles, GeoPackage) write an empty one.
var ErrNoTiles = errors.New("no tile was put, and this format holds at least one")

// Metadata is what an archive says about its tiles, in TileJSON's terms.
type Metadata struct {
	Name        string
	Description string
	Attribution string
	// Format is the tiles' encoding: "png", "jpg", "webp", "avif" or
	// "pbf" (Mapbox vector tiles).
	Format string
	// Type is MBTiles' "overlay" or "baselayer" (empty: not written).
	Type string
	// Bounds are west, south, east, north in WGS84 degrees; all zero
	// means unknown.
	Bounds [4]float64
	// Center is longitude, latitude, zoom; all zero means unknown.
	Center  [3]float64
	MinZoom int
	MaxZoom int
	// VectorLayers is TileJSON's vector_layers array for vector tiles,
	// kept as the JSON it is.
	VectorLayers json.RawMessage
}

// Writer is what an export needs of an archive being written. Put takes
// tiles in any order; putting the same tile twice keeps the last data.
// Close writes what remains (indexes, metadata) and releases the
// writer's resources; an archive whose Close did not return nil is not
// usable (ErrNoTiles: the format holds no empty archive).
type Writer interface {
	Put(ctx context.Context, z int, x, y int64, data []byte) error
	Close(ctx context.Context, md Metadata) error
}

// Reader is what an import or a tile source needs of an archive.
type Reader interface {
	// Tile returns one tile's data; ok is false where the archive has none.
	Tile(ctx context.Context, z int, x, y int64) (data []byte, ok bool, err error)
	// Metadata returns what the archive says about itself.
	Metadata(ctx context.Context) (Metadata, error)
	// Tiles calls fn for every tile in the archive, in the archive's own
	// order, and stops at fn's first error, which it returns.
	Tiles(ctx context.Context, fn func(z int, x, y int64, data []byte) error) error
	Close() error
}

// CheckTile returns an error naming the problem when z/x/y is not a tile
// of a quadtree pyramid (2^z by 2^z tiles at level z), the only layout
// PMTiles and MBTiles hold.
func CheckTile(z int, x, y int64) error {
	if z < 0 || z > 31 {
		return fmt.Errorf("zoom level %d is outside 0..31", z)
	}
	n := int64(1) << z
	if x < 0 || x >= n || y < 0 || y >= n {
		return fmt.Errorf("tile %d/%d/%d is outside the %dx%d tiles of level %d", z, x, y, n, n, z)
	}
	return nil
}
