package grid

import "sort"

// Span is a run of tiles along a line, both ends inclusive.
type Span struct{ Lo, Hi int64 }

// Lines are the tiles of an area at one level, line by line along a plan's
// [Order]: numbered [ByRows], line First+k is tile row First+k and its
// spans are runs of columns; numbered [ByColumns], line First+k is tile
// column First+k and its spans are runs of rows. The spans of a line are
// sorted, disjoint and not adjacent (a run is never split in two). Lines
// hold a few numbers per line and per run, nothing per tile.
type Lines struct {
	First int64
	Spans [][]Span
}

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

// line returns the spans of line k, nil when l has no such line.
func (l Lines) line(k int64) []Span {
	i := k - l.First
	if i < 0 || i >= int64(len(l.Spans)) {
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
	spans := l.line(k)
	var n int64
	for i := sort.Search(len(spans), func(i int) bool { return spans[i].Hi >= lo }); i < len(spans) && spans[i].Lo <= hi; i++ {
		n += min(spans[i].Hi, hi) - max(spans[i].Lo, lo) + 1
	}
	return n
}

// Intersect returns the tiles in both a and b.
func Intersect(a, b Lines) Lines {
	first := max(a.First, b.First)
	last := min(a.First+int64(len(a.Spans)), b.First+int64(len(b.Spans))) - 1
	if last < first {
		return Lines{First: first}
	}
	out := Lines{First: first, Spans: make([][]Span, last-first+1)}
	for k := first; k <= last; k++ {
		as, bs := a.line(k), b.line(k)
		var spans []Span
		for i, j := 0, 0; i < len(as) && j < len(bs); {
			lo, hi := max(as[i].Lo, bs[j].Lo), min(as[i].Hi, bs[j].Hi)
			if lo <= hi {
				spans = append(spans, Span{lo, hi})
			}
			if as[i].Hi < bs[j].Hi {
				i++
			} else {
				j++
			}
		}
		out.Spans[k-first] = spans
	}
	return out
}

// MergeSpans sorts spans and merges those that overlap or touch, in place;
// it returns the merged prefix.
func MergeSpans(spans []Span) []Span {
	if len(spans) < 2 {
		return spans
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].Lo < spans[j].Lo })
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

// frame returns the line and the position along it of tile (x, y) in a
// plan numbered by order.
func frame(order Order, x, y int64) (line, pos int64) {
	if order == ByColumns {
		return x, y
	}
	return y, x
}
