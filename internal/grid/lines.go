package grid

import (
	"cmp"
	"slices"
	"sort"
)

// Span is a run of tiles along a line, both ends inclusive.
type Span struct{ Lo, Hi int64 }

// Lines are the tiles of an area at one level, line by line along a plan's
// [Order]: numbered [ByRows], line K[i] is a tile row and Spans[i] are runs
// of columns; numbered [ByColumns], line K[i] is a tile column and
// Spans[i] are runs of rows. Only lines holding tiles are kept, in
// increasing order, so that an area's lines take memory in proportion to
// what it holds, not to the distance between its first and last line.
// The spans of a line are sorted, disjoint and not adjacent (a run is
// never split in two). Lines hold a few numbers per line and per run,
// nothing per tile; lines may share their spans.
type Lines struct {
	K     []int64
	Spans [][]Span
}

// Add appends line k with spans, unless spans is empty. Lines are added
// in increasing order: k must be greater than every line added before.
func (l *Lines) Add(k int64, spans []Span) {
	if len(spans) == 0 {
		return
	}
	if n := len(l.K); n > 0 && l.K[n-1] >= k {
		panic("grid: Lines.Add out of order")
	}
	l.K = append(l.K, k)
	l.Spans = append(l.Spans, spans)
}

// Len returns the number of lines holding tiles.
func (l Lines) Len() int { return len(l.K) }

// Count returns the number of tiles in l.
func (l Lines) Count() int64 {
	var n int64
	for _, spans := range l.Spans {
		for _, s := range spans {
			n += s.Hi - s.Lo + 1
		}
	}
	return n
}

// line returns the spans of line k, nil when l has no tile there.
func (l Lines) line(k int64) []Span {
	i, found := slices.BinarySearch(l.K, k)
	if !found {
		return nil
	}
	return l.Spans[i]
}

// Has reports whether position pos of line k is in l.
func (l Lines) Has(k, pos int64) bool {
	spans := l.line(k)
	i := sort.Search(len(spans), func(i int) bool { return spans[i].Hi >= pos })
	return i < len(spans) && spans[i].Lo <= pos
}

// countIn returns the tiles of line k at positions lo to hi.
func (l Lines) countIn(k, lo, hi int64) int64 {
	if hi < lo {
		return 0
	}
	return countSpans(l.line(k), lo, hi)
}

// countSpans returns the tiles of spans at positions lo to hi.
func countSpans(spans []Span, lo, hi int64) int64 {
	var n int64
	for i := sort.Search(len(spans), func(i int) bool { return spans[i].Hi >= lo }); i < len(spans) && spans[i].Lo <= hi; i++ {
		n += min(spans[i].Hi, hi) - max(spans[i].Lo, lo) + 1
	}
	return n
}

// Intersect returns the tiles in both a and b.
func Intersect(a, b Lines) Lines {
	var out Lines
	for i, j := 0, 0; i < len(a.K) && j < len(b.K); {
		switch {
		case a.K[i] < b.K[j]:
			i++
			continue
		case a.K[i] > b.K[j]:
			j++
			continue
		}
		as, bs := a.Spans[i], b.Spans[j]
		var spans []Span
		for p, q := 0, 0; p < len(as) && q < len(bs); {
			lo, hi := max(as[p].Lo, bs[q].Lo), min(as[p].Hi, bs[q].Hi)
			if lo <= hi {
				spans = append(spans, Span{lo, hi})
			}
			if as[p].Hi < bs[q].Hi {
				p++
			} else {
				q++
			}
		}
		out.Add(a.K[i], spans)
		i, j = i+1, j+1
	}
	return out
}

// MergeSpans sorts spans and merges those that overlap or touch, in place;
// it returns the merged prefix.
func MergeSpans(spans []Span) []Span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b Span) int { return cmp.Compare(a.Lo, b.Lo) })
	out := spans[:1]
	for _, s := range spans[1:] {
		last := &out[len(out)-1]
		if s.Lo <= last.Hi+1 {
			last.Hi = max(last.Hi, s.Hi)
			continue
		}
		out = append(out, s)
	}
	return out
}

// An Area restricts a plan to some of the tiles of its levels (see
// [NewPlanArea]): the tiles a geometry meets, say, or the metatiles of a
// list of tiles.
type Area interface {
	// Lines returns the area's tiles of level z inside r, along the lines
	// of order.
	Lines(z int, order Order, r TileRange) (Lines, error)
}

// A LinesBounder is an [Area] that tells, without making them, at most
// how many lines holding tiles its Lines(z, order, r) returns, or the
// error Lines would return for a level too large for it, so that a plan
// refuses an area too large before doing any of the work.
type LinesBounder interface {
	LinesBound(z int, order Order, r TileRange) (int64, error)
}

// frame returns the line and the position along it of tile (x, y) in a
// plan numbered by order.
func frame(order Order, x, y int64) (line, pos int64) {
	if order == ByColumns {
		return x, y
	}
	return y, x
}
