package imaging

import (
	"image"
	"image/color"
)

// RGB is an in-memory image of opaque 8-bit RGB pixels: 3 bytes per pixel,
// R, G, B, in rows of Stride bytes. Decode returns it for 8-bit truecolour
// PNGs without transparency (what a WMS answers for an opaque image/png),
// so that no byte is spent on alpha between decoding and encoding.
//
// Like image.RGBA, the pixel at (x, y) starts at
// Pix[(y-Rect.Min.Y)*Stride+(x-Rect.Min.X)*3], and a SubImage shares the
// pixels. Stride may be larger than 3*Rect.Dx() even for a whole image:
// Decode leaves a byte of its own between the rows.
type RGB struct {
	Pix    []uint8
	Stride int
	Rect   image.Rectangle

	buf *[]byte // the pooled buffer holding Pix, for Release; nil if none
}

// NewRGB returns a new RGB image with the given bounds, all black.
func NewRGB(r image.Rectangle) *RGB {
	w, h := r.Dx(), r.Dy()
	return &RGB{Pix: make([]uint8, 3*w*h), Stride: 3 * w, Rect: r}
}

// ColorModel is color.RGBAModel: the pixels are opaque, so premultiplied
// and non-premultiplied are the same.
func (p *RGB) ColorModel() color.Model { return color.RGBAModel }

func (p *RGB) Bounds() image.Rectangle { return p.Rect }

func (p *RGB) At(x, y int) color.Color { return p.RGBAAt(x, y) }

// RGBAAt returns the opaque colour of the pixel at (x, y), the zero colour
// outside the bounds.
func (p *RGB) RGBAAt(x, y int) color.RGBA {
	if !(image.Point{x, y}.In(p.Rect)) {
		return color.RGBA{}
	}
	i := p.PixOffset(x, y)
	s := p.Pix[i : i+3 : i+3]
	return color.RGBA{s[0], s[1], s[2], 0xff}
}

// PixOffset returns the index of the first element of Pix that corresponds
// to the pixel at (x, y).
func (p *RGB) PixOffset(x, y int) int {
	return (y-p.Rect.Min.Y)*p.Stride + (x-p.Rect.Min.X)*3
}

// SubImage returns the part of p visible through r, sharing p's pixels.
func (p *RGB) SubImage(r image.Rectangle) image.Image {
	r = r.Intersect(p.Rect)
	if r.Empty() {
		return &RGB{}
	}
	i := p.PixOffset(r.Min.X, r.Min.Y)
	return &RGB{Pix: p.Pix[i:], Stride: p.Stride, Rect: r}
}

// Opaque is true: every pixel is opaque.
func (p *RGB) Opaque() bool { return true }
