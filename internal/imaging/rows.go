package imaging

import (
	"encoding/binary"
	"image"
	"image/color"
)

// maxPixels bounds the images Decode and the encoders accept: 64 Mpixel
// (256 MiB as RGBA) is far beyond any metatile, and a PNG header claiming
// more must not make us allocate it.
const maxPixels = MaxPixels

// MaxPixels is the largest image Decode accepts, in pixels: a layer whose
// metatile (with its gutter) is larger cannot be rendered from a WMS.
const MaxPixels = 1 << 26

// isOpaque reports whether every pixel of img is fully opaque, reading the
// pixel buffers of the common image types directly.
func isOpaque(img image.Image) bool {
	b := img.Bounds()
	switch m := img.(type) {
	case *image.RGBA:
		return alphaOpaque(m.Pix, m.Stride, b.Dx(), b.Dy())
	case *image.NRGBA:
		return alphaOpaque(m.Pix, m.Stride, b.Dx(), b.Dy())
	case *image.Paletted:
		var translucent [256]bool
		some := false
		for i, c := range m.Palette {
			if _, _, _, a := c.RGBA(); a != 0xffff {
				translucent[i], some = true, true
			}
		}
		if !some {
			return true
		}
		for y := range b.Dy() {
			for _, ix := range m.Pix[y*m.Stride : y*m.Stride+b.Dx()] {
				if translucent[ix] {
					return false
				}
			}
		}
		return true
	case *RGB, *image.Gray, *image.Gray16, *image.YCbCr, *image.CMYK:
		return true
	case interface{ Opaque() bool }:
		return m.Opaque()
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if _, _, _, a := img.At(x, y).RGBA(); a != 0xffff {
				return false
			}
		}
	}
	return true
}

// alphaOpaque reports whether every 4th byte (alpha) of w×h 4-byte pixels
// in rows of stride bytes is 0xff, 8 bytes at a time.
func alphaOpaque(pix []byte, stride, w, h int) bool {
	for y := range h {
		row := pix[y*stride : y*stride+4*w]
		acc := ^uint64(0)
		i := 0
		for ; i+32 <= len(row); i += 32 {
			acc &= binary.LittleEndian.Uint64(row[i:]) & binary.LittleEndian.Uint64(row[i+8:]) &
				binary.LittleEndian.Uint64(row[i+16:]) & binary.LittleEndian.Uint64(row[i+24:])
		}
		for ; i+8 <= len(row); i += 8 {
			acc &= binary.LittleEndian.Uint64(row[i:])
		}
		if i < len(row) {
			acc &= uint64(binary.LittleEndian.Uint32(row[i:])) | 0xffffffff00000000
		}
		if acc|0x00ffffff00ffffff != ^uint64(0) {
			return false
		}
	}
	return true
}

// rowSource reads the rows of an image as non-premultiplied RGBA bytes
// (the layout of image.NRGBA's Pix), without a copy when the image already
// is in that layout: *image.NRGBA, and *image.RGBA when opaque; the rows
// of the other common types (*RGB, *image.Paletted, *image.Gray,
// *image.YCbCr) are converted from their pixel buffers.
type rowSource struct {
	img    image.Image
	b      image.Rectangle
	opaque bool     // for *image.RGBA: premultiplied equals non-premultiplied
	lut    []uint32 // for *image.Paletted: palette as NRGBA, 256 entries
	buf    []byte
}

// reset prepares s to read img; opaque tells whether img is opaque.
func (s *rowSource) reset(img image.Image, opaque bool) {
	s.img, s.b, s.opaque = img, img.Bounds(), opaque
	if n := 4 * s.b.Dx(); cap(s.buf) < n {
		s.buf = make([]byte, n)
	} else {
		s.buf = s.buf[:n]
	}
	if p, ok := img.(*image.Paletted); ok {
		if s.lut == nil {
			s.lut = make([]uint32, 256)
		}
		paletteLUT(s.lut, p.Palette)
	}
}

// paletteLUT fills lut with the palette's colours as packed NRGBA
// (R in the low byte); indices past the palette are opaque black, as PNG
// decoders show them.
func paletteLUT(lut []uint32, pal color.Palette) {
	for i := range lut {
		c := color.NRGBA{A: 0xff}
		if i < len(pal) {
			c = color.NRGBAModel.Convert(pal[i]).(color.NRGBA)
		}
		lut[i] = packNRGBA(c)
	}
}

