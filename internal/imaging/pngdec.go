package imaging

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"sync"
)

// errFallback reports a valid PNG feature that decodePNG leaves to
// image/png: bit depths other than 8 (except paletted), grey with alpha,
// tRNS on grey or truecolour, interlacing.
var errFallback = errors.New("imaging: png feature left to image/png")

var errChunkOrder = png.FormatError("chunk out of order")

// Decoder stages, as image/png tracks them to check the chunk order.
const (
	dsStart = iota
	dsSeenIHDR
	dsSeenPLTE
	dsSeentRNS
	dsSeenIDAT
	dsSeenIEND
)

// decodePNG decodes a PNG with the same results as image/png: the same
// image types, pixels and palette, and an error for every file image/png
// rejects (the messages may differ). The common kinds are read here, faster;
// the rest by image/png.
func decodePNG(data []byte) (image.Image, error) {
	img, err := decodePNGFast(data)
	if err == errFallback {
		img, err = png.Decode(bytes.NewReader(data))
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("imaging: decode png: %w", err)
	}
	return img, nil
}

// pngReader is the state of one decodePNGFast.
type pngReader struct {
	data          []byte
	stage         int
	width, height int
	depth         int
	colourType    byte
	palette       color.Palette
	img           image.Image
}

func decodePNGFast(data []byte) (image.Image, error) {
	if len(data) < len(pngSignature) {
		return nil, io.ErrUnexpectedEOF
	}
	if string(data[:len(pngSignature)]) != pngSignature {
		return nil, png.FormatError("not a PNG file")
	}
	d := pngReader{data: data}
	pos := len(pngSignature)
	for d.stage != dsSeenIEND {
		next, err := d.chunk(pos)
		if err != nil {
			if d.img != nil {
				Release(d.img) // its buffer, back to the pool
			}
			return nil, err
		}
		pos = next
	}
	return d.img, nil
}

// chunkAt returns the type and data of the chunk at pos and where the next
// one starts, after checking its length and CRC.
func (d *pngReader) chunkAt(pos int) (typ []byte, body []byte, next int, err error) {
	if len(d.data)-pos < 8 {
		return nil, nil, 0, io.ErrUnexpectedEOF
	}
	n := binary.BigEndian.Uint32(d.data[pos:])
	if n > 0x7fffffff {
		return nil, nil, 0, png.FormatError(fmt.Sprintf("bad chunk length: %d", n))
	}
	if uint64(len(d.data)-pos-8) < uint64(n)+4 {
		return nil, nil, 0, io.ErrUnexpectedEOF
	}
	end := pos + 8 + int(n)
	if crc32.ChecksumIEEE(d.data[pos+4:end]) != binary.BigEndian.Uint32(d.data[end:]) {
		return nil, nil, 0, png.FormatError("invalid checksum")
	}
	return d.data[pos+4 : pos+8], d.data[pos+8 : end], end + 4, nil
}

// chunk handles the chunk at pos, checking the chunk order as image/png
// does, and returns where the next one starts.
func (d *pngReader) chunk(pos int) (int, error) {
	typ, body, next, err := d.chunkAt(pos)
	if err != nil {
		return 0, err
	}
	switch string(typ) {
	case "IHDR":
		if d.stage != dsStart {
			return 0, errChunkOrder
		}
		d.stage = dsSeenIHDR
		return next, d.parseIHDR(body)
	case "PLTE":
		if d.stage != dsSeenIHDR {
			return 0, errChunkOrder
		}
		d.stage = dsSeenPLTE
		return next, d.parsePLTE(body)
	case "tRNS":
		if d.colourType != ctPaletted {
			// Changes the image type of grey and truecolour images:
			// image/png's business (including its order checks).
			if d.stage == dsStart {
				return 0, errChunkOrder
			}
			return 0, errFallback
		}
		if d.stage != dsSeenPLTE {
			return 0, errChunkOrder
		}
		d.stage = dsSeentRNS
		return next, d.parsetRNS(body)
	case "IDAT":
		if d.stage < dsSeenIHDR || d.stage > dsSeenIDAT || (d.stage == dsSeenIHDR && d.colourType == ctPaletted) {
			return 0, errChunkOrder
		}
		if d.stage == dsSeenIDAT {
			return next, nil // trailing IDAT chunks are ignored, as image/png does
		}
		d.stage = dsSeenIDAT
		return d.decodeIDAT(pos)
	case "IEND":
		if d.stage != dsSeenIDAT {
			return 0, errChunkOrder
		}
		if len(body) != 0 {
			return 0, png.FormatError("bad IEND length")
		}
		d.stage = dsSeenIEND
	}
	return next, nil
}

