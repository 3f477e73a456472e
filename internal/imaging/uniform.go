package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
)

// Uniform reports whether every pixel of img (which may be a SubImage) has
// the same colour, and that colour (the colour of the top-left pixel, in
// img's colour model; color.NRGBA{} for fully transparent pixels of an
// *image.NRGBA). Colours are compared as image.Image shows them: fully
// transparent NRGBA pixels are equal whatever their RGB, and palette entries
// of the same colour are equal. An empty image gives nil, false.
//
// *RGB, *image.RGBA, *image.NRGBA, *image.Paletted, *image.Gray and
// *image.YCbCr are read from their pixel buffers, stopping at the first
// difference.
func Uniform(img image.Image) (color.Color, bool) {
	b := img.Bounds()
	if b.Empty() {
		return nil, false
	}
	w, h := b.Dx(), b.Dy()
	switch m := img.(type) {
	case *image.RGBA:
		if uniform32(m.Pix, m.Stride, w, h, false) {
			return m.RGBAAt(b.Min.X, b.Min.Y), true
		}
		return nil, false
	case *image.NRGBA:
		if uniform32(m.Pix, m.Stride, w, h, true) {
			c := m.NRGBAAt(b.Min.X, b.Min.Y)
			if c.A == 0 {
				c = color.NRGBA{}
			}
			return c, true
		}
		return nil, false
	case *RGB:
		if uniform24(m.Pix, m.Stride, w, h) {
			return m.RGBAAt(b.Min.X, b.Min.Y), true
		}
		return nil, false
	case *image.Gray:
		if uniform8(m.Pix, m.Stride, w, h) {
			return m.GrayAt(b.Min.X, b.Min.Y), true
		}
		return nil, false
	case *image.Paletted:
		return uniformPaletted(m)
	case *image.YCbCr:
		if uniformYCbCr(m) {
			return m.YCbCrAt(b.Min.X, b.Min.Y), true
		}
		// Different samples can still give the same RGB: compare colours.
	}
	return uniformAny(img)
}

// uniform32 reports whether the w×h 4-byte pixels in rows of stride bytes
// are all equal; with alpha0 also when all those that differ are fully
// transparent (alpha, the 4th byte, 0).
func uniform32(pix []byte, stride, w, h int, alpha0 bool) bool {
	first := binary.LittleEndian.Uint32(pix)
	if alpha0 && first>>24 == 0 {
		// All must be transparent: check the alpha bytes only.
		for y := range h {
			row := pix[y*stride : y*stride+4*w]
			for i := 3; i < len(row); i += 4 {
				if row[i] != 0 {
					return false
				}
			}
		}
		return true
	}
	pat := uint64(first) | uint64(first)<<32
	for y := range h {
		row := pix[y*stride : y*stride+4*w]
		i := 0
		for ; i+8 <= len(row); i += 8 {
			if binary.LittleEndian.Uint64(row[i:]) != pat {
				return false
			}
		}
		if i < len(row) && binary.LittleEndian.Uint32(row[i:]) != first {
			return false
		}
	}
	return true
}

// uniform24 reports whether the w×h 3-byte pixels in rows of stride bytes
// are all equal.
func uniform24(pix []byte, stride, w, h int) bool {
	first := pix[:3:3]
	for y := range h {
		row := pix[y*stride : y*stride+3*w]
		// Equal to the row shifted by one pixel: all pixels are equal.
		if !bytes.Equal(row[:3], first) || !bytes.Equal(row[3:], row[:len(row)-3]) {
			return false
		}
	}
	return true
}

// uniform8 reports whether the w×h bytes in rows of stride are all equal.
func uniform8(pix []byte, stride, w, h int) bool {
	first := pix[0]
	for y := range h {
		row := pix[y*stride : y*stride+w]
		// Compare with the row shifted by one: equal only if all bytes are.
		if row[0] != first || !bytes.Equal(row[1:], row[:len(row)-1]) {
			return false
		}
	}
	return true
}

// uniformPaletted compares palette indices, then the colours of the
// indices that differ (a palette may hold a colour twice).
func uniformPaletted(m *image.Paletted) (color.Color, bool) {
	b := m.Rect
	w, h := b.Dx(), b.Dy()
	first := m.Pix[0]
	if uniform8(m.Pix, m.Stride, w, h) {
		return m.At(b.Min.X, b.Min.Y), true
	}
	var same [256]bool // palette entries with the colour of the first pixel
	colourOf := func(ix byte) (r, g, b, a uint32, ok bool) {
		if int(ix) >= len(m.Palette) {
			return 0, 0, 0, 0, false
		}
		r, g, b, a = m.Palette[ix].RGBA()
		return r, g, b, a, true
	}
	r0, g0, b0, a0, ok := colourOf(first)
	if !ok {
		return nil, false
	}
	for i := range m.Palette[:min(len(m.Palette), 256)] {
		r, g, b, a, _ := colourOf(byte(i))
		same[i] = r == r0 && g == g0 && b == b0 && a == a0
	}
	for y := range h {
		for _, ix := range m.Pix[y*m.Stride : y*m.Stride+w] {
			if !same[ix] {
				return nil, false
			}
		}
	}
	return m.At(b.Min.X, b.Min.Y), true
}

// uniformYCbCr reports whether the Y, Cb and Cr samples of m are each
// all equal.
func uniformYCbCr(m *image.YCbCr) bool {
	b := m.Rect
	if !uniform8(m.Y[m.YOffset(b.Min.X, b.Min.Y):], m.YStride, b.Dx(), b.Dy()) {
		return false
	}
	// The chroma samples that cover the rectangle.
	c0, c1 := m.COffset(b.Min.X, b.Min.Y), m.COffset(b.Max.X-1, b.Max.Y-1)
	cw := (c1-c0)%m.CStride + 1
	ch := (c1-c0)/m.CStride + 1
	return uniform8(m.Cb[c0:], m.CStride, cw, ch) && uniform8(m.Cr[c0:], m.CStride, cw, ch)
}

// uniformAny compares the 16-bit premultiplied colours of all pixels.
func uniformAny(img image.Image) (color.Color, bool) {
	b := img.Bounds()
	c0 := img.At(b.Min.X, b.Min.Y)
	r0, g0, b0, a0 := c0.RGBA()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			if r != r0 || g != g0 || bl != b0 || a != a0 {
				return nil, false
			}
		}
	}
	return c0, true
}
