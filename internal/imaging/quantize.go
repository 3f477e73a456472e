package imaging

import (
	"encoding/binary"
	"slices"
)

// quantizer finds the palette of a png8 tile and maps its pixels to it.
//
// First it collects the exact colours (fully transparent pixels all count
// as one colour): with at most 256 the palette is exact and the tile
// lossless. Otherwise it builds a histogram over bins of 5 bits per colour
// channel and 17 alpha classes (transparent, 16 levels of translucent, and
// opaque kept apart so opaque pixels stay exactly opaque), cuts the colour
// space of the bins into at most 256 boxes (median cut, splitting the box
// with the largest squared error at the weighted median of its widest
// channel), makes each box's pixel-weighted mean colour a palette entry,
// and maps every pixel through a lookup table from bin to entry.
type quantizer struct {
	// Exact colours: an open-addressing table of up to 256 colours.
	keys   [1024]uint32
	slot   [1024]int16 // index into colours, -1 if free
	colors []uint32

	// Histogram: bin index+1 of each bin key that occurs (0: none), and
	// then, after the cut, the palette index of each.
	bins  []int32
	ents  []qent
	order []int32 // entry indices, grouped by box
	tmp   []int32
	boxes []qbox

	pix    []byte   // the palette index of each pixel
	pal    []uint32 // packed NRGBA palette
	sorted []uint32 // scratch of encodePaletted
}

// qent is a histogram bin.
type qent struct {
	key   uint32
	n     uint32
	sum   [4]uint32 // R, G, B, A sums
	mean  [4]uint8
	index uint8 // palette index after the cut
}

// qbox is a box of the median cut: entries order[lo:hi].
type qbox struct {
	lo, hi int
	n      uint64
	sse    float64 // total squared error of the box's pixels from its mean
	axis   int     // channel with the largest squared error
}

const (
	qBinBits = 15             // 5 bits for each of R, G, B
	qBins    = 18 << qBinBits // key 0 transparent, 1..17 alpha classes
)

// binKey is the histogram bin of a packed NRGBA colour.
func binKey(c uint32) uint32 {
	a := c >> 24
	if a == 0 {
		return 0
	}
	class := a >> 4 // 0..15 for translucent alpha
	if a == 0xff {
		class = 16
	}
	return (class+1)<<qBinBits | (c>>3&0x1f)<<10 | (c>>11&0x1f)<<5 | (c >> 19 & 0x1f)
}

// normalize makes every fully transparent colour the same.
func normalize(c uint32) uint32 {
	if c>>24 == 0 {
		return 0
	}
	return c
}

// quantize returns the palette index of each pixel (w per row) and the
// palette of the w×h image src reads.
func (q *quantizer) quantize(src *rowSource, w, h int) (pix []byte, pal []uint32) {
	if cap(q.pix) < w*h {
		q.pix = make([]byte, w*h)
	}
	q.pix = q.pix[:w*h]
	if q.exact(src, w, h) {
		return q.pix, q.colors
	}
	q.histogram(src, w, h)
	q.cut()
	// Map the pixels through the bins, now holding palette indices.
	for y := range h {
		row, bpp, mask, fill := src.pixRow(y)
		out := q.pix[y*w : y*w+w]
		prev, prevIx := ^normalize(binary.LittleEndian.Uint32(row)&mask|fill), byte(0)
		for x := range out {
			c := normalize(binary.LittleEndian.Uint32(row[bpp*x:])&mask | fill)
			if c != prev {
				prev, prevIx = c, byte(q.bins[binKey(c)])
			}
			out[x] = prevIx
		}
	}
	for i := range q.ents {
		q.bins[q.ents[i].key] = 0
	}
	return q.pix, q.pal
}

// exact maps the pixels to a palette of their exact colours and reports
// whether there were at most 256.
func (q *quantizer) exact(src *rowSource, w, h int) bool {
	for i := range q.slot {
		q.slot[i] = -1
	}
	q.colors = q.colors[:0]
	prev, prevIx := uint32(0), byte(0)
	started := false
	for y := range h {
		row, bpp, mask, fill := src.pixRow(y)
		out := q.pix[y*w : y*w+w]
		for x := range out {
			c := normalize(binary.LittleEndian.Uint32(row[bpp*x:])&mask | fill)
			if c == prev && started {
				out[x] = prevIx
				continue
			}
			started = true
			hs := (c * 0x9e3779b1) >> 22 // 10 bits
			for {
				s := q.slot[hs]
				if s < 0 {
					if len(q.colors) == 256 {
						return false
					}
					q.keys[hs], q.slot[hs] = c, int16(len(q.colors))
					q.colors = append(q.colors, c)
					prevIx = byte(len(q.colors) - 1)
					break
				}
				if q.keys[hs] == c {
					prevIx = byte(s)
					break
				}
				hs = (hs + 1) & 1023
			}
			prev = c
			out[x] = prevIx
		}
	}
	return true
}

