package mbtiles

import (
	"context"
	"fmt"
)

// Count returns how many tiles the file holds at levels minZ..maxZ.
func (r *Reader) Count(ctx context.Context, minZ, maxZ int) (int64, error) {
	var n int64
	if err := r.db.QueryRowContext(ctx, "SELECT count(*) FROM tiles WHERE zoom_level BETWEEN ? AND ?", minZ, maxZ).Scan(&n); err != nil {
		return 0, fmt.Errorf("mbtiles: count tiles: %w", err)
	}
	return n, nil
}

// Walk calls fn for the tiles of levels minZ..maxZ in one fixed order
// (level, column, row from the bottom: the key of the tiles table's index
// as MBTiles writers make it), after the first skip of them, so that a
// walk resumed after skip tiles goes on where an earlier walk of the same
// file stopped.
func (r *Reader) Walk(ctx context.Context, minZ, maxZ int, skip int64, fn func(z int, x, y int64, data []byte) error) error {
	return r.each(ctx, fn, "SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles WHERE zoom_level BETWEEN ? AND ? "+
		"ORDER BY zoom_level, tile_column, tile_row LIMIT -1 OFFSET ?", minZ, maxZ, max(skip, 0))
}
