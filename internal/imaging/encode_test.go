package imaging

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"math"
	"strings"
	"sync"
	"testing"
)

// nrgbaAt is a pixel as non-premultiplied 8-bit RGBA, the way a PNG holds
// it; fully transparent pixels are all the same.
func nrgbaAt(img image.Image, x, y int) color.NRGBA {
	c := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
	if c.A == 0 {
		return color.NRGBA{}
	}
	return c
}

// decodeStd decodes with image/png and checks the colour type and depth in
// the header.
func decodeStd(t *testing.T, data []byte, wantColourType, wantDepth byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("image/png cannot decode the output: %v", err)
	}
	if ct, depth := data[25], data[24]; ct != wantColourType || depth != wantDepth {
		t.Errorf("colour type %d depth %d, want %d and %d", ct, depth, wantColourType, wantDepth)
	}
	return img
}

// channelErrors returns the mean and the largest absolute difference per
// channel between src and the decoded got (at the origin).
func channelErrors(src, got image.Image) (mean float64, worst int) {
	b := src.Bounds()
	var sum, n float64
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			s := nrgbaAt(src, x, y)
			g := nrgbaAt(got, x-b.Min.X, y-b.Min.Y)
			for _, d := range [4]int{int(s.R) - int(g.R), int(s.G) - int(g.G), int(s.B) - int(g.B), int(s.A) - int(g.A)} {
				d = max(d, -d)
				sum += float64(d)
				worst = max(worst, d)
				n++
			}
		}
	}
	return sum / n, worst
}

// subImage returns a w×h sub-image at (x, y) of img.
func subImage(img image.Image, x, y, w, h int) image.Image {
	return img.(interface {
		SubImage(image.Rectangle) image.Image
	}).SubImage(image.Rect(x, y, x+w, y+h))
}

// encodeInputs are tiles of every image type, as whole images and as
// sub-images with a non-zero origin (the real use: tiles of a metatile).
func encodeInputs() []struct {
	name   string
	img    image.Image
	opaque bool
} {
	opaque := toRGBAImage(mapLike(300, 280, 11, false))
	overlay := mapLike(300, 280, 12, true)
	premul := image.NewRGBA(overlay.Rect)
	draw.Draw(premul, premul.Rect, overlay, image.Point{}, draw.Src)
	gray := image.NewGray(opaque.Rect)
	draw.Draw(gray, gray.Rect, opaque, image.Point{}, draw.Src)
	pal := image.NewPaletted(opaque.Rect, color.Palette{color.White, color.Black, color.RGBA{200, 30, 40, 255}, color.RGBA{20, 130, 240, 255}})
	draw.Draw(pal, pal.Rect, opaque, image.Point{}, draw.Src)
	tpal := image.NewPaletted(opaque.Rect, color.Palette{color.NRGBA{}, color.NRGBA{10, 20, 30, 128}, color.White, color.NRGBA{200, 30, 40, 255}})
	for i := range tpal.Pix {
		tpal.Pix[i] = uint8(i / 7 % 4)
	}
	ycc := image.NewYCbCr(opaque.Rect, image.YCbCrSubsampleRatio420)
	for y := range opaque.Rect.Dy() {
		for x := range opaque.Rect.Dx() {
			c := opaque.RGBAAt(x, y)
			yy, cb, cr := color.RGBToYCbCr(c.R, c.G, c.B)
			ycc.Y[ycc.YOffset(x, y)] = yy
			ycc.Cb[ycc.COffset(x, y)], ycc.Cr[ycc.COffset(x, y)] = cb, cr
		}
	}
	generic := image.NewNRGBA64(overlay.Rect)
	draw.Draw(generic, generic.Rect, overlay, image.Point{}, draw.Src)

	type in = struct {
		name   string
		img    image.Image
		opaque bool
	}
	var ins []in
	for _, c := range []in{
		{"rgb", opaque, true},
		{"rgb packed", toRGB(opaque, 1, image.Point{}), true},
		{"nrgba", overlay, false},
		{"rgba premultiplied", premul, false},
		{"gray", gray, true},
		{"paletted", pal, true},
		{"paletted translucent", tpal, false},
		{"ycbcr", ycc, true},
		{"nrgba64", generic, false},
	} {
		ins = append(ins, c,
			in{c.name + " sub 256 at 21,13", subImage(c.img, 21, 13, 256, 256), c.opaque},
			in{c.name + " sub 97x3 at 203,277", subImage(c.img, 203, 277, 97, 3), c.opaque},
			in{c.name + " sub 1x1", subImage(c.img, 150, 150, 1, 1), c.opaque || c.name == "paletted translucent"},
		)
	}
	return ins
}

