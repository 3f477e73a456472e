// Package source defines how tiles are rendered: a Source turns one
// metatile request into encoded tiles. Implementations live in subpackages
// (testpattern; WMS and XYZ upstreams behind the same interface).
package source

import (
	"context"

	"golang.org/x/sync/errgroup"

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

// EachTile makes the tiles of r (rows from the top, as a metatile's image
// holds them) and fills each with fetch, all at once: what a source that
// asks its upstream for every tile alone does (XYZ, vector tiles from a
// WMS). The first failure cancels the other fetches and is the one
// returned.
func EachTile(ctx context.Context, r grid.TileRange, fetch func(ctx context.Context, t *Tile) error) ([]Tile, error) {
	tiles := make([]Tile, 0, r.Count())
	for y := r.MaxY; y >= r.MinY; y-- {
		for x := r.MinX; x <= r.MaxX; x++ {
			tiles = append(tiles, Tile{X: x, Y: y})
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	for i := range tiles {
		g.Go(func() error { return fetch(ctx, &tiles[i]) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return tiles, nil
}
