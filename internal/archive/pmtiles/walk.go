package pmtiles

import (
	"context"
	"errors"
	"fmt"
)

// firstID returns the tile id of the first tile of level z.
func firstID(z int) uint64 { return (uint64(1)<<(2*uint(z)) - 1) / 3 }

// idRange is the tile ids of levels minZ..maxZ: [lo, hi).
func idRange(minZ, maxZ int) (lo, hi uint64) {
	return firstID(max(minZ, 0)), firstID(min(maxZ, 31) + 1)
}

// overlap returns the ids of run [from, from+n) inside [lo, hi): the first
// and how many.
func overlap(from, n, lo, hi uint64) (uint64, uint64) {
	a, b := max(from, lo), min(from+n, hi)
	if a >= b {
		return a, 0
	}
	return a, b - a
}

// Count returns how many tiles the archive addresses at levels
// minZ..maxZ, from its directories (no tile data is read).
func (r *Reader) Count(ctx context.Context, minZ, maxZ int) (int64, error) {
	if minZ <= 0 && maxZ >= 31 && r.header.AddressedTiles > 0 {
		return int64(r.header.AddressedTiles), nil
	}
	lo, hi := idRange(minZ, maxZ)
	var n int64
	err := r.entries(ctx, r.root, 0, lo, hi, func(e Entry) error {
		_, k := overlap(e.TileID, uint64(e.RunLength), lo, hi)
		n += int64(k)
		return nil
	})
	return n, err
}

// Walk calls fn for the tiles of levels minZ..maxZ in tile id order (the
// order of Tiles), after the first skip of them: a walk resumed after
// skip tiles reads the directories it passes over, and no tile data
// before the first tile it gives.
func (r *Reader) Walk(ctx context.Context, minZ, maxZ int, skip int64, fn func(z int, x, y int64, data []byte) error) error {
	lo, hi := idRange(minZ, maxZ)
	s := &span{r: r, shared: map[uint64][]byte{}}
	left := uint64(max(skip, 0))
	return r.entries(ctx, r.root, 0, lo, hi, func(e Entry) error {
		first, k := overlap(e.TileID, uint64(e.RunLength), lo, hi)
		if k <= left {
			left -= k
			return nil
		}
		first, k = first+left, k-left
		left = 0
		b, err := s.read(ctx, e)
		if err != nil {
			return fmt.Errorf("pmtiles: tile data at %d: %w", e.Offset, err)
		}
		for id := first; id < first+k; id++ {
			z, x, y := TileZXY(id)
			if err := fn(z, int64(x), int64(y), b); err != nil {
				return err
			}
		}
		return nil
	})
}

// entries calls fn for every tile entry (RunLength > 0) of dir and its
// leaves, in tile id order, passing over the leaves whose ids all lie
// outside [lo, hi).
func (r *Reader) entries(ctx context.Context, dir []Entry, depth int, lo, hi uint64, fn func(Entry) error) error {
	if depth > 3 {
		return errors.New("pmtiles: directories nested more than 4 deep")
	}
	for i, e := range dir {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.RunLength > 0 {
			if e.TileID+uint64(e.RunLength) <= lo {
				continue
			}
			if e.TileID >= hi {
				return nil
			}
			if err := fn(e); err != nil {
				return err
			}
			continue
		}
		// A leaf holds ids from its TileID up to the next entry's.
		if e.TileID >= hi {
			return nil
		}
		if i+1 < len(dir) && dir[i+1].TileID <= lo {
			continue
		}
		leaf, err := r.leaf(ctx, e)
		if err != nil {
			return err
		}
		if err := r.entries(ctx, leaf, depth+1, lo, hi, fn); err != nil {
			return err
		}
	}
	return nil
}
