package testpattern

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"

	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"tilecache/internal/grid"
	"tilecache/internal/source"
)

// reference draws a tile the plain way, on an *image.Paletted through the
// font's glyph masks, as this source once did, for the bitmap to be held
// to: the same pixels, and with image/png at png.BestSpeed, the same bytes.
func reference(w, h int, bg color.RGBA, lines []string) *image.Paletted {
	img := image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{bg, color.Black})
	for i := range w {
		img.SetColorIndex(i, 0, 1)
		img.SetColorIndex(i, h-1, 1)
	}
	for j := range h {
		img.SetColorIndex(0, j, 1)
		img.SetColorIndex(w-1, j, 1)
	}
	face := basicfont.Face7x13
	for i, l := range lines {
		dot := fixed.P(8, 20+16*i)
		for _, r := range l {
			dr, mask, mp, adv, ok := face.Glyph(dot, r)
			if !ok {
				dr, mask, mp, adv, _ = face.Glyph(dot, '?')
			}
			dr = dr.Intersect(img.Rect)
			for py := dr.Min.Y; py < dr.Max.Y; py++ {
				for px := dr.Min.X; px < dr.Max.X; px++ {
					if mask.(*image.Alpha).AlphaAt(mp.X+px-dr.Min.X, mp.Y+py-dr.Min.Y).A >= 0x80 {
						img.Pix[img.PixOffset(px, py)] = 1
					}
				}
			}
			dot.X += adv
		}
	}
	return img
}

func TestBitmapWritesWhatImagePNGWrites(t *testing.T) {
	bg := color.RGBA{R: 200, G: 150, B: 130, A: 255}
	fg := color.RGBA{A: 255}
	lines := []string{"demo:world", "EPSG:4326", "z=12 x=4095 y=2047", "ünïcödé ☃ and a line far too long to fit in the tile"}
	for _, size := range []image.Point{{256, 256}, {512, 512}, {250, 100}, {13, 9}, {1, 1}, {1024, 70}} {
		t.Run(fmt.Sprintf("%dx%d", size.X, size.Y), func(t *testing.T) {
			ref := reference(size.X, size.Y, bg, lines)
			b := newBitmap(size.X, size.Y)
			b.frame()
			for i, l := range lines {
				b.text(8, 20+16*i, l)
			}
			var want bytes.Buffer
			if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&want, ref); err != nil {
				t.Fatal(err)
			}
			got, err := b.png(bg, fg)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Errorf("PNG: %d bytes, image/png wrote %d; they differ", len(got), want.Len())
			}
			rgba := b.rgba(bg, fg)
			for y := range size.Y {
				for x := range size.X {
					if w, g := color.RGBAModel.Convert(ref.At(x, y)), rgba.RGBAAt(x, y); w != g {
						t.Fatalf("pixel %d,%d of the JPEG input: %v, want %v", x, y, g, w)
					}
				}
			}
		})
	}
}

// TestTileBytesUnchanged: a whole tile, PNG and JPEG, is byte for byte
// what the plain drawing and the standard encoders make of it.
func TestTileBytesUnchanged(t *testing.T) {
	g, _ := grid.Builtin("EPSG:900913")
	src := &Source{}
	for _, format := range []string{"image/png", "image/jpeg"} {
		req := source.Request{Layer: "demo:world", GridSet: g, Z: 5, Format: format, Parameters: map[string]string{"STYLES": "grid"}}
		got, err := src.Tile(req, 17, 9)
		if err != nil {
			t.Fatal(err)
		}
		ref := reference(256, 256, bgOf(Label(req, 17, 9)), Label(req, 17, 9))
		var want bytes.Buffer
		if format == "image/png" {
			err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&want, ref)
		} else {
			rgba := image.NewRGBA(ref.Rect)
			for y := range 256 {
				for x := range 256 {
					rgba.Set(x, y, ref.At(x, y))
				}
			}
			err = jpeg.Encode(&want, rgba, &jpeg.Options{Quality: 85})
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: the tile differs from the plain drawing's (%d bytes, want %d)", format, len(got), want.Len())
		}
	}
}
