package area

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
)

// ListOptions say how to read a list of tiles.
type ListOptions struct {
	// XYZ: rows count from the top of the grid (as osm2pgsql, imposm and
	// web maps write them); else from the bottom, as the store's keys.
	XYZ bool
	// ParentsTo adds, for each listed tile, the tiles holding it at every
	// level from ParentsTo up to its own; −1: none.
	ParentsTo int
	// ChildrenTo adds the tiles it holds at every level below its own down
	// to ChildrenTo; −1: none.
	ChildrenTo int
	// MetaW and MetaH are the layer's metatile size: a list names the
	// metatiles holding its tiles.
	MetaW, MetaH int
	// MaxMetatiles bounds the metatiles a list may name (0: 20,000,000).
	MaxMetatiles int
}

// TileList is the metatiles holding the tiles of a list, by level: every
// tile of each is the list's (see [TileList.Lines]). It is immutable and
// safe for concurrent use.
type TileList struct {
	grid   *grid.GridSet
	mw, mh int64
	levels map[int][]uint64 // per level, sorted metatile keys: column<<32 | row
	lines  map[int][2]int64 // per level, the metatile rows and columns holding keys
}

// ReadTileList reads lines "z/x/y" (also "z x y"; blank lines and lines
// starting with '#' are skipped) of tiles of grid set g, streaming: it
// keeps one key per metatile, not the lines. Errors name the line.
func ReadTileList(r io.Reader, g *grid.GridSet, o ListOptions) (*TileList, error) {
	if o.MetaW < 1 || o.MetaH < 1 {
		return nil, fmt.Errorf("metatile size %dx%d", o.MetaW, o.MetaH)
	}
	maxMetas := o.MaxMetatiles
	if maxMetas <= 0 {
		maxMetas = 20_000_000
	}
	l := &TileList{grid: g, mw: int64(o.MetaW), mh: int64(o.MetaH), levels: map[int][]uint64{}}
	count := 0 // keys held, duplicates included
	// reserve checks, before any key is appended, that n more keys keep
	// the list within its cap: duplicates are compacted away first when
	// they would take the keys held past twice the cap, so that memory
	// stays bounded by the cap whatever the list's ranges.
	reserve := func(line int, n int64) error {
		tooMany := func() error {
			return apperr.Invalidf("tile list line %d: the list names more than %d metatiles (the limit of a list) with this line's tiles, parents and children; split it", line, maxMetas)
		}
		if n > int64(maxMetas) {
			return tooMany()
		}
		if int64(count)+n > 2*int64(maxMetas) {
			if count = l.compact(); int64(count)+n > 2*int64(maxMetas) {
				return tooMany()
			}
		}
		return nil
	}
	add := func(z int, tr grid.TileRange) {
		for my := tr.MinY / l.mh; my <= tr.MaxY/l.mh; my++ {
			for mx := tr.MinX / l.mw; mx <= tr.MaxX/l.mw; mx++ {
				l.levels[z] = append(l.levels[z], uint64(mx)<<32|uint64(my))
			}
		}
		count += int(l.metatiles(tr))
	}
	ranges := make([]grid.TileRange, 0, 64)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		z, x, y, err := parseTileLine(string(line))
		if err != nil {
			return nil, apperr.Invalidf("tile list line %d: %v", n, err)
		}
		if z < 0 || z >= g.Levels() {
			return nil, apperr.Invalidf("tile list line %d: zoom level %d is not a level of grid set %s (0 to %d)", n, z, g.ID, g.Levels()-1)
		}
		cols, rows := g.Size(z)
		if x < 0 || x >= cols || y < 0 || y >= rows {
			return nil, apperr.Invalidf("tile list line %d: tile %d/%d/%d is outside grid set %s (%d columns, %d rows at level %d)", n, z, x, y, g.ID, cols, rows, z)
		}
		if o.XYZ {
			y = rows - 1 - y
		}
		// The tile, its parents and its children: the tiles of other
		// levels its square meets (shrunk a hair so that neighbours
		// sharing an edge are not taken), whatever the grid's
		// resolutions. Their metatiles are counted before any is kept.
		ranges = append(ranges[:0], grid.TileRange{Z: z, MinX: x, MinY: y, MaxX: x, MaxY: y})
		e := shrink(g.TileExtent(z, x, y))
		if o.ParentsTo >= 0 {
			for pz := max(o.ParentsTo, 0); pz < z; pz++ {
				ranges = append(ranges, levelRange(g, e, pz))
			}
		}
		if o.ChildrenTo >= 0 {
			for cz := z + 1; cz <= min(o.ChildrenTo, g.Levels()-1); cz++ {
				ranges = append(ranges, levelRange(g, e, cz))
			}
		}
		var need int64
		for _, tr := range ranges {
			if cols, rows := g.Size(tr.Z); (cols-1)/l.mw >= 1<<32 || (rows-1)/l.mh >= 1<<32 {
				return nil, apperr.Invalidf("tile list line %d: level %d of grid set %s has more than 2^32 metatile columns or rows, more than a tile list can name", n, tr.Z, g.ID)
			}
			need = satAdd(need, l.metatiles(tr))
		}
		if err := reserve(n, need); err != nil {
			return nil, err
		}
		for _, tr := range ranges {
			add(tr.Z, tr)
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, apperr.Invalidf("tile list line %d is longer than 1 MiB", n+1)
		}
		return nil, fmt.Errorf("read the tile list: %w", err)
	}
	switch n := l.compact(); {
	case n == 0:
		return nil, apperr.Invalidf("the tile list names no tile")
	case n > maxMetas:
		return nil, apperr.Invalidf("the tile list names %d metatiles, more than %d (the limit of a list); split it", n, maxMetas)
	}
	l.countLines()
	return l, nil
}