func TestNewEncoder(t *testing.T) {
	tests := []struct {
		format  string
		opts    Options
		wantCT  string
		wantErr string
	}{
		{format: "image/png", wantCT: "image/png"},
		{format: "image/png24", wantCT: "image/png"},
		{format: "image/png; mode=24bit", wantCT: "image/png"},
		{format: "image/PNG;mode=24bit", wantCT: "image/png"},
		{format: "image/png8", wantCT: "image/png"},
		{format: "image/png; mode=8bit", wantCT: "image/png"},
		{format: "image/jpeg", wantCT: "image/jpeg"},
		{format: "image/png", opts: Options{PNGCompression: 9}, wantCT: "image/png"},
		{format: "image/jpeg", opts: Options{JPEGQuality: 100}, wantCT: "image/jpeg"},
		{format: "image/webp", wantErr: `"image/webp"`},
		{format: "", wantErr: `""`},
		{format: "image/png", opts: Options{PNGCompression: 10}, wantErr: "compression level 10"},
		{format: "image/png8", opts: Options{PNGCompression: -1}, wantErr: "compression level -1"},
		{format: "image/jpeg", opts: Options{JPEGQuality: 101}, wantErr: "quality 101"},
		{format: "image/jpeg", opts: Options{JPEGQuality: -5}, wantErr: "quality -5"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %+v", tt.format, tt.opts), func(t *testing.T) {
			enc, err := NewEncoder(tt.format, tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("NewEncoder error %v, want one containing %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ct := enc.ContentType(); ct != tt.wantCT {
				t.Errorf("ContentType %q, want %q", ct, tt.wantCT)
			}
		})
	}
}

func TestEncodePNGRoundTrip(t *testing.T) {
	inputs := encodeInputs() // made once: building them is most of the test's time under -race
	for _, format := range []string{"image/png", "image/png24", "image/png; mode=24bit"} {
		for _, level := range []int{0, 1, 6, 9} {
			if level != 0 && format != "image/png" {
				// The 24-bit names choose the colour type, not the
				// deflate: image/png tries the levels.
				continue
			}
			enc, err := NewEncoder(format, Options{PNGCompression: level})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range inputs {
				if (level != 0 || format != "image/png") && (!strings.HasPrefix(in.name, "rgb") || strings.Contains(in.name, " sub 256 ")) {
					// The other levels and names need no full matrix: a
					// level changes the deflate, not the rows, so the
					// whole rgb images and their odd cuts stand for the
					// rest (under -race, deflating is most of the time).
					continue
				}
				t.Run(fmt.Sprintf("%s/level %d/%s", format, level, in.name), func(t *testing.T) {
					data, err := enc.Encode(in.img)
					if err != nil {
						t.Fatal(err)
					}
					ct := byte(ctRGBA)
					if in.opaque {
						ct = ctRGB
					}
					got := decodeStd(t, data, ct, 8)
					b := in.img.Bounds()
					if got.Bounds() != image.Rect(0, 0, b.Dx(), b.Dy()) {
						t.Fatalf("decoded bounds %v, want %v at the origin", got.Bounds(), b)
					}
					for y := b.Min.Y; y < b.Max.Y; y++ {
						for x := b.Min.X; x < b.Max.X; x++ {
							if w, g := nrgbaAt(in.img, x, y), nrgbaAt(got, x-b.Min.X, y-b.Min.Y); w != g {
								t.Fatalf("pixel %d,%d is %v, want %v", x, y, g, w)
							}
						}
					}
				})
			}
		}
	}
}

