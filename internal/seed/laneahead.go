// The part of a plan a lane still visits, which bounds what its writer
// lists (metatile.Writer.Ahead).

package seed

import "tilecache/internal/grid"

// ahead returns the tiles of level z the lane still visits from its
// cursor on, as the smallest range of whole metatile columns (plans
// numbered by columns) or rows (by rows) holding them; ok is false when
// it visits none.
func (ln *lane) ahead(z int) (grid.TileRange, bool) {
	return ln.plan.Ahead(z, ln.t.Cursor, ln.t.End)
}