// metatiles returns the number of metatiles holding the tiles of tr,
// saturating at math.MaxInt64.
func (l *TileList) metatiles(tr grid.TileRange) int64 {
	cols := tr.MaxX/l.mw - tr.MinX/l.mw + 1
	rows := tr.MaxY/l.mh - tr.MinY/l.mh + 1
	if cols <= 0 || rows <= 0 {
		return 0
	}
	if cols > math.MaxInt64/rows {
		return math.MaxInt64
	}
	return cols * rows
}

// satAdd returns a + b for non-negative a and b, saturating at
// math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// parseTileLine reads "z/x/y" or "z x y".
func parseTileLine(s string) (z int, x, y int64, err error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		parts = strings.Fields(s)
	}
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("%q is not z/x/y", s)
	}
	var v [3]int64
	for i, p := range parts {
		if v[i], err = strconv.ParseInt(strings.TrimSpace(p), 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("%q is not z/x/y: %q is not an integer", s, p)
		}
	}
	if v[0] > 64 {
		return 0, 0, 0, fmt.Errorf("zoom level %d is too deep", v[0])
	}
	return int(v[0]), v[1], v[2], nil
}

func shrink(e grid.Extent) grid.Extent {
	dx, dy := e.Width()*1e-6, e.Height()*1e-6
	return grid.Extent{MinX: e.MinX + dx, MinY: e.MinY + dy, MaxX: e.MaxX - dx, MaxY: e.MaxY - dy}
}

// levelRange returns the tiles of level z that e meets, within the grid.
func levelRange(g *grid.GridSet, e grid.Extent, z int) grid.TileRange {
	o := g.TileExtent(z, 0, 0)
	w, h := g.Span(z)
	cols, rows := g.Size(z)
	clamp := func(v, hi int64) int64 { return max(0, min(v, hi)) }
	return grid.TileRange{Z: z,
		MinX: clamp(int64((e.MinX-o.MinX)/w), cols-1), MaxX: clamp(int64((e.MaxX-o.MinX)/w), cols-1),
		MinY: clamp(int64((e.MinY-o.MinY)/h), rows-1), MaxY: clamp(int64((e.MaxY-o.MinY)/h), rows-1),
	}
}

// compact sorts and deduplicates every level's keys and returns their
// number.
func (l *TileList) compact() int {
	n := 0
	for z, keys := range l.levels {
		slices.Sort(keys)
		keys = slices.Compact(keys)
		l.levels[z] = slices.Clip(keys)
		n += len(keys)
	}
	return n
}