func TestEncodePNGFilters(t *testing.T) {
	// Sub in place, 8 bytes at a time, against the definition.
	for _, bpp := range []int{3, 4} {
		for n := 0; n < 40; n++ {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(i*i*37 + i*11)
			}
			want := bytes.Clone(p)
			for i := len(want) - 1; i >= bpp; i-- {
				want[i] -= p[i-bpp]
			}
			subFilter(p, bpp)
			if !bytes.Equal(p, want) {
				t.Errorf("subFilter of %d bytes, bpp %d:\n%v\nwant\n%v", n, bpp, p, want)
			}
			// and unfilter undoes it
			if err := unfilter(ftSub, p, make([]byte, n), bpp); err != nil || n > 0 && p[n-1] != byte((n-1)*(n-1)*37+(n-1)*11) {
				t.Errorf("unfilter(Sub) of %d bytes does not restore the row", n)
			}
		}
	}
	if chooseFilter(255, 256) != ftNone || chooseFilter(0, 256) != ftSub || chooseFilter(160, 256) != ftNone || chooseFilter(158, 256) != ftSub {
		t.Error("chooseFilter does not switch at 5/8 of the pixels")
	}
}

func TestEncodePNG8(t *testing.T) {
	enc, err := NewEncoder("image/png8", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkPNG8Lossless(t, enc)
	checkPNG8Lossy(t, enc)
}

// exactColours is a 300×200 image of n colours (with n levels of alpha
// when alpha), its transparent pixels of different RGB.
func exactColours(n int, alpha bool) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, 300, 200))
	for i := 0; i < len(m.Pix); i += 4 {
		k := (i/4*7 + i/1200) % n
		a := uint8(255)
		if alpha {
			a = uint8(k * 255 / max(1, n-1))
		}
		m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = uint8(k*13), uint8(k*101), uint8(i/4), a
		if a != 0 {
			m.Pix[i+2] = uint8(k)
		}
	}
	return m
}

// palettedN is a paletted image of n colours, half of them transparent,
// whose bounds do not start at 0,0.
func palettedN(n int) *image.Paletted {
	p := image.NewPaletted(image.Rect(10, 20, 310, 220), nil)
	for i := range n {
		p.Palette = append(p.Palette, color.NRGBA{uint8(i), uint8(i * 3), 9, uint8(255 - i%2*255)})
	}
	for i := range p.Pix {
		p.Pix[i] = uint8(i % n)
	}
	return p
}

// checkPNG8Lossless: images of at most 256 colours, including translucent
// ones and transparent pixels with different RGB (all the same colour),
// come back exactly, at the least bit depth.
func checkPNG8Lossless(t *testing.T, enc Encoder) {
	t.Helper()
	lossless := []struct {
		name      string
		img       image.Image
		wantDepth byte
	}{
		{"one colour", image.NewUniform(color.RGBA{1, 2, 3, 255}), 0},
		{"2 colours", exactColours(2, false), 1},
		{"4 colours", exactColours(4, false), 2},
		{"16 colours with alpha", exactColours(16, true), 4},
		{"17 colours", exactColours(17, false), 8},
		{"256 colours with alpha", exactColours(256, true), 8},
		{"256 colours sub-image", subImage(exactColours(256, false), 33, 17, 256, 128), 8},
		{"rgba premultiplied 200 colours", premultiplied(exactColours(200, true)), 8},
		{"paletted 3", palettedN(3), 2},
		{"paletted 256 sub-image", subImage(palettedN(256), 40, 50, 256, 100), 8},
		{"gray", grayRamp(), 8},
	}
	for _, tt := range lossless {
		t.Run(tt.name, func(t *testing.T) {
			img := tt.img
			if u, ok := img.(*image.Uniform); ok {
				img = &boundedUniform{u, image.Rect(0, 0, 256, 256)}
				tt.wantDepth = 1
			}
			data, err := enc.Encode(img)
			if err != nil {
				t.Fatal(err)
			}
			got := decodeStd(t, data, ctPaletted, tt.wantDepth)
			b := img.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					if w, g := nrgbaAt(img, x, y), nrgbaAt(got, x-b.Min.X, y-b.Min.Y); w != g {
						t.Fatalf("pixel %d,%d is %v, want %v", x, y, g, w)
					}
				}
			}
		})
	}
}