func (d *pngReader) parseIHDR(b []byte) error {
	if len(b) != 13 {
		return png.FormatError("bad IHDR length")
	}
	if b[10] != 0 {
		return png.UnsupportedError("compression method")
	}
	if b[11] != 0 {
		return png.UnsupportedError("filter method")
	}
	if b[12] > 1 {
		return png.FormatError("invalid interlace method")
	}
	w, h := int32(binary.BigEndian.Uint32(b[0:])), int32(binary.BigEndian.Uint32(b[4:]))
	if w <= 0 || h <= 0 {
		return png.FormatError("non-positive dimension")
	}
	if int64(w)*int64(h) > maxPixels {
		return fmt.Errorf("%dx%d image is too large", w, h)
	}
	d.width, d.height, d.depth, d.colourType = int(w), int(h), int(b[8]), b[9]
	valid := false
	switch d.depth {
	case 1, 2, 4:
		valid = d.colourType == ctGray || d.colourType == ctPaletted
	case 8:
		valid = d.colourType <= ctRGBA && d.colourType != 1 && d.colourType != 5
	case 16:
		valid = d.colourType == ctGray || d.colourType == ctRGB || d.colourType == ctGrayAlpha || d.colourType == ctRGBA
	}
	if !valid {
		return png.UnsupportedError(fmt.Sprintf("bit depth %d, color type %d", b[8], b[9]))
	}
	fast := d.colourType == ctPaletted || (d.depth == 8 && d.colourType != ctGrayAlpha)
	if !fast || b[12] != 0 {
		return errFallback
	}
	return nil
}

func (d *pngReader) parsePLTE(b []byte) error {
	np := len(b) / 3
	if len(b)%3 != 0 || np <= 0 || np > 256 || np > 1<<d.depth {
		return png.FormatError("bad PLTE length")
	}
	switch d.colourType {
	case ctPaletted:
		// As image/png: room for 256 entries, the ones past the PLTE
		// chunk opaque black, for out-of-range indices to extend into.
		d.palette = make(color.Palette, 256)
		for i := range d.palette {
			c := color.RGBA{A: 0xff}
			if i < np {
				c.R, c.G, c.B = b[3*i], b[3*i+1], b[3*i+2]
			}
			d.palette[i] = c
		}
		d.palette = d.palette[:np]
	case ctRGB, ctRGBA:
		// A suggested palette: ignored.
	default:
		return png.FormatError("PLTE, color type mismatch")
	}
	return nil
}

func (d *pngReader) parsetRNS(b []byte) error {
	if len(b) > 256 {
		return png.FormatError("bad tRNS length")
	}
	if len(d.palette) < len(b) {
		d.palette = d.palette[:len(b)]
	}
	for i, a := range b {
		c := d.palette[i].(color.RGBA)
		d.palette[i] = color.NRGBA{R: c.R, G: c.G, B: c.B, A: a}
	}
	return nil
}

// decodeState is the pooled scratch space of decodeIDAT.
type decodeState struct {
	inflater
	raw  []byte // the inflated image data: filtered rows
	zero []byte // a row of zeros, the row above the first
}

var decodeStates sync.Pool // of *decodeState

// maxDeflateRatio bounds what a deflate stream can expand to per input
// byte (258-byte matches coded in 2 bits), so a few bytes claiming a huge
// image are rejected before allocating it.
const maxDeflateRatio = 1032