// countLines counts, per level, the metatile rows and columns holding
// the list's (sorted) keys.
func (l *TileList) countLines() {
	l.lines = make(map[int][2]int64, len(l.levels))
	var rows []uint32
	for z, keys := range l.levels {
		var cols int64
		rows = rows[:0]
		for i, k := range keys {
			if i == 0 || k>>32 != keys[i-1]>>32 {
				cols++
			}
			rows = append(rows, uint32(k))
		}
		slices.Sort(rows)
		l.lines[z] = [2]int64{int64(len(slices.Compact(rows))), cols}
	}
}

// LinesBound implements grid.LinesBounder: the tile lines of the list's
// metatile lines of level z.
func (l *TileList) LinesBound(z int, order grid.Order, _ grid.TileRange) (int64, error) {
	if order == grid.ByColumns {
		return l.lines[z][1] * l.mw, nil
	}
	return l.lines[z][0] * l.mh, nil
}

// Zooms returns the lowest and highest level of the list.
func (l *TileList) Zooms() (lo, hi int) {
	lo, hi = 1<<30, -1
	for z := range l.levels {
		lo, hi = min(lo, z), max(hi, z)
	}
	return lo, hi
}

// Range returns the smallest range of tiles of level z holding the
// list's metatiles there; ok is false when it has none.
func (l *TileList) Range(z int) (r grid.TileRange, ok bool) {
	keys := l.levels[z]
	if len(keys) == 0 {
		return grid.TileRange{}, false
	}
	cols, rows := l.grid.Size(z)
	r = grid.TileRange{Z: z, MinX: cols, MinY: rows, MaxX: -1, MaxY: -1}
	for _, k := range keys {
		mx, my := int64(k>>32), int64(k&0xffffffff)
		r.MinX, r.MaxX = min(r.MinX, mx*l.mw), max(r.MaxX, min(mx*l.mw+l.mw-1, cols-1))
		r.MinY, r.MaxY = min(r.MinY, my*l.mh), max(r.MaxY, min(my*l.mh+l.mh-1, rows-1))
	}
	return r, true
}

// Metatiles returns the number of metatiles the list names.
func (l *TileList) Metatiles() int {
	n := 0
	for _, keys := range l.levels {
		n += len(keys)
	}
	return n
}

// Bound returns the box around the list's metatiles at levels zs to ze,
// in the grid set's CRS; ok is false when it has none there.
func (l *TileList) Bound(zs, ze int) (b grid.Extent, ok bool) {
	for z := range l.levels {
		r, has := l.Range(z)
		if z < zs || z > ze || !has {
			continue
		}
		e := l.grid.RangeExtent(r)
		if !ok {
			b, ok = e, true
			continue
		}
		b = grid.Extent{MinX: min(b.MinX, e.MinX), MinY: min(b.MinY, e.MinY), MaxX: max(b.MaxX, e.MaxX), MaxY: max(b.MaxY, e.MaxY)}
	}
	return b, ok
}

// Lines implements grid.Area: every tile inside r of the list's
// metatiles of level z. The lines of one metatile row (or column) share
// their spans.
func (l *TileList) Lines(z int, order grid.Order, r grid.TileRange) (grid.Lines, error) {
	first, last, lo, hi := r.MinY, r.MaxY, r.MinX, r.MaxX
	mu, mv := l.mh, l.mw
	line := func(k uint64) (int64, int64) { return int64(k & 0xffffffff), int64(k >> 32) } // metatile row, column
	if order == grid.ByColumns {
		first, last, lo, hi = r.MinX, r.MaxX, r.MinY, r.MaxY
		mu, mv = l.mw, l.mh
		line = func(k uint64) (int64, int64) { return int64(k >> 32), int64(k & 0xffffffff) }
	}
	// Lines are made only for the list's own range of the level.
	if lr, ok := l.Range(z); ok {
		lf, ll := lr.MinY, lr.MaxY
		if order == grid.ByColumns {
			lf, ll = lr.MinX, lr.MaxX
		}
		first, last = max(first, lf), min(last, ll)
	} else {
		last = first - 1
	}
	n, _ := l.LinesBound(z, order, r)
	out := grid.Lines{K: make([]int64, 0, n), Spans: make([][]grid.Span, 0, n)}
	keys := slices.Clone(l.levels[z])
	if order == grid.ByRows {
		slices.SortFunc(keys, func(a, b uint64) int {
			if c := compare(a&0xffffffff, b&0xffffffff); c != 0 {
				return c
			}
			return compare(a>>32, b>>32)
		})
	}
	for i := 0; i < len(keys); {
		ml, _ := line(keys[i])
		var spans []grid.Span
		for ; i < len(keys); i++ {
			kl, kv := line(keys[i])
			if kl != ml {
				break
			}
			s := grid.Span{Lo: max(kv*mv, lo), Hi: min(kv*mv+mv-1, hi)}
			if s.Lo > s.Hi {
				continue
			}
			if n := len(spans); n > 0 && spans[n-1].Hi+1 >= s.Lo {
				spans[n-1].Hi = max(spans[n-1].Hi, s.Hi)
				continue
			}
			spans = append(spans, s)
		}
		for u := max(ml*mu, first); u <= min(ml*mu+mu-1, last); u++ {
			out.Add(u, spans)
		}
	}
	return out, nil
}

