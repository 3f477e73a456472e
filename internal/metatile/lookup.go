// What a writer learns of the tiles it stores or deletes — which are
// missing (a seed), their stored sizes and MD5s (a reseed, a truncate) —
// from listings of whole levels or columns (kept for its later metatiles)
// or one Stat per tile. Nearly free of side effects: it reads the store,
// and what its owner still visits (Writer.Ahead).

package metatile

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"maps"
	"strconv"
	"sync"
	"time"

	"tilecache/internal/grid"
	"tilecache/internal/metrics"
	"tilecache/internal/tilestore"

	"golang.org/x/sync/errgroup"
)

// column is one column of tiles of a level.
type column struct {
	z int
	x int64
}

// storedTile is what a writer learns of a stored tile: its size (-1: none
// is stored), when it was stored (zero when unknown) and, when the store
// reports it, the MD5 of its content.
type storedTile struct {
	size     int64
	modified time.Time
	sum      [md5.Size]byte
	summed   bool // sum is known
	// stale: a seed stores the tile again, unchanged or not, so that its
	// age starts again (see Writer.missing).
	stale bool
}

// absent is a tile that is not stored.
var absent = storedTile{size: -1}

// storedOf returns what o says of its tile.
func storedOf(o tilestore.Object) storedTile {
	st := storedTile{size: o.Size, modified: o.Modified}
	if len(o.MD5) == hex.EncodedLen(md5.Size) {
		_, err := hex.Decode(st.sum[:], []byte(o.MD5))
		st.summed = err == nil
	}
	return st
}

// holds reports whether the stored tile's content is data: a tile is
// stored, its MD5 is known, and size and MD5 are data's. An unknown MD5
// never matches, so the tile is stored again.
func (st storedTile) holds(data []byte) bool {
	return st.summed && st.size == int64(len(data)) && md5.Sum(data) == st.sum
}

// listedColumn holds the stored tiles of a column in rows lo..hi, as a
// listing found them.
type listedColumn struct {
	lo, hi int64
	tiles  map[int64]storedTile // by row
}

// listedLevel holds the stored tiles of a level inside ahead, as one
// listing of the whole level found them.
type listedLevel struct {
	ahead grid.TileRange
	tiles map[[2]int64]storedTile // by column and row
}

// listBandRows is the most rows of a column a writer keeps from one listing
// of the column: a listing reads the whole column (one LIST request per
// 1,000 stored tiles), so a writer whose owner goes up a tall column lists it again
// every listBandRows rows, and keeps at most that many tiles of each
// column it listed (≤ listCacheMax in all).
const listBandRows = 4096

// ListColumn reports whether lookup learns of a column's tiles from a
// listing rather than one Stat per tile, when its owner still visits
// rowsAhead rows of it (from the lowest of the batch) and the coverage
// has covRows rows: when the most a listing can cost (all covRows
// stored) is no more than Stats of the rows it keeps, and at least
// listMinTiles rows are kept.
func ListColumn(rowsAhead, covRows int64) bool {
	kept := min(rowsAhead, listBandRows)
	return kept >= listMinTiles && kept >= (covRows+999)/1000
}

// listLevelMax is the most tiles a level may have in the layer's coverage
// for lookup to list the whole level (one LIST per 1,000 stored tiles, at
// most 66) when that takes fewer requests than listing its columns; what
// is kept is of the tiles its owner still visits (≤ 5 MB).
const listLevelMax = 1 << 16

// listCacheMax bounds the listed tiles a writer keeps (about 70 bytes
// each): past it the cache starts again, at the cost of listing columns
// again.
const listCacheMax = 4 * listBandRows * 4

// listMinTiles is the fewest tiles of a column the owner must still visit
// for it to be listed: a listing then saves requests (and time). S3 bills
// a LIST like a PUT, 12.5 times a HEAD, so in dollars it pays from 13
// tiles; a reseed's or truncate's cost is dominated by its PUTs or
// deletes either way.
const listMinTiles = 2

