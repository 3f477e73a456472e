package imaging

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"sync"

	"github.com/klauspost/compress/flate"
)

const pngSignature = "\x89PNG\r\n\x1a\n"

// PNG colour types.
const (
	ctGray      = 0
	ctRGB       = 2
	ctPaletted  = 3
	ctGrayAlpha = 4
	ctRGBA      = 6
)

// PNG row filters.
const (
	ftNone    = 0
	ftSub     = 1
	ftUp      = 2
	ftAverage = 3
	ftPaeth   = 4
)

// pngEncoder writes truecolour (png, png24) or paletted (png8) PNGs.
type pngEncoder struct {
	level    int
	paletted bool
	states   sync.Pool // of *pngState
}

func newPNGEncoder(level int, paletted bool) *pngEncoder {
	return &pngEncoder{level: level, paletted: paletted}
}

// pngState is the scratch space of one Encode: a deflater and buffers,
// pooled so that encoding a tile allocates only the returned slice.
type pngState struct {
	fw  *flate.Writer
	out sliceWriter
	row []byte
	src rowSource
	q   *quantizer

	idatStart int    // offset of the IDAT chunk in out
	adler     uint32 // of the image data written so far
	werr      error  // first error of the deflater
}

// sliceWriter appends what is written to it.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (e *pngEncoder) ContentType() string { return "image/png" }

// Encode implements Encoder.
func (e *pngEncoder) Encode(img image.Image) ([]byte, error) {
	b := img.Bounds()
	if b.Empty() {
		return nil, errors.New("imaging: encode png: empty image")
	}
	if int64(b.Dx())*int64(b.Dy()) > maxPixels {
		return nil, fmt.Errorf("imaging: encode png: %dx%d image is too large", b.Dx(), b.Dy())
	}
	st, _ := e.states.Get().(*pngState)
	if st == nil {
		fw, err := flate.NewWriter(nil, e.level)
		if err != nil {
			return nil, fmt.Errorf("imaging: encode png: %w", err)
		}
		st = &pngState{fw: fw}
	}
	buf := getBuf()
	st.out.b = *buf
	var err error
	if e.paletted {
		err = st.encodePaletted(img, e.level)
	} else {
		err = st.encodeTrueColour(img, e.level)
	}
	var out []byte
	if err == nil {
		out = make([]byte, len(st.out.b))
		copy(out, st.out.b)
	}
	*buf, st.out.b = st.out.b, nil
	putBuf(buf)
	st.src.img = nil // keep no reference to the caller's image
	e.states.Put(st)
	if err != nil {
		return nil, fmt.Errorf("imaging: encode png: %w", err)
	}
	return out, nil
}

// chunk appends a PNG chunk.
func (st *pngState) chunk(typ string, data []byte) {
	st.out.b = AppendPNGChunk(st.out.b, typ, data)
}

// AppendPNGChunk appends a PNG chunk of type typ holding data to b: its
// length, type, data and CRC.
func AppendPNGChunk(b []byte, typ string, data []byte) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start+4:]))
}

// header appends the signature and the IHDR chunk.
func (st *pngState) header(w, h int, depth, colourType byte) {
	st.out.b = append(st.out.b, pngSignature...)
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = depth, colourType // compression, filter, interlace: 0
	st.chunk("IHDR", ihdr[:])
}

// beginIDAT starts the IDAT chunk holding the image data as one zlib
// stream; feed it the filtered rows (filter byte first) with writeRow, then
// call endIDAT, which also appends IEND.
func (st *pngState) beginIDAT(level int) {
	st.idatStart = len(st.out.b)
	st.out.b = append(st.out.b, 0, 0, 0, 0, 'I', 'D', 'A', 'T')
	// zlib header: deflate with a 32 KiB window, FLEVEL from the level,
	// no dictionary, FCHECK making the pair a multiple of 31.
	flevel := byte(0)
	switch {
	case level >= 7:
		flevel = 3
	case level == 6:
		flevel = 2
	case level >= 2:
		flevel = 1
	}
	cmf, flg := byte(0x78), flevel<<6
	flg |= byte(31 - (uint(cmf)<<8|uint(flg))%31)
	st.out.b = append(st.out.b, cmf, flg)
	st.fw.Reset(&st.out)
	st.adler, st.werr = 1, nil
}