func compare(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// listMagic starts a marshalled tile list.
const listMagic = "TCTL1\n"

// Marshal encodes the list: per level, its metatile keys delta-encoded
// as varints.
func (l *TileList) Marshal() []byte {
	b := []byte(listMagic)
	b = binary.AppendUvarint(b, uint64(l.grid.Levels()))
	b = append(b, l.grid.ID...)
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(l.mw))
	b = binary.AppendUvarint(b, uint64(l.mh))
	zs := make([]int, 0, len(l.levels))
	for z := range l.levels {
		zs = append(zs, z)
	}
	slices.Sort(zs)
	b = binary.AppendUvarint(b, uint64(len(zs)))
	for _, z := range zs {
		keys := l.levels[z]
		b = binary.AppendUvarint(b, uint64(z))
		b = binary.AppendUvarint(b, uint64(len(keys)))
		prev := uint64(0)
		for _, k := range keys {
			b = binary.AppendUvarint(b, k-prev)
			prev = k
		}
	}
	return b
}

// IsTileList reports whether data is a marshalled tile list.
func IsTileList(data []byte) bool { return bytes.HasPrefix(data, []byte(listMagic)) }

// UnmarshalTileList reads a list Marshal wrote for grid set g.
func UnmarshalTileList(data []byte, g *grid.GridSet) (*TileList, error) {
	if !IsTileList(data) {
		return nil, fmt.Errorf("decode tile list: not a tile list")
	}
	b := data[len(listMagic):]
	bad := fmt.Errorf("decode tile list: truncated or corrupt")
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	if _, ok := next(); !ok {
		return nil, bad
	}
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, bad
	}
	if id := string(b[:i]); id != g.ID {
		return nil, fmt.Errorf("decode tile list: made for grid set %s, not %s", id, g.ID)
	}
	b = b[i+1:]
	mw, ok1 := next()
	mh, ok2 := next()
	levels, ok3 := next()
	if !ok1 || !ok2 || !ok3 || mw < 1 || mh < 1 || mw > 64 || mh > 64 || levels > 64 {
		return nil, bad
	}
	l := &TileList{grid: g, mw: int64(mw), mh: int64(mh), levels: map[int][]uint64{}}
	for range levels {
		z, ok1 := next()
		n, ok2 := next()
		if !ok1 || !ok2 || z > 64 || n > uint64(len(b)) {
			return nil, bad
		}
		if int(z) >= g.Levels() {
			return nil, bad
		}
		cols, rows := g.Size(int(z))
		keys := make([]uint64, n)
		prev := uint64(0)
		for j := range keys {
			d, ok := next()
			if !ok || (j > 0 && d == 0) {
				return nil, bad
			}
			prev += d
			if mx, my := int64(prev>>32), int64(prev&0xffffffff); mx*l.mw >= cols || my*l.mh >= rows {
				return nil, bad
			}
			keys[j] = prev
		}
		l.levels[int(z)] = keys
	}
	l.countLines()
	return l, nil
}

// GridSetID returns the id of the list's grid set.
func (l *TileList) GridSetID() string { return l.grid.ID }