// lookup returns what is stored of each tile of refs (its size, -1 when
// absent, and its MD5 where the store knows it), learnt with as few
// requests as it can: from one listing of the whole level when the level
// is small enough and that takes fewer requests than listing the columns
// the owner still visits in it; else from a listing of each column the
// batch touches when the column is short enough; else from one Stat per
// tile. Listings are kept for the writer's later metatiles (a truncate or
// reseed visits each tile once; numbered by columns, a lane's batches go
// down a column before the next).
func (w *Writer) lookup(ctx context.Context, refs []tileRef) ([]storedTile, error) {
	// An owner may render several metatiles at once (a seed lane): one
	// lookup at a time keeps the listings consistent.
	w.lookMu.Lock()
	defer w.lookMu.Unlock()
	byCol := map[column][]int{}
	for i, r := range refs {
		c := column{r.z, r.x}
		byCol[c] = append(byCol[c], i)
	}
	out := make([]storedTile, len(refs))
	var stat []int // refs to Stat one by one
	if len(refs) > 0 {
		// The owner goes up level by level: levels below this batch are done.
		minZ := refs[0].z
		for _, r := range refs {
			minZ = min(minZ, r.z)
		}
		for z := range w.levels {
			if z < minZ {
				delete(w.levels, z)
			}
		}
	}
	for c, idx := range byCol {
		if lv, err := w.listLevel(ctx, c.z); err != nil {
			return nil, err
		} else if lv != nil && lv.ahead.Contains(c.x, refs[idx[0]].y) {
			for _, i := range idx {
				if st, ok := lv.tiles[[2]int64{refs[i].x, refs[i].y}]; ok && lv.ahead.Contains(refs[i].x, refs[i].y) {
					out[i] = st
				} else if lv.ahead.Contains(refs[i].x, refs[i].y) {
					out[i] = absent
				} else {
					stat = append(stat, i)
				}
			}
			continue
		}
		lo, hi := refs[idx[0]].y, refs[idx[0]].y
		for _, i := range idx {
			lo, hi = min(lo, refs[i].y), max(hi, refs[i].y)
		}
		ahead, _ := w.Ahead(c.z)
		rowsAhead := int64(0)
		if ahead.Contains(c.x, lo) {
			rowsAhead = ahead.MaxY - lo + 1
		}
		band, ok := w.listed[c]
		cached := ok && lo >= band.lo && hi <= band.hi
		if cov := w.Subset.CoverageRange(c.z); !cached && (len(idx) < 2 || !ListColumn(max(int64(len(idx)), rowsAhead), cov.MaxY-cov.MinY+1)) {
			stat = append(stat, idx...)
			continue
		}
		if !cached {
			// Keep the rows the owner may still visit in this column, up
			// to listBandRows of them.
			band = &listedColumn{lo: lo, hi: max(hi, lo+min(rowsAhead, listBandRows)-1), tiles: map[int64]storedTile{}}
			prefix := w.Set.LevelDir(c.z) + strconv.FormatInt(c.x, 10) + "/"
			if err := w.Tiles.List(ctx, prefix, func(o tilestore.Object) error {
				if _, _, y, ok := w.Set.ParseKey(o.Key); ok && y >= band.lo && y <= band.hi {
					band.tiles[y] = storedOf(o)
				}
				return nil
			}); err != nil {
				metrics.StoreErrors.Add(ctx, 1, "list")
				return nil, storageErr("list column %s: %w", prefix, err)
			}
			if w.listed == nil || w.listedKeys > listCacheMax {
				w.listed, w.listedKeys = map[column]*listedColumn{}, 0
			}
			w.listed[c] = band
			w.listedKeys += len(band.tiles) + 1
		}
		for _, i := range idx {
			if st, ok := band.tiles[refs[i].y]; ok {
				out[i] = st
			} else {
				out[i] = absent
			}
		}
	}
	if len(stat) > 0 {
		keys := make([]string, len(stat))
		for j, i := range stat {
			keys[j] = refs[i].key
		}
		tiles, err := w.statTiles(ctx, keys)
		if err != nil {
			return nil, err
		}
		for j, i := range stat {
			out[i] = tiles[j]
		}
	}
	return out, nil
}

