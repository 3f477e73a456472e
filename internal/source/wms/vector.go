package wms

import (
	"context"
	"fmt"
	"tilecache/internal/metrics"

	"tilecache/internal/grid"
	"tilecache/internal/source"
)

// renderVector renders the tiles of a metatile in a vector tile format:
// one GetMap per tile in that format, without gutter, concurrently within
// the layer's maxConcurrent. A vector tile cannot be cut from a larger
// one (its coordinates are relative to its own extent, and features
// crossing its edges are clipped by the server with its own buffer), so
// GeoWebCache asks one tile per request for such a format whatever the
// layer's metatiling (MimeType.supportsTiling is false, isVector true),
// and so does this source; the metatile stays the unit of the seed's
// lanes and of render on miss. Each answer is checked (Pipeline.Vector)
// and stored as it came; the checks take their cost from the process's
// decode budget, as images' decoding does.
func (s *Source) renderVector(ctx context.Context, req source.Request) ([]source.Tile, error) {
	r := req.Tiles
	return source.EachTile(ctx, r, func(ctx context.Context, t *source.Tile) error {
		one := req
		one.Tiles = grid.TileRange{Z: r.Z, MinX: t.X, MaxX: t.X, MinY: t.Y, MaxY: t.Y}
		one.Gutter = 0
		u, _, err := s.GetMapURL(one)
		if err != nil {
			return err
		}
		// Bounded by the largest vector tile accepted, plus room for
		// headers and an exception report; t is set only from a tile
		// checked, so that a failure names the tile that failed.
		err = metrics.Stage(ctx, metrics.StageGetMap, func(ctx context.Context) error {
			return s.client.FetchVector(ctx, u, func(body []byte, contentType string) error {
				// Checking a vector tile (decompressed, parsed) is its decode.
				return metrics.Stage(ctx, metrics.StageDecode, func(ctx context.Context) error {
					out, err := s.pipe.Vector(ctx, s.budget, req.Format, body, contentType, u, t.X, t.Y)
					if err == nil {
						*t = out
					}
					return err
				})
			})
		})
		if err != nil {
			return fmt.Errorf("wms GetMap for z%d tile %d/%d: %w", r.Z, t.X, t.Y, err)
		}
		return nil
	})
}