func checkPNG8Lossy(t *testing.T, enc Encoder) {
	t.Helper()
	// Lossy cases: a photo-like gradient and a map with shaded relief have
	// far more than 256 colours. The gradient spans the whole R×G plane:
	// 256 colours over it are about 16 levels apart, so about 4 is the
	// least mean error per channel any palette (without dithering) gets.
	lossy := []struct {
		name      string
		img       image.Image
		maxMean   float64 // mean absolute error per channel
		maxWorst  int     // largest error of a channel
		translcnt bool
	}{
		{"gradient", gradient(256, 256, false), 4.5, 32, false},
		{"gradient with alpha", gradient(256, 256, true), 4.5, 32, true},
		{"shaded map tile", subImage(mapLike(1024, 1024, 1, false), 256, 512, 256, 256), 1, 32, false},
	}
	for _, tt := range lossy {
		t.Run(tt.name, func(t *testing.T) {
			data, err := enc.Encode(tt.img)
			if err != nil {
				t.Fatal(err)
			}
			got := decodeStd(t, data, ctPaletted, 8)
			mean, worst := channelErrors(tt.img, got)
			t.Logf("mean absolute error %.2f per channel, worst %d (%d bytes)", mean, worst, len(data))
			if mean > tt.maxMean || worst > tt.maxWorst {
				t.Errorf("mean absolute error %.2f (limit %.1f), worst %d (limit %d)", mean, tt.maxMean, worst, tt.maxWorst)
			}
			// Opaque pixels stay opaque and transparent ones transparent.
			b := tt.img.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					w, g := nrgbaAt(tt.img, x, y), nrgbaAt(got, x-b.Min.X, y-b.Min.Y)
					if (w.A == 255) != (g.A == 255) || (w.A == 0) != (g.A == 0) {
						t.Fatalf("pixel %d,%d: alpha %d became %d", x, y, w.A, g.A)
					}
				}
			}
		})
	}
}

// boundedUniform is a uniform colour over a rectangle (a generic image type).
type boundedUniform struct {
	*image.Uniform
	r image.Rectangle
}

func (u *boundedUniform) Bounds() image.Rectangle { return u.r }

func premultiplied(m *image.NRGBA) *image.RGBA {
	out := image.NewRGBA(m.Rect)
	draw.Draw(out, out.Rect, m, m.Rect.Min, draw.Src)
	return out
}

func grayRamp() *image.Gray {
	g := image.NewGray(image.Rect(0, 0, 256, 64))
	for i := range g.Pix {
		g.Pix[i] = uint8(i)
	}
	return g
}

