package area

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
)

// The limits of a tile list. A list is read as it arrives: it holds, per
// level, its distinct metatile keys, sorted (8 bytes each), and a batch
// of at most listBatch keys not merged into them yet, whatever its length
// and however often it names a tile; each limit is checked before the
// keys it bounds are kept.
const (
	// DefaultMaxMetatiles bounds the distinct metatiles of a list. Its 8
	// million keys are 64 MB; merging a batch into a level holds that
	// level twice for a moment (the old array and one a quarter longer),
	// and the copy stored beside the job is marshalled from them (1 to 5
	// bytes a key): `tilecache serve` taking a list of 7 million peaked
	// at 226 MB (35 MB of it the idle process), so a list at the limit
	// fits the API function's 512 MB (its GOMEMLIMIT is 448 MiB) and a
	// function of 1 GB comfortably. The limit was 20 million: a list of
	// 18 million peaked at 550 to 610 MB.
	DefaultMaxMetatiles = 8_000_000
	// DefaultMaxLines bounds the lines of a list, blank lines and comments
	// included: each costs its parsing whatever it names, and the expiry
	// lists of a day of the planet's changes are a few million tiles.
	// With the 1 MiB a line may hold, the body's size bounds the rest.
	DefaultMaxLines = 4_000_000
	// DefaultMaxWork bounds the metatiles a list's lines name with their
	// parents and children, duplicates included (a level's range that the
	// range the line before added there holds is not counted again, so
	// sorted lists count their shared parents once). Each is checked
	// against those held, a few nanoseconds for a duplicate: 64 million
	// bound the reading of a list that names the same large areas over
	// and over to a second or so of CPU (BenchmarkReadTileListNearLimit:
	// 63 million near the limit, where each line is counted first).
	DefaultMaxWork = 64_000_000
	// listBatch is the number of keys a list gathers before merging them
	// into its sorted keys: 4 MiB (about 10 MiB allocated in all as it
	// grows; near the limit, a hash set of them too), and a merge per
	// 262,144 keys.
	listBatch = 1 << 18
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
	// MaxMetatiles bounds the distinct metatiles a list may name (0:
	// DefaultMaxMetatiles).
	MaxMetatiles int
	// MaxLines bounds the lines of a list (0: DefaultMaxLines).
	MaxLines int
	// MaxWork bounds the metatiles a list's lines may name with their
	// parents and children, duplicates included (0: DefaultMaxWork).
	MaxWork int64

	// batch replaces listBatch (tests).
	batch int
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
// keeps one key per distinct metatile, not the lines, and refuses (an
// apperr.Invalid naming the line, the limit and what the list reached)
// a line past o's limits before keeping its keys.
func ReadTileList(r io.Reader, g *grid.GridSet, o ListOptions) (*TileList, error) {
	if o.MetaW < 1 || o.MetaH < 1 {
		return nil, fmt.Errorf("metatile size %dx%d", o.MetaW, o.MetaH)
	}
	maxMetas := int64(cmp.Or(max(o.MaxMetatiles, 0), DefaultMaxMetatiles))
	maxLines := cmp.Or(max(o.MaxLines, 0), DefaultMaxLines)
	maxWork := cmp.Or(max(o.MaxWork, 0), DefaultMaxWork)
	l := &TileList{grid: g, mw: int64(o.MetaW), mh: int64(o.MetaH), levels: map[int][]uint64{}}
	s := &listSet{l: l, batch: cmp.Or(max(o.batch, 0), listBatch), last: map[int]grid.TileRange{}}
	var work int64 // metatiles named, duplicates included
	ranges := make([]grid.TileRange, 0, 64)
	metas := make([]grid.TileRange, 0, 64)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if n > maxLines {
			return nil, apperr.Invalidf("tile list line %d: the list has more than %d lines (the limit of a list); split it", n, maxLines)
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		z, x, y, err := parseTileLine(line)
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
		// One range of metatiles per level, each counted unless the
		// range the line before added at its level holds it.
		metas = metas[:0]
		var need int64
		for _, tr := range ranges {
			if cols, rows := g.Size(tr.Z); (cols-1)/l.mw >= 1<<32 || (rows-1)/l.mh >= 1<<32 {
				return nil, apperr.Invalidf("tile list line %d: level %d of grid set %s has more than 2^32 metatile columns or rows, more than a tile list can name", n, tr.Z, g.ID)
			}
			m := grid.TileRange{Z: tr.Z, MinX: tr.MinX / l.mw, MaxX: tr.MaxX / l.mw, MinY: tr.MinY / l.mh, MaxY: tr.MaxY / l.mh}
			if last, ok := s.last[m.Z]; ok && last.ContainsRange(m) {
				continue
			}
			metas = append(metas, m)
			need = satAdd(need, rangeCount(m))
		}
		if need > maxMetas {
			return nil, apperr.Invalidf("tile list line %d: the list names more than %d metatiles (the limit of a list): this line names %d with its parents and children; split it", n, maxMetas, need)
		}
		if work = satAdd(work, need); work > maxWork {
			return nil, apperr.Invalidf("tile list line %d: the list's lines name more than %d metatiles with their parents and children, duplicates included (the limit of a list's work): %d with this line's; split it or drop its duplicates", n, maxWork, work)
		}
		// Near the limit, the line's new metatiles are counted before
		// any is kept.
		fresh := need
		if s.bound()+need > maxMetas {
			held := s.exact()
			if fresh = s.count(metas); held+fresh > maxMetas {
				return nil, apperr.Invalidf("tile list line %d: the list names more than %d metatiles (the limit of a list): %d with this line's tiles, parents and children; split it", n, maxMetas, held+fresh)
			}
		}
		for _, m := range metas {
			if fresh > 0 {
				s.add(m)
			}
			s.last[m.Z] = m
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, apperr.Invalidf("tile list line %d is longer than 1 MiB", n+1)
		}
		return nil, fmt.Errorf("read the tile list: %w", err)
	}
	s.flush()
	if s.held == 0 {
		return nil, apperr.Invalidf("the tile list names no tile")
	}
	l.countLines()
	return l, nil
}

// levelKey is a metatile key of a level.
type levelKey struct {
	z   int
	key uint64
}

// listSet is the distinct metatile keys of a list being read: those of
// l.levels, sorted, and the keys pending, none of them in l.levels but
// some maybe more than once, until there are batch of them and they are
// merged (pending and scratch are reused: the set allocates its batch
// once). Near the list's limit, set is the distinct pending keys, so that
// a line's new keys are counted exactly.
type listSet struct {
	l       *TileList
	held    int64 // keys in l.levels
	pending []levelKey
	scratch []uint64
	batch   int
	set     map[levelKey]struct{}
	// last is, per level, the range of metatiles added last.
	last map[int]grid.TileRange
}

// bound returns at least the number of distinct keys of the set.
func (s *listSet) bound() int64 {
	if s.set != nil {
		return s.held + int64(len(s.set))
	}
	return s.held + int64(len(s.pending))
}

// exact returns the number of distinct keys of the set, making set.
func (s *listSet) exact() int64 {
	if s.set == nil {
		s.set = make(map[levelKey]struct{}, len(s.pending))
		for _, lk := range s.pending {
			s.set[lk] = struct{}{}
		}
	}
	return s.held + int64(len(s.set))
}

// scan calls f with each key of the metatile range m, and whether the
// set holds it (for a pending key: only when set is made). A column's
// keys are found by one binary search and a walk along the keys held in
// it.
func (s *listSet) scan(m grid.TileRange, f func(k uint64, has bool) (merged bool)) {
	for c := m.MinX; c <= m.MaxX; c++ {
		keys := s.l.levels[m.Z]
		i, _ := slices.BinarySearch(keys, uint64(c)<<32|uint64(m.MinY))
		for r := m.MinY; r <= m.MaxY; r++ {
			k := uint64(c)<<32 | uint64(r)
			for i < len(keys) && keys[i] < k {
				i++
			}
			has := i < len(keys) && keys[i] == k
			if !has && s.set != nil {
				_, has = s.set[levelKey{m.Z, k}]
			}
			if f(k, has) { // merged: the level's keys are new
				keys = s.l.levels[m.Z]
				i, _ = slices.BinarySearch(keys, k)
			}
		}
	}
}

// count returns the number of keys of the metatile ranges ms (of
// distinct levels) that the set does not hold; exact must have been
// called.
func (s *listSet) count(ms []grid.TileRange) int64 {
	var n int64
	for _, m := range ms {
		s.scan(m, func(_ uint64, has bool) bool {
			if !has {
				n++
			}
			return false
		})
	}
	return n
}

// add adds the keys of the metatile range m, merging the pending keys
// into the sorted ones whenever they reach the batch.
func (s *listSet) add(m grid.TileRange) {
	s.scan(m, func(k uint64, has bool) bool {
		if has {
			return false
		}
		if len(s.pending) == cap(s.pending) { // doubled up to the batch
			s.pending = append(make([]levelKey, 0, min(max(2*cap(s.pending), 256), s.batch)), s.pending...)
		}
		s.pending = append(s.pending, levelKey{m.Z, k})
		if s.set != nil {
			s.set[levelKey{m.Z, k}] = struct{}{}
		}
		if len(s.pending) < s.batch {
			return false
		}
		s.flush()
		return true
	})
}

// flush merges the pending keys into the sorted keys of their levels:
// grouped by level (a counting sort), then sorted and deduplicated.
func (s *listSet) flush() {
	var start [66]int // per level + 1, where its keys start in scratch
	for _, lk := range s.pending {
		start[lk.z+1]++
	}
	for z := 1; z < len(start); z++ {
		start[z] += start[z-1]
	}
	s.scratch = slices.Grow(s.scratch[:0], len(s.pending))[:len(s.pending)]
	next := start
	for _, lk := range s.pending {
		s.scratch[next[lk.z]] = lk.key
		next[lk.z]++
	}
	for z := range len(start) - 1 {
		if start[z] == start[z+1] {
			continue
		}
		keys := s.scratch[start[z]:start[z+1]]
		slices.Sort(keys)
		keys = slices.Compact(keys)
		s.l.levels[z] = mergeInto(s.l.levels[z], keys)
		s.held += int64(len(keys))
	}
	s.pending, s.set = s.pending[:0], nil
}

// mergeInto returns the keys of a and b, sorted and disjoint, sorted: in
// place when a has room for them, else in a new array a quarter longer
// than a (so that merges of small batches into a large level seldom copy
// it).
func mergeInto(a, b []uint64) []uint64 {
	n := len(a) + len(b)
	if cap(a) < n {
		out := make([]uint64, n, max(n, len(a)+len(a)/4))
		i, j := 0, 0
		for k := range out {
			if j == len(b) || (i < len(a) && a[i] < b[j]) {
				out[k], i = a[i], i+1
			} else {
				out[k], j = b[j], j+1
			}
		}
		return out
	}
	i, j := len(a)-1, len(b)-1
	a = a[:n]
	for k := n - 1; j >= 0; k-- {
		if i >= 0 && a[i] > b[j] {
			a[k], i = a[i], i-1
		} else {
			a[k], j = b[j], j-1
		}
	}
	return a
}

// rangeCount returns the number of metatiles of the metatile range m,
// saturating at math.MaxInt64.
func rangeCount(m grid.TileRange) int64 {
	cols, rows := m.MaxX-m.MinX+1, m.MaxY-m.MinY+1
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

// parseTileLine reads "z/x/y" or "z x y" (each number may be surrounded
// by spaces around the slashes), without allocating unless it fails.
func parseTileLine(s []byte) (z int, x, y int64, err error) {
	var parts [3][]byte
	np := 0
	if bytes.Count(s, []byte{'/'}) == 2 {
		rest := s
		for i := range parts {
			j := bytes.IndexByte(rest, '/')
			if j < 0 {
				j = len(rest)
			}
			parts[i] = bytes.TrimSpace(rest[:j])
			rest = rest[min(j+1, len(rest)):]
		}
		np = 3
	} else {
		for f := range bytes.FieldsSeq(s) {
			if np == len(parts) {
				np++
				break
			}
			parts[np] = f
			np++
		}
	}
	if np != 3 {
		return 0, 0, 0, fmt.Errorf("%q is not z/x/y", s)
	}
	var v [3]int64
	for i, p := range parts {
		var ok bool
		if v[i], ok = parseInt(p); !ok {
			return 0, 0, 0, fmt.Errorf("%q is not z/x/y: %q is not an integer", s, p)
		}
	}
	if v[0] > 64 {
		return 0, 0, 0, fmt.Errorf("zoom level %d is too deep", v[0])
	}
	return int(v[0]), v[1], v[2], nil
}

// parseInt reads a decimal int64 with an optional sign, as
// strconv.ParseInt(string(b), 10, 64) does.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg, b = b[0] == '-', b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // 1<<63 wraps to math.MinInt64
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
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
	// The size is counted first: a list near its limit is tens of
	// megabytes, whose doublings would hold twice that.
	size := len(listMagic) + 4*binary.MaxVarintLen64 + len(l.grid.ID) + 1
	for _, keys := range l.levels {
		size += 2 * binary.MaxVarintLen64
		prev := uint64(0)
		for _, k := range keys {
			size += uvarintLen(k - prev)
			prev = k
		}
	}
	b := make([]byte, 0, size)
	b = append(b, listMagic...)
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

// uvarintLen returns the length of v as a uvarint.
func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

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