// listLevel returns the writer's listing of the whole of level z, listing it
// now when that is worth it (see lookup), or nil.
func (w *Writer) listLevel(ctx context.Context, z int) (*listedLevel, error) {
	if lv, ok := w.levels[z]; ok {
		return lv, nil
	}
	ahead, ok := w.Ahead(z)
	if !ok {
		return nil, nil
	}
	cov, whole, _ := LevelListing(w.Subset, z, ahead)
	if !whole {
		return nil, nil
	}
	lv := &listedLevel{ahead: cov, tiles: make(map[[2]int64]storedTile, min(cov.Count(), listLevelMax))}
	// The level's keys in groups by the first digit of their column, each
	// group a listing of its own, listConcurrency at a time: the groups
	// without a column the owner visits are not listed at all.
	dir := w.Set.LevelDir(z)
	// Every listing runs to its end (a plain group), the first failure is
	// the one reported.
	var (
		mu sync.Mutex
		eg errgroup.Group
	)
	eg.SetLimit(listConcurrency)
	for _, g := range digitGroups(w.Subset.CoverageRange(z), cov) {
		eg.Go(func() error {
			found := map[[2]int64]storedTile{}
			err := w.Tiles.List(ctx, dir+g.prefix, func(o tilestore.Object) error {
				if _, x, y, ok := w.Set.ParseKey(o.Key); ok && cov.Contains(x, y) {
					found[[2]int64{x, y}] = storedOf(o)
				}
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(lv.tiles, found)
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		metrics.StoreErrors.Add(ctx, 1, "list")
		return nil, storageErr("list level %s: %w", dir, err)
	}
	if w.levels == nil {
		w.levels = map[int]*listedLevel{}
	}
	w.levels[z] = lv
	return lv, nil
}

// LevelListing decides how a lane that still visits the tiles of level z
// in ahead learns of them: by listing the whole level (whole, in lists
// requests), or else by listing each column of cov, the part of ahead in
// the coverage (at most one request per column and listBandRows rows per
// 1,000 rows of the column; columns where that could cost more than a
// Stat per tile are looked up tile by tile instead, see ListColumn).
func LevelListing(sub *grid.Subset, z int, ahead grid.TileRange) (cov grid.TileRange, whole bool, lists int64) {
	full := sub.CoverageRange(z)
	cov, ok := ahead.Intersect(full)
	if !ok {
		return cov, false, 0
	}
	levelTiles := full.Count()
	columns := columnLists(cov, full)
	if levelTiles > listLevelMax {
		return cov, false, columns
	}
	var levelLists int64
	for _, g := range digitGroups(full, cov) {
		levelLists += max((g.tiles+999)/1000, 1)
	}
	if levelLists < columns {
		return cov, true, levelLists
	}
	return cov, false, columns
}

// columnLists is the most requests a writer makes to learn of the tiles of
// cov, a part of a level's coverage full, column by column: listings of
// each column (every listBandRows rows, each reading the whole column),
// or a Stat per tile where listing is not worth it (see ListColumn).
func columnLists(cov, full grid.TileRange) int64 {
	rows, fullRows := cov.MaxY-cov.MinY+1, full.MaxY-full.MinY+1
	if !ListColumn(rows, fullRows) {
		return cov.Count()
	}
	return (cov.MaxX - cov.MinX + 1) * ((rows + listBandRows - 1) / listBandRows) * max((fullRows+999)/1000, 1)
}

// listConcurrency is how many listings of one level's key groups a writer
// runs at once.
const listConcurrency = 4

// keyGroup is the keys of a level whose column starts with one decimal
// digit: the key prefix (level directory excluded) and the most tiles it
// can hold.
type keyGroup struct {
	prefix string
	tiles  int64
}

// digitGroups splits the columns of full (a level's coverage) by their
// first decimal digit, "0/" for column 0 and "1" to "9" (column 1 and
// 10-19 and 100-199 … share "1"), and returns the groups holding a column
// of cov, with the tiles of full each holds.
func digitGroups(full, cov grid.TileRange) []keyGroup {
	height := full.MaxY - full.MinY + 1
	var out []keyGroup
	if full.MinX == 0 && cov.MinX == 0 {
		out = append(out, keyGroup{"0/", height})
	}
	for d := int64(1); d <= 9; d++ {
		var cols int64
		hit := false
		for p := int64(1); d*p <= full.MaxX; p *= 10 {
			lo, hi := d*p, (d+1)*p-1
			if a, b := max(lo, full.MinX), min(hi, full.MaxX); a <= b {
				cols += b - a + 1
			}
			hit = hit || max(lo, cov.MinX) <= min(hi, cov.MaxX)
		}
		if hit {
			out = append(out, keyGroup{strconv.FormatInt(d, 10), cols * height})
		}
	}
	return out
}

// statTiles learns what is stored of keys, PutConcurrency at a time.
// Every Stat runs (a plain group: one failure cancels none of the others)
// and the first failure is the one reported.
func (w *Writer) statTiles(ctx context.Context, keys []string) ([]storedTile, error) {
	tiles := make([]storedTile, len(keys))
	var g errgroup.Group
	g.SetLimit(w.PutConcurrency)
	for i, k := range keys {
		g.Go(func() error {
			o, found, err := w.Tiles.Stat(ctx, k)
			switch {
			case err != nil:
				return storageErr("check tile %s: %w", k, err)
			case found:
				tiles[i] = storedOf(o)
			default:
				tiles[i] = absent
			}
			return nil
		})
	}
	return tiles, g.Wait()
}