// gradient is a smooth photo-like image with a little noise: thousands of
// colours.
func gradient(w, h int, alpha bool) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			n := float64((x*7919+y*104729)%7) - 3
			c := color.NRGBA{
				R: clamp8(255*fx + n),
				G: clamp8(255*fy + n),
				B: clamp8(128 + 100*math.Sin(6*fx+4*fy) + n),
				A: 255,
			}
			if alpha {
				c.A = uint8(255 * fx * fy)
				if x < w/8 {
					c.A = 0
				} else if x >= w*7/8 {
					c.A = 255
				}
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

func TestEncodeJPEG(t *testing.T) {
	enc, err := NewEncoder("image/jpeg", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range encodeInputs() {
		t.Run(in.name, func(t *testing.T) {
			data, err := enc.Encode(in.img)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jpeg.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			b := in.img.Bounds()
			if got.Bounds().Size() != b.Size() {
				t.Fatalf("decoded size %v, want %v", got.Bounds().Size(), b.Size())
			}
			if !in.opaque {
				return // composited: checked below
			}
			// Sharp lines and noise are JPEG's worst case: this is a loose
			// bound, to catch wrong colours, not to measure quality.
			mean, _ := channelErrors(in.img, got)
			if mean > 10 {
				t.Errorf("mean absolute error %.2f per channel, want at most 10", mean)
			}
		})
	}

	// Non-opaque pixels are composited over the background.
	half := image.NewNRGBA(image.Rect(0, 0, 64, 64))
	for i := 0; i < len(half.Pix); i += 4 {
		if i/4%64 < 32 {
			copy(half.Pix[i:], []byte{0, 0, 255, 128}) // left half: half-transparent blue
		} else {
			copy(half.Pix[i:], []byte{255, 0, 0, 0}) // right half: transparent
		}
	}
	for _, tt := range []struct {
		name        string
		bg          color.NRGBA
		img         image.Image
		left, right color.NRGBA
	}{
		{"white", color.NRGBA{}, half, color.NRGBA{127, 127, 255, 255}, color.NRGBA{255, 255, 255, 255}},
		{"black", color.NRGBA{0, 0, 0, 255}, half, color.NRGBA{0, 0, 128, 255}, color.NRGBA{0, 0, 0, 255}},
		{"premultiplied over green", color.NRGBA{0, 255, 0, 255}, premultiplied(half), color.NRGBA{0, 127, 128, 255}, color.NRGBA{0, 255, 0, 255}},
	} {
		t.Run("background "+tt.name, func(t *testing.T) {
			enc, err := NewEncoder("image/jpeg", Options{Background: tt.bg, JPEGQuality: 95})
			if err != nil {
				t.Fatal(err)
			}
			data, err := enc.Encode(tt.img)
			if err != nil {
				t.Fatal(err)
			}
			got, err := jpeg.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct {
				x    int
				want color.NRGBA
			}{{12, tt.left}, {52, tt.right}} {
				g := nrgbaAt(got, p.x, 30)
				for i, d := range [3]int{int(g.R) - int(p.want.R), int(g.G) - int(p.want.G), int(g.B) - int(p.want.B)} {
					if d < -6 || d > 6 {
						t.Errorf("pixel %d,30 is %v, want about %v (channel %d)", p.x, g, p.want, i)
					}
				}
			}
		})
	}

	// Quality matters.
	img := mapLike(256, 256, 9, false)
	var sizes []int
	for _, q := range []int{30, 95} {
		enc, err := NewEncoder("image/jpeg", Options{JPEGQuality: q})
		if err != nil {
			t.Fatal(err)
		}
		data, err := enc.Encode(img)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(data))
	}
	if sizes[0] >= sizes[1] {
		t.Errorf("quality 30 gives %d bytes, quality 95 %d: want fewer", sizes[0], sizes[1])
	}
}

func TestEncodeEmptyImage(t *testing.T) {
	for _, format := range []string{"image/png", "image/png8", "image/jpeg"} {
		enc, err := NewEncoder(format, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enc.Encode(image.NewRGBA(image.Rect(5, 5, 5, 9))); err == nil {
			t.Errorf("%s: Encode of an empty image succeeds", format)
		}
	}
}

// TestEncodeConcurrent encodes from several goroutines with one encoder
// (run with -race): the pooled state must not be shared.
func TestEncodeConcurrent(t *testing.T) {
	meta := toRGBAImage(mapLike(512, 512, 21, false))
	tiles, err := Tiles(meta, 2, 2, 256, 256, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"image/png", "image/png8", "image/jpeg"} {
		enc, err := NewEncoder(format, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[image.Image][]byte{}
		for _, row := range tiles {
			for _, tile := range row {
				if want[tile], err = enc.Encode(tile); err != nil {
					t.Fatal(err)
				}
			}
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 8 {
					tile := tiles[(g+i)%2][i%2]
					got, err := enc.Encode(tile)
					if err != nil {
						t.Error(err)
						return
					}
					if !bytes.Equal(got, want[tile]) {
						t.Errorf("%s: concurrent Encode gives other bytes", format)
						return
					}
				}
			})
		}
		wg.Wait()
	}
}
