package testpattern

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
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
			got, err := b.png(bg, fg)
			if err != nil {
				t.Fatal(err)
			}
			samePNG(t, got, ref)
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

// samePNG fails unless data is a PNG that image/png reads as a paletted
// image of ref's size, palette and pixels, laid out in chunks as image/png
// writes ref.
func samePNG(t *testing.T, data []byte, ref *image.Paletted) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("image/png cannot read the PNG: %v", err)
	}
	p, ok := img.(*image.Paletted)
	if !ok {
		t.Fatalf("image/png reads a %T, want *image.Paletted", img)
	}
	if p.Rect != ref.Rect || len(p.Palette) != len(ref.Palette) {
		t.Fatalf("%v with %d colours, want %v with %d", p.Rect, len(p.Palette), ref.Rect, len(ref.Palette))
	}
	for i := range p.Palette {
		if color.RGBAModel.Convert(p.Palette[i]) != color.RGBAModel.Convert(ref.Palette[i]) {
			t.Fatalf("colour %d is %v, want %v", i, p.Palette[i], ref.Palette[i])
		}
	}
	for y := ref.Rect.Min.Y; y < ref.Rect.Max.Y; y++ {
		for x := ref.Rect.Min.X; x < ref.Rect.Max.X; x++ {
			if g, w := p.ColorIndexAt(x, y), ref.ColorIndexAt(x, y); g != w {
				t.Fatalf("pixel %d,%d is colour %d, want %d", x, y, g, w)
			}
		}
	}
	var want bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&want, ref); err != nil {
		t.Fatal(err)
	}
	if g, w := chunkTypes(t, data), chunkTypes(t, want.Bytes()); g != w {
		t.Errorf("chunks %s, image/png writes %s", g, w)
	}
}

// chunkTypes lists a PNG's chunk types in order.
func chunkTypes(t *testing.T, data []byte) string {
	t.Helper()
	var types []string
	for rest := data[8:]; len(rest) >= 12; {
		n := int(binary.BigEndian.Uint32(rest))
		if len(rest) < 12+n {
			t.Fatalf("chunk %q of %d bytes overruns the PNG", rest[4:8], n)
		}
		types = append(types, string(rest[4:8]))
		rest = rest[12+n:]
	}
	return strings.Join(types, " ")
}

// TestTileBytesUnchanged: a whole tile is what the plain drawing makes of
// it: in PNG its pixels (see samePNG), in JPEG byte for byte what the
// standard encoder writes.
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
		if format == "image/png" {
			samePNG(t, got, ref)
			continue
		}
		rgba := image.NewRGBA(ref.Rect)
		for y := range 256 {
			for x := range 256 {
				rgba.Set(x, y, ref.At(x, y))
			}
		}
		var want bytes.Buffer
		if err := jpeg.Encode(&want, rgba, &jpeg.Options{Quality: 85}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: the tile differs from the plain drawing's (%d bytes, want %d)", format, len(got), want.Len())
		}
	}
}