// histogram counts the pixels per bin.
func (q *quantizer) histogram(src *rowSource, w, h int) {
	if q.bins == nil {
		q.bins = make([]int32, qBins)
	}
	q.ents = q.ents[:0]
	for y := range h {
		row, bpp, mask, fill := src.pixRow(y)
		var e *qent
		prev := uint32(0)
		for x := range w {
			c := normalize(binary.LittleEndian.Uint32(row[bpp*x:])&mask | fill)
			if e == nil || c != prev {
				k := binKey(c)
				i := q.bins[k]
				if i == 0 {
					q.ents = append(q.ents, qent{key: k})
					i = int32(len(q.ents))
					q.bins[k] = i
				}
				e, prev = &q.ents[i-1], c
			}
			e.n++
			e.sum[0] += c & 0xff
			e.sum[1] += c >> 8 & 0xff
			e.sum[2] += c >> 16 & 0xff
			e.sum[3] += c >> 24
		}
	}
	for i := range q.ents {
		e := &q.ents[i]
		for ch := range 4 {
			e.mean[ch] = uint8((e.sum[ch] + e.n/2) / e.n)
		}
	}
}

// cut builds the palette from the histogram and stores each bin's palette
// index in q.bins.
func (q *quantizer) cut() {
	q.pal = q.pal[:0]
	q.order = q.order[:0]
	// Opaque bins first, then translucent ones, each group a box of its
	// own: no box mixes them, so opaque pixels stay exactly opaque.
	nOpaque := 0
	for i, e := range q.ents {
		if e.key>>qBinBits == 17 {
			q.order = append(q.order, int32(i))
			nOpaque++
		}
	}
	for i, e := range q.ents {
		switch {
		case e.key == 0: // fully transparent: an entry of its own
			q.ents[i].index = uint8(len(q.pal))
			q.pal = append(q.pal, 0)
		case e.key>>qBinBits != 17:
			q.order = append(q.order, int32(i))
		}
	}
	if cap(q.tmp) < len(q.order) {
		q.tmp = make([]int32, len(q.order))
	}
	q.tmp = q.tmp[:len(q.order)]
	q.boxes = q.boxes[:0]
	if nOpaque > 0 {
		q.boxes = append(q.boxes, q.box(0, nOpaque))
	}
	if nOpaque < len(q.order) {
		q.boxes = append(q.boxes, q.box(nOpaque, len(q.order)))
	}
	for room := 256 - len(q.pal); len(q.boxes) < room; {
		// Split the box with the largest squared error.
		best := -1
		for i, b := range q.boxes {
			if b.hi-b.lo >= 2 && b.sse > 0 && (best < 0 || b.sse > q.boxes[best].sse) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		b := q.boxes[best]
		mid := q.split(b)
		q.boxes[best] = q.box(b.lo, mid)
		q.boxes = append(q.boxes, q.box(mid, b.hi))
	}
	// A palette entry per box: the mean colour of its pixels.
	first := len(q.pal)
	for _, b := range q.boxes {
		ix := uint8(len(q.pal))
		q.pal = append(q.pal, 0)
		for _, i := range q.order[b.lo:b.hi] {
			q.ents[i].index = ix
		}
	}
	q.means(first)
	// Box membership is not nearness: a bin at the edge of a long box can
	// be far from its mean. Map every bin to the nearest entry of its
	// group and make the entries the means of what maps to them (one step
	// of k-means: it can only lower the error).
	q.nearest(first)
	q.means(first)
	for _, e := range q.ents {
		q.bins[e.key] = int32(e.index)
	}
}

// means sets the palette entries from first on to the pixel-weighted mean
// colour of the bins mapped to them (entries nothing maps to stay).
func (q *quantizer) means(first int) {
	var sum [256][4]uint64
	var n [256]uint64
	for _, i := range q.order {
		e := &q.ents[i]
		n[e.index] += uint64(e.n)
		for ch := range 4 {
			sum[e.index][ch] += uint64(e.sum[ch])
		}
	}
	for ix := first; ix < len(q.pal); ix++ {
		if n[ix] == 0 {
			continue
		}
		var c uint32
		for ch := range 4 {
			c |= uint32((sum[ix][ch]+n[ix]/2)/n[ix]) << (8 * ch)
		}
		q.pal[ix] = c
	}
}

// nearest maps each bin to the palette entry from first on, in its group
// (opaque or translucent), nearest to the bin's mean colour in squared
// RGBA distance. The entries are searched in order of their green channel
// outwards from the bin's green, stopping when the green distance alone
// exceeds the best match: a handful of candidates per bin.
func (q *quantizer) nearest(first int) {
	type cand struct {
		g  int32
		ix uint8
		c  [4]int32
	}
	var groups [2][]cand // opaque, translucent
	for ix := first; ix < len(q.pal); ix++ {
		p := q.pal[ix]
		c := cand{g: int32(p >> 8 & 0xff), ix: uint8(ix), c: [4]int32{int32(p & 0xff), int32(p >> 8 & 0xff), int32(p >> 16 & 0xff), int32(p >> 24)}}
		k := 1
		if p>>24 == 0xff {
			k = 0
		}
		groups[k] = append(groups[k], c)
	}
	for k := range groups {
		slices.SortFunc(groups[k], func(a, b cand) int { return int(a.g - b.g) })
	}
	for _, i := range q.order {
		e := &q.ents[i]
		g := groups[1]
		if e.key>>qBinBits == 17 {
			g = groups[0]
		}
		m := [4]int32{int32(e.mean[0]), int32(e.mean[1]), int32(e.mean[2]), int32(e.mean[3])}
		dist := func(c *cand) int32 {
			d0, d1, d2, d3 := c.c[0]-m[0], c.c[1]-m[1], c.c[2]-m[2], c.c[3]-m[3]
			return d0*d0 + d1*d1 + d2*d2 + d3*d3
		}
		pos, _ := slices.BinarySearchFunc(g, m[1], func(c cand, v int32) int { return int(c.g - v) })
		best, bestIx := int32(1<<30), e.index
		for lo, hi := pos-1, pos; lo >= 0 || hi < len(g); {
			if hi < len(g) {
				if dg := g[hi].g - m[1]; dg*dg >= best {
					hi = len(g)
				} else {
					if d := dist(&g[hi]); d < best {
						best, bestIx = d, g[hi].ix
					}
					hi++
				}
			}
			if lo >= 0 {
				if dg := m[1] - g[lo].g; dg*dg >= best {
					lo = -1
				} else {
					if d := dist(&g[lo]); d < best {
						best, bestIx = d, g[lo].ix
					}
					lo--
				}
			}
		}
		e.index = bestIx
	}
}

// box computes the statistics of the box of entries order[lo:hi].
func (q *quantizer) box(lo, hi int) qbox {
	b := qbox{lo: lo, hi: hi}
	var s, s2 [4]float64
	for _, i := range q.order[lo:hi] {
		e := &q.ents[i]
		n := float64(e.n)
		b.n += uint64(e.n)
		for ch := range 4 {
			v := float64(e.mean[ch])
			s[ch] += n * v
			s2[ch] += n * v * v
		}
	}
	if b.n == 0 {
		return b
	}
	best := -1.0
	for ch := range 4 {
		sse := s2[ch] - s[ch]*s[ch]/float64(b.n)
		b.sse += sse
		if sse > best {
			best, b.axis = sse, ch
		}
	}
	return b
}

// split sorts the entries of b along its axis (a counting sort on the
// 8-bit channel) and returns where to cut: at the weighted median, keeping
// both halves non-empty.
func (q *quantizer) split(b qbox) int {
	var count [257]int
	ents := q.order[b.lo:b.hi]
	for _, i := range ents {
		count[int(q.ents[i].mean[b.axis])+1]++
	}
	for v := 1; v < len(count); v++ {
		count[v] += count[v-1]
	}
	tmp := q.tmp[:len(ents)]
	for _, i := range ents {
		v := q.ents[i].mean[b.axis]
		tmp[count[v]] = i
		count[v]++
	}
	copy(ents, tmp)
	// k: the entry holding the weighted median.
	k, acc := 0, uint64(0)
	for ; k < len(ents)-1; k++ {
		acc += uint64(q.ents[ents[k]].n)
		if 2*acc >= b.n {
			break
		}
	}
	// Cut at the boundary between distinct values nearest after k, or
	// else nearest before it; the axis has the largest spread of a box
	// with some, so there is one.
	val := func(m int) uint8 { return q.ents[ents[m]].mean[b.axis] }
	fwd := k + 1
	for fwd < len(ents) && val(fwd) == val(fwd-1) {
		fwd++
	}
	if fwd < len(ents) {
		return b.lo + fwd
	}
	back := k
	for back > 1 && val(back) == val(back-1) {
		back--
	}
	return b.lo + max(back, 1)
}