func (st *pngState) writeRow(row []byte) {
	st.adler = adlerUpdate(st.adler, row)
	if _, err := st.fw.Write(row); err != nil && st.werr == nil {
		st.werr = err
	}
}

func (st *pngState) endIDAT() error {
	if st.werr != nil {
		return st.werr
	}
	if err := st.fw.Close(); err != nil {
		return err
	}
	st.out.b = binary.BigEndian.AppendUint32(st.out.b, st.adler)
	n := len(st.out.b) - st.idatStart - 8
	if n > 0x7fffffff {
		return errors.New("image data too large for one IDAT chunk")
	}
	binary.BigEndian.PutUint32(st.out.b[st.idatStart:], uint32(n))
	st.out.b = binary.BigEndian.AppendUint32(st.out.b, crc32.ChecksumIEEE(st.out.b[st.idatStart+4:]))
	st.chunk("IEND", nil)
	return nil
}

// rowBuf returns the row buffer with room for n bytes plus slack for the
// 4-byte stores of packRGB.
func (st *pngState) rowBuf(n int) []byte {
	if cap(st.row) < n+4 {
		st.row = make([]byte, n+4)
	}
	return st.row[:n+4]
}

// encodeTrueColour writes img as 8-bit RGB when it is opaque, RGBA
// otherwise.
func (st *pngState) encodeTrueColour(img image.Image, level int) error {
	if m, ok := img.(*RGB); ok {
		return st.encodeRGB(m, level)
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	opaque := isOpaque(img)
	bpp, ct := 4, byte(ctRGBA)
	if opaque {
		bpp, ct = 3, ctRGB
	}
	st.header(w, h, 8, ct)
	st.beginIDAT(level)
	st.src.reset(img, opaque)
	n := w * bpp
	// The row as written, and this row's and the previous row's pixels
	// (packRGB needs a byte of slack).
	buf := st.rowBuf(1 + 3*(n+1))
	row, cur, prev := buf[:1+n], buf[1+n:2+2*n], buf[2+2*n:3+3*n]
	for y := range h {
		px := st.src.row(y)
		var same int
		if opaque {
			same = packRGB(cur, px)
		} else {
			same = copyRGBA(cur, px)
		}
		row[0] = filterRow(row[1:], cur[:n], prev[:n], y > 0, chooseFilter(same, w), bpp)
		st.writeRow(row)
		cur, prev = prev, cur
	}
	return st.endIDAT()
}

// filterRow writes the pixels cur (prev: the row above, when above is
// true) to dst filtered as chooseFilter's choice ft asks: unfiltered, or
// with Up, or with Sub in the first row. Up and Sub serve the same rows,
// those of continuous tone; on shaded relief and imagery Up makes tiles
// 11-14% smaller at zlib level 1 and costs no more CPU (measured on the
// GetMaps of the peers' and the test WMS's world maps, 192 tiles each).
func filterRow(dst, cur, prev []byte, above bool, ft byte, bpp int) byte {
	switch {
	case ft == ftNone:
		copy(dst, cur)
	case above:
		upFilter(dst, cur, prev)
		return ftUp
	default:
		copy(dst, cur)
		subFilter(dst, bpp)
	}
	return ft
}

// encodeRGB writes an *RGB as 8-bit RGB, its rows as they are.
func (st *pngState) encodeRGB(m *RGB, level int) error {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	n := 3 * w
	st.header(w, h, 8, ctRGB)
	st.beginIDAT(level)
	row := st.rowBuf(1 + n)[:1+n]
	var prev []byte
	for y := range h {
		px := m.Pix[y*m.Stride : y*m.Stride+n : y*m.Stride+n]
		row[0] = filterRow(row[1:], px, prev, y > 0, chooseFilter(sameRGB(px), w), 3)
		st.writeRow(row)
		prev = px
	}
	return st.endIDAT()
}

// flatMin is the fewest pixels of a row of w equal to their left neighbour
// for chooseFilter to leave the row unfiltered: 5/8 of them.
func flatMin(w int) int { return (5*(w-1) + 7) / 8 }

// sameRGB returns how many of the 3-byte pixels of p equal their left
// neighbour, or, once fewer than flatMin could, a count below it (a row
// of continuous tone is known after about 3/8 of its pixels). It compares
// four pixels per step: an 8-byte load at pixel x XORed with one at pixel
// x-1 has the differences of x in its low 3 bytes and of x+1 in the next
// 3; a 3-byte difference d is 0 when d-1 wraps.
func sameRGB(p []byte) int {
	n := len(p) / 3
	same := 0
	// Below this many, past pixel x, the row cannot reach flatMin.
	need := flatMin(n) - n
	i := 3 // pixel x starts at i = 3x
	for ; i+14 <= len(p) && i+12 <= 3*n; i += 12 {
		if same-i/3 < need {
			return same
		}
		q := p[i-3 : i+14 : i+14] // pixels x-1 to x+3, and 2 bytes more
		d1 := binary.LittleEndian.Uint64(q[3:]) ^ binary.LittleEndian.Uint64(q)
		d2 := binary.LittleEndian.Uint64(q[9:]) ^ binary.LittleEndian.Uint64(q[6:])
		same += int((d1&0xffffff-1)>>63 + (d1>>24&0xffffff-1)>>63 + (d2&0xffffff-1)>>63 + (d2>>24&0xffffff-1)>>63)
	}
	for ; i+3 <= 3*n; i += 3 {
		if p[i] == p[i-3] && p[i+1] == p[i-2] && p[i+2] == p[i-1] {
			same++
		}
	}
	return same
}

// chooseFilter picks whether a row is filtered from the number of pixels
// of a row of w that equal their left neighbour: ftNone, or ftSub for a
// filtered row (filterRow makes it Up below the first row). Measured on
// map-like tiles at zlib level 1 (see the tile size benchmarks): rows of
// flat areas, lines and labels compress best unfiltered (Sub makes them
// 15-20% larger), while rows of shaded relief, imagery and gradients gain
// with a filter (Paeth does no better than Up at level 1, costs more to
// compute and costs more to decode in a browser). Flat rows have most
// pixels equal to their neighbour; continuous-tone rows hardly any, so the
// rule is unfiltered when at least 5/8 of the pixels repeat their left
// neighbour. sameRGB stops counting once that cannot happen.
func chooseFilter(same, w int) byte {
	if same >= flatMin(w) {
		return ftNone
	}
	return ftSub
}

// packRGB writes the RGB bytes of the NRGBA pixels src to dst (which needs
// one byte of slack past 3 bytes per pixel) and returns how many pixels
// equal their left neighbour.
func packRGB(dst, src []byte) int {
	same := 0
	prev := ^binary.LittleEndian.Uint32(src) // differs from the first pixel
	n := len(src) / 4
	_ = dst[3*n]
	for x := range n {
		v := binary.LittleEndian.Uint32(src[4*x:])
		same += sameBit(v, prev)
		prev = v
		binary.LittleEndian.PutUint32(dst[3*x:], v)
	}
	return same
}

// copyRGBA copies NRGBA pixels and returns how many equal their left
// neighbour.
func copyRGBA(dst, src []byte) int {
	same := 0
	prev := ^binary.LittleEndian.Uint32(src)
	n := len(src) / 4
	_ = dst[4*n-1]
	for x := range n {
		v := binary.LittleEndian.Uint32(src[4*x:])
		same += sameBit(v, prev)
		prev = v
		binary.LittleEndian.PutUint32(dst[4*x:], v)
	}
	return same
}

// sameBit is 1 if a == b, else 0, without a branch (equality is
// unpredictable on noisy rows).
func sameBit(a, b uint32) int {
	x := uint64(a ^ b)
	return int(1 ^ (x|-x)>>63)
}

// subBytes subtracts the 8 bytes of y from those of x, each byte on its
// own (no borrow crosses into the next byte).
func subBytes(x, y uint64) uint64 {
	const h = 0x8080808080808080
	return ((x | h) - (y &^ h)) ^ ((x ^ ^y) & h)
}

// upFilter writes cur minus prev (the row above), byte by byte, to dst, 8
// bytes at a time.
func upFilter(dst, cur, prev []byte) {
	n := len(cur)
	dst, prev = dst[:n], prev[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		x := binary.LittleEndian.Uint64(cur[i:])
		y := binary.LittleEndian.Uint64(prev[i:])
		binary.LittleEndian.PutUint64(dst[i:], subBytes(x, y))
	}
	for ; i < n; i++ {
		dst[i] = cur[i] - prev[i]
	}
}

// subFilter applies the Sub filter in place: each byte minus the byte bpp
// before it, going backwards so the left neighbours are still unfiltered.
// It subtracts 8 bytes at a time (subBytes).
func subFilter(p []byte, bpp int) {
	i := len(p) - 8
	for ; i >= bpp; i -= 8 {
		x := binary.LittleEndian.Uint64(p[i:])
		y := binary.LittleEndian.Uint64(p[i-bpp:])
		binary.LittleEndian.PutUint64(p[i:], subBytes(x, y))
	}
	for j := i + 7; j >= bpp; j-- {
		p[j] -= p[j-bpp]
	}
}

// encodePaletted writes img as a paletted PNG: its own palette for an
// *image.Paletted, else the exact colours when there are at most 256 and a
// quantised palette otherwise. Non-opaque palette entries come first so the
// tRNS chunk is as short as it can be; the bit depth is the smallest that
// holds the palette.
func (st *pngState) encodePaletted(img image.Image, level int) error {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if st.q == nil {
		st.q = new(quantizer)
	}
	q := st.q
	var pix []byte // w*h palette indices
	var stride int
	var pal []uint32 // packed NRGBA
	if p, ok := img.(*image.Paletted); ok {
		if len(p.Palette) == 0 {
			return errors.New("paletted image without a palette")
		}
		pix, stride = p.Pix, p.Stride
		maxIx := 0
		for y := range h {
			for _, ix := range p.Pix[y*stride : y*stride+w] {
				maxIx = max(maxIx, int(ix))
			}
		}
		pal = q.pal[:0]
		for i := range max(len(p.Palette), maxIx+1) {
			c := color.NRGBA{A: 0xff} // what decoders show for indices past the palette
			if i < len(p.Palette) {
				c = color.NRGBAModel.Convert(p.Palette[i]).(color.NRGBA)
			}
			pal = append(pal, packNRGBA(c))
		}
		pal = pal[:min(len(pal), 256)]
	} else {
		st.src.reset(img, isOpaque(img))
		pix, pal = q.quantize(&st.src, w, h)
		stride = w
	}
	// Order the palette: non-opaque entries first.
	var remap [256]byte
	sorted := q.sorted[:0]
	for _, opaquePass := range []bool{false, true} {
		for i, c := range pal {
			if (c>>24 == 0xff) == opaquePass {
				remap[i] = byte(len(sorted))
				sorted = append(sorted, c)
			}
		}
	}
	q.sorted = sorted
	depth := 8
	switch {
	case len(sorted) <= 2:
		depth = 1
	case len(sorted) <= 4:
		depth = 2
	case len(sorted) <= 16:
		depth = 4
	}
	st.header(w, h, byte(depth), ctPaletted)
	var plte [3 * 256]byte
	var trns [256]byte
	nt := 0
	for i, c := range sorted {
		plte[3*i], plte[3*i+1], plte[3*i+2] = byte(c), byte(c>>8), byte(c>>16)
		if c>>24 != 0xff {
			trns[i] = byte(c >> 24)
			nt = i + 1
		}
	}
	st.chunk("PLTE", plte[:3*len(sorted)])
	if nt > 0 {
		st.chunk("tRNS", trns[:nt])
	}
	st.beginIDAT(level)
	rowLen := 1 + (w*depth+7)/8
	row := st.rowBuf(rowLen)[:rowLen]
	identity := true
	for i := range pal {
		identity = identity && remap[i] == byte(i)
	}
	for y := range h {
		src := pix[y*stride : y*stride+w]
		row[0] = ftNone // paletted rows compress best unfiltered
		if depth == 8 {
			if identity {
				copy(row[1:], src)
			} else {
				for x, ix := range src {
					row[1+x] = remap[ix]
				}
			}
		} else {
			packBits(row[1:], src, &remap, depth)
		}
		st.writeRow(row)
	}
	return st.endIDAT()
}

// packBits packs remapped indices at depth 1, 2 or 4 bits, most significant
// bits first.
func packBits(dst, src []byte, remap *[256]byte, depth int) {
	perByte := 8 / depth
	clear(dst)
	for x, ix := range src {
		shift := 8 - depth*(x%perByte+1)
		dst[x/perByte] |= remap[ix] << shift
	}
}