// decodeIDAT decodes the image data of the run of IDAT chunks starting at
// pos and returns where the chunk after the run starts.
func (d *pngReader) decodeIDAT(pos int) (int, error) {
	st, _ := decodeStates.Get().(*decodeState)
	if st == nil {
		st = new(decodeState)
	}
	defer func() {
		if cap(st.raw) > 64<<20 {
			st.raw = nil // keep no buffer of an unusually large image
		}
		decodeStates.Put(st)
	}()

	// Gather the run; a single chunk is used in place. The run is joined
	// in a pooled buffer of the size its chunk headers add up to.
	var z, idat []byte
	if total, n := d.idatRun(pos); n > 1 {
		joined := getPix(total)
		idat = (*joined)[:0]
		defer putPix(joined)
	}
	chunks := 0
	for {
		typ, body, next, err := d.chunkAt(pos)
		if err != nil {
			if chunks > 0 && err == io.ErrUnexpectedEOF {
				break // image/png reports what is missing first
			}
			return 0, err
		}
		if string(typ) != "IDAT" {
			break
		}
		if chunks == 0 {
			z = body
		} else {
			if chunks == 1 {
				idat = append(idat, z...)
			}
			idat = append(idat, body...)
			z = idat
		}
		chunks++
		pos = next
	}

	w, h := d.width, d.height
	bitsPP := d.depth
	switch d.colourType {
	case ctRGB:
		bitsPP = 24
	case ctRGBA:
		bitsPP = 32
	}
	stride := 1 + (bitsPP*w+7)/8 // a filtered row: filter byte, pixels
	need := uint64(h) * uint64(stride)
	if len(z) < 2 || need > uint64(len(z))*maxDeflateRatio+1<<16 {
		return 0, png.FormatError("not enough pixel data")
	}
	if z[0]&0x0f != 8 || z[0]>>4 > 7 || (uint(z[0])<<8|uint(z[1]))%31 != 0 {
		return 0, zlib.ErrHeader
	}
	if z[1]&0x20 != 0 {
		return 0, zlib.ErrDictionary
	}
	// RGB rows are inflated straight into the image's buffer and
	// unfiltered there: the image's rows are the filtered rows without
	// their filter byte, which stays between them. The other types are
	// inflated into scratch space and copied. The pixel buffers come from
	// the pool (see Release); every pixel is written below (inflate fills
	// raw, the copies cover whole rows), so none is stale. On an error
	// decodePNGFast returns the buffer to the pool.
	rect := image.Rect(0, 0, w, h)
	var (
		raw      []byte
		rgb      *RGB
		nrgba    *image.NRGBA
		gray     *image.Gray
		paletted *image.Paletted
	)
	switch d.colourType {
	case ctRGB:
		buf := getPix(int(need) + inflateSlack)
		raw = (*buf)[:need]
		rgb = &RGB{Pix: (*buf)[1:need], Stride: stride, Rect: rect, buf: buf}
		d.img = rgb
	case ctRGBA:
		nrgba = &image.NRGBA{Pix: *getPix(4 * w * h), Stride: 4 * w, Rect: rect}
		d.img = nrgba
	case ctGray:
		gray = &image.Gray{Pix: *getPix(w * h), Stride: w, Rect: rect}
		d.img = gray
	case ctPaletted:
		paletted = &image.Paletted{Pix: *getPix(w * h), Stride: w, Rect: rect, Palette: d.palette}
		d.img = paletted
	}
	if raw == nil {
		if cap(st.raw) < int(need)+inflateSlack {
			st.raw = make([]byte, int(need)+inflateSlack)
		}
		raw = st.raw[:need]
	}
	n, err := st.inflate(raw, z[2:])
	switch err {
	case nil:
	case io.ErrUnexpectedEOF:
		return 0, png.FormatError("not enough pixel data")
	case errTooMuchData:
		return 0, png.FormatError("too much pixel data")
	default:
		return 0, png.FormatError(err.Error())
	}
	// The checksum follows the stream; like libpng (and image/png in most
	// cases) ignore compressed data after it.
	if len(z)-2-n < 4 {
		return 0, png.FormatError("not enough pixel data")
	}
	sum := binary.BigEndian.Uint32(z[2+n:])

	bpp := max(1, bitsPP/8)
	if cap(st.zero) < stride {
		st.zero = make([]byte, stride)
	}
	prv := st.zero[:stride]
	clear(prv)
	adler := uint32(1)
	for y := range h {
		cur := raw[y*stride : (y+1)*stride]
		adler = adlerUpdate(adler, cur) // per row, while it is in cache
		cdat := cur[1:]
		if err := unfilter(cur[0], cdat, prv[1:], bpp); err != nil {
			return 0, err
		}
		switch {
		case rgb != nil:
			// in place
		case nrgba != nil:
			copy(nrgba.Pix[y*nrgba.Stride:], cdat)
		case gray != nil:
			copy(gray.Pix[y*gray.Stride:], cdat)
		case d.depth == 8:
			if len(paletted.Palette) != 256 {
				top := 0
				for _, ix := range cdat {
					top = max(top, int(ix))
				}
				if top >= len(paletted.Palette) {
					paletted.Palette = paletted.Palette[:top+1]
				}
			}
			copy(paletted.Pix[y*paletted.Stride:], cdat)
		default:
			unpackIndices(paletted, y, cdat, d.depth)
		}
		prv = cur
	}
	if adler != sum {
		return 0, zlib.ErrChecksum
	}
	return pos, nil
}

