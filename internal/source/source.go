// Package source defines how tiles are rendered: a Source turns one
// metatile request into encoded tiles. Implementations live in subpackages
// (testpattern; WMS and XYZ upstreams behind the same interface).
package source

import (
	"context"

	"tilecache/internal/grid"
)

// Request asks for the tiles of one metatile.
type Request struct {
	Layer      string
	GridSet    *grid.GridSet
	Z          int
	Tiles      grid.TileRange // the metatile's tile positions (y from the bottom)
	Format     string         // MIME type of the wanted encoding
	Parameters map[string]string
	Gutter     int // pixels rendered around the metatile and cut away
	// Parallel is how many tiles may be encoded at once: 0 or 1 encodes
	// them one after another (seeding lanes run side by side anyway); a
	// render on miss, which a client waits for, uses every core.
	Parallel int
}

// Tile is one encoded tile of a metatile.
type Tile struct {
	X, Y int64
	Data []byte
	// Skip marks a blank tile the layer chose not to store (Data is nil):
	// it counts as processed, a seed stores nothing for it and a reseed
	// deletes the tile it would have replaced.
	Skip bool
	// Encoding is the Content-Encoding Data is stored and served with:
	// "gzip" for a vector tile the upstream sent compressed, else "".
	Encoding string
}

// Source renders metatiles. Render returns one Tile per position of
// req.Tiles, or an error: a failed render stores nothing.
type Source interface {
	Render(ctx context.Context, req Request) ([]Tile, error)
}

// ContentType returns the Content-Type to store with tiles of a format:
// the png variants are all image/png.
func ContentType(format string) string {
	switch format {
	case "image/png8", "image/png24", "image/png; mode=24bit":
		return "image/png"
	}
	return format
}
