// Package grid is the tile-grid arithmetic of tilecache: grid sets, grid
// subsets, tile ranges and the numbering of a seed request's metatiles. It
// does no I/O.
//
// The pieces fit together as follows. A [GridSet] is a tiling of a CRS
// extent at a list of resolutions (the built-in ones come from [Builtin]). A
// [Subset] is how a layer uses a grid set: a coverage extent and a zoom range.
// [Subset.Range] turns request bounds into the [TileRange] of one zoom level,
// following the contract's section 10.2, and a [Plan] widens those ranges to
// whole metatiles and numbers the metatiles so that a task's share of a
// request (a [Lane]) is just an index range.
//
// # Tile coordinates
//
// Tiles are addressed by zoom level z, column x (0 is westernmost) and row y.
// Row 0 is the southernmost row for every grid set, including top-left
// aligned ones, matching the storage key layout (contract section 9).
//
// # Floating point
//
// Bounds are converted to tile indices by dividing by the tile span. A
// coordinate within a millionth of a tile of a tile edge is treated as lying
// exactly on that edge, so that float noise never pulls in a neighbouring row
// or column (GeoWebCache compares exactly).
package grid