// idatRun returns the total data length and the number of the IDAT
// chunks from pos on, looking at their headers only (decodeIDAT checks
// them): a run that ends in a truncated chunk is counted up to it.
func (d *pngReader) idatRun(pos int) (total, n int) {
	for len(d.data)-pos >= 12 && string(d.data[pos+4:pos+8]) == "IDAT" {
		l := int(binary.BigEndian.Uint32(d.data[pos:]))
		if l > len(d.data)-pos-12 {
			break
		}
		total += l
		n++
		pos += 12 + l
	}
	return total, n
}

// expandRGB writes RGB pixels as opaque RGBA, 4 pixels (12 bytes in, 16
// out) at a time.
func expandRGB(dst, src []byte) {
	n := len(src) / 3
	dst = dst[:4*n]
	opaque := alphaBytes // not a constant: see alphaBytes
	x := 0
	for ; x+4 <= n; x += 4 {
		s := src[3*x : 3*x+12 : 3*x+12]
		d := dst[4*x : 4*x+16 : 4*x+16]
		a := binary.LittleEndian.Uint64(s)
		b := uint64(binary.LittleEndian.Uint32(s[8:]))
		binary.LittleEndian.PutUint64(d, a&0xffffff|(a&0xffffff_000000)<<8|opaque)
		binary.LittleEndian.PutUint64(d[8:], (a>>48|b<<16)&0xffffff|(b&0xffffff00)<<24|opaque)
	}
	for ; x < n; x++ {
		dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = src[3*x], src[3*x+1], src[3*x+2], 0xff
	}
}

// alphaBytes sets the alpha bytes of two RGBA pixels in a uint64. It is a
// variable because when the compiler sees constant bytes in a value, it
// stores them apart: an 8-byte store becomes four smaller ones.
var alphaBytes uint64 = 0xff000000_ff000000

// unpackIndices writes row y of a 1, 2 or 4-bit paletted image, extending
// the palette over out-of-range indices as image/png does.
func unpackIndices(p *image.Paletted, y int, cdat []byte, depth int) {
	w := p.Rect.Dx()
	out := p.Pix[y*p.Stride : y*p.Stride+w]
	perByte := 8 / depth
	mask := byte(1<<depth - 1)
	for x := range out {
		ix := cdat[x/perByte] >> (8 - depth*(x%perByte+1)) & mask
		if int(ix) >= len(p.Palette) {
			p.Palette = p.Palette[:int(ix)+1]
		}
		out[x] = ix
	}
}