func packNRGBA(c color.NRGBA) uint32 {
	return uint32(c.R) | uint32(c.G)<<8 | uint32(c.B)<<16 | uint32(c.A)<<24
}

// row returns row y (0 = top of the bounds) as NRGBA bytes. The slice is
// only valid until the next call.
func (s *rowSource) row(y int) []byte {
	w := s.b.Dx()
	switch m := s.img.(type) {
	case *image.NRGBA:
		i := y * m.Stride
		return m.Pix[i : i+4*w : i+4*w]
	case *image.RGBA:
		i := y * m.Stride
		src := m.Pix[i : i+4*w : i+4*w]
		if s.opaque {
			return src
		}
		unpremultiply(s.buf, src)
		return s.buf
	case *RGB:
		i := y * m.Stride
		expandRGB(s.buf, m.Pix[i:i+3*w:i+3*w])
		return s.buf
	case *image.Paletted:
		i := y * m.Stride
		dst := s.buf
		for x, ix := range m.Pix[i : i+w] {
			binary.LittleEndian.PutUint32(dst[4*x:], s.lut[ix])
		}
		return dst
	case *image.Gray:
		i := y * m.Stride
		dst := s.buf
		for x, v := range m.Pix[i : i+w] {
			binary.LittleEndian.PutUint32(dst[4*x:], uint32(v)*0x010101|0xff000000)
		}
		return dst
	case *image.YCbCr:
		dst := s.buf
		py := s.b.Min.Y + y
		yi := m.YOffset(s.b.Min.X, py)
		for x := range w {
			ci := m.COffset(s.b.Min.X+x, py)
			r, g, b := color.YCbCrToRGB(m.Y[yi+x], m.Cb[ci], m.Cr[ci])
			binary.LittleEndian.PutUint32(dst[4*x:], uint32(r)|uint32(g)<<8|uint32(b)<<16|0xff000000)
		}
		return dst
	}
	dst := s.buf
	py := s.b.Min.Y + y
	for x := range w {
		c := color.NRGBAModel.Convert(s.img.At(s.b.Min.X+x, py)).(color.NRGBA)
		binary.LittleEndian.PutUint32(dst[4*x:], packNRGBA(c))
	}
	return dst
}

// pixRow returns row y (0 = top of the bounds) for reading pixel x as
// packed NRGBA: binary.LittleEndian.Uint32(row[bpp*x:])&mask | fill. It is
// row(y) with bpp 4, except for an *RGB, whose 3-byte pixels are read in
// place (bpp 3, the 4th byte masked out and alpha filled in) from a row
// with a byte of slack for the last pixel's load. The slice is only valid
// until the next call.
func (s *rowSource) pixRow(y int) (row []byte, bpp int, mask, fill uint32) {
	m, ok := s.img.(*RGB)
	if !ok {
		return s.row(y), 4, 0xffffffff, 0
	}
	i, n := y*m.Stride, 3*s.b.Dx()
	if i+n+1 <= cap(m.Pix) {
		row = m.Pix[i : i+n+1 : i+n+1]
	} else { // the last row of the buffer
		row = s.buf[:n+1]
		copy(row, m.Pix[i:i+n])
	}
	return row, 3, 0xffffff, 0xff000000
}

// unpremultiply converts premultiplied RGBA bytes to NRGBA exactly as
// color.NRGBAModel (and image/png's encoder) does.
func unpremultiply(dst, src []byte) {
	for i := 0; i+4 <= len(src); i += 4 {
		s := src[i : i+4 : i+4]
		d := dst[i : i+4 : i+4]
		switch s[3] {
		case 0xff:
			copy(d, s)
		case 0:
			d[0], d[1], d[2], d[3] = 0, 0, 0, 0
		default:
			const m = 0x101 * 0xffff
			a := uint32(s[3]) * 0x101
			d[0] = uint8((uint32(s[0]) * m / a) >> 8)
			d[1] = uint8((uint32(s[1]) * m / a) >> 8)
			d[2] = uint8((uint32(s[2]) * m / a) >> 8)
			d[3] = s[3]
		}
	}
}
