package imaging

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"sync"
	"testing"
)

// toRGB returns an opaque image as an *RGB, with a stride wider than its
// rows (as Decode's) and a non-zero origin when asked.
func toRGB(m *image.RGBA, pad int, origin image.Point) *RGB {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	out := &RGB{Pix: make([]byte, (3*w+pad)*h), Stride: 3*w + pad, Rect: m.Rect.Sub(m.Rect.Min).Add(origin)}
	for i := range out.Pix {
		out.Pix[i] = 0xee // padding garbage
	}
	for y := range h {
		for x := range w {
			c := m.RGBAAt(m.Rect.Min.X+x, m.Rect.Min.Y+y)
			copy(out.Pix[y*out.Stride+3*x:], []byte{c.R, c.G, c.B})
		}
	}
	return out
}

func TestRGB(t *testing.T) {
	src := toRGBAImage(mapLike(40, 30, 3, false))
	m := toRGB(src, 5, image.Pt(-7, 11))
	if m.Bounds() != image.Rect(-7, 11, 33, 41) || !m.Opaque() || m.ColorModel() != color.RGBAModel {
		t.Fatalf("bounds %v, opaque %v, model %v", m.Bounds(), m.Opaque(), m.ColorModel())
	}
	for y := range 30 {
		for x := range 40 {
			want := src.RGBAAt(x, y)
			if got := m.At(x-7, y+11); got != want {
				t.Fatalf("At(%d, %d) = %v, want %v", x-7, y+11, got, want)
			}
		}
	}
	if got := m.RGBAAt(33, 11); got != (color.RGBA{}) {
		t.Errorf("RGBAAt outside the bounds = %v", got)
	}
	sub := m.SubImage(image.Rect(0, 20, 100, 25)).(*RGB)
	if sub.Bounds() != image.Rect(0, 20, 33, 25) || sub.At(3, 21) != src.RGBAAt(10, 10) {
		t.Errorf("SubImage bounds %v, pixel %v, want (0,20)-(33,25) and %v", sub.Bounds(), sub.At(3, 21), src.RGBAAt(10, 10))
	}
	sub.Pix[0] = 1 // shares the pixels
	if m.RGBAAt(0, 20).R != 1 {
		t.Error("SubImage does not share the pixels")
	}
	if e := m.SubImage(image.Rect(100, 100, 200, 200)); !e.Bounds().Empty() {
		t.Errorf("SubImage outside the bounds: %v", e.Bounds())
	}
	n := NewRGB(image.Rect(1, 2, 4, 6))
	if len(n.Pix) != 36 || n.Stride != 9 || n.RGBAAt(3, 5) != (color.RGBA{A: 255}) {
		t.Errorf("NewRGB: %d bytes, stride %d, pixel %v", len(n.Pix), n.Stride, n.RGBAAt(3, 5))
	}
	tiles, err := Tiles(m, 2, 1, 20, 30, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tile := tiles[0][1]; tile.Bounds() != image.Rect(13, 11, 33, 41) || tile.At(14, 12) != m.At(14, 12) {
		t.Errorf("tile %v, pixel %v", tile.Bounds(), tile.At(14, 12))
	}
}

func TestDecodeRGB(t *testing.T) {
	data := mapServerPNG(t, mapLike(300, 200, 3, false), true)
	img, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := img.(*RGB)
	if !ok {
		t.Fatalf("Decode of an RGB PNG gives %T, want *RGB", img)
	}
	if m.Rect != image.Rect(0, 0, 300, 200) || m.Stride < 900 || len(m.Pix) != 199*m.Stride+900 {
		t.Errorf("bounds %v, stride %d, %d bytes", m.Rect, m.Stride, len(m.Pix))
	}
	// With tRNS the pixels are not all opaque: image/png's *image.NRGBA.
	cs := splitPNG(t, data)
	cs = append(cs[:1], append([]pngChunk{{"tRNS", []byte{0, 1, 0, 2, 0, 3}}}, cs[1:]...)...)
	if img, err := Decode(joinPNG(cs)); err != nil {
		t.Error(err)
	} else if _, ok := img.(*image.NRGBA); !ok {
		t.Errorf("Decode of an RGB PNG with tRNS gives %T, want *image.NRGBA", img)
	}
}

func TestSameRGB(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 60 {
		for k := range 100 {
			p := make([]byte, 3*n+rng.IntN(3))
			for i := range p {
				p[i] = byte(rng.IntN(2))
			}
			if k%2 == 1 { // mostly flat rows too
				for i := 3; i+3 <= len(p); i += 3 {
					if rng.IntN(8) != 0 {
						copy(p[i:i+3], p[i-3:i])
					}
				}
			}
			want := 0
			for x := 1; x < n; x++ {
				if bytes.Equal(p[3*x:3*x+3], p[3*x-3:3*x]) {
					want++
				}
			}
			// Exact when the row is flat enough to stay unfiltered; else
			// any count that still says so.
			got := sameRGB(p)
			if want >= flatMin(n) && got != want || want < flatMin(n) && (got > want || got >= flatMin(n)) {
				t.Fatalf("sameRGB(%v) = %d, want %d (flat from %d)", p, got, want, flatMin(n))
			}
		}
	}
}

// TestEncodeRGBSameAsRGBA: an *RGB encodes to the same bytes as the
// *image.RGBA of the same pixels, whole or cut into tiles, in every format.
func TestEncodeRGBSameAsRGBA(t *testing.T) {
	meta := toRGBAImage(mapLike(512, 300, 13, false))
	rgb := toRGB(meta, 1, image.Point{})
	flat := image.NewRGBA(image.Rect(0, 0, 64, 48))
	for i := range flat.Pix {
		flat.Pix[i] = []byte{10, 200, 30, 255}[i%4]
	}
	for _, format := range []string{"image/png", "image/png8", "image/jpeg"} {
		enc, err := NewEncoder(format, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []image.Rectangle{meta.Rect, image.Rect(0, 0, 256, 256), image.Rect(256, 44, 512, 300), image.Rect(511, 299, 512, 300), image.Rect(100, 7, 117, 10)} {
			want, err := enc.Encode(meta.SubImage(r))
			if err != nil {
				t.Fatal(err)
			}
			got, err := enc.Encode(rgb.SubImage(r))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s of %v: *RGB gives other bytes than *image.RGBA", format, r)
			}
		}
		want, _ := enc.Encode(flat)
		got, _ := enc.Encode(toRGB(flat, 0, image.Pt(3, 3)))
		if !bytes.Equal(got, want) {
			t.Errorf("%s of a flat image: *RGB gives other bytes than *image.RGBA", format)
		}
	}
}

func TestUniformRGB(t *testing.T) {
	fill := image.NewRGBA(image.Rect(0, 0, 300, 300))
	for i := range fill.Pix {
		fill.Pix[i] = []byte{9, 8, 7, 255}[i%4]
	}
	m := toRGB(fill, 1, image.Point{})
	c, ok := Uniform(m)
	if !ok || c != (color.RGBA{9, 8, 7, 255}) {
		t.Errorf("Uniform = %v, %v; want {9 8 7 255}, true", c, ok)
	}
	for _, p := range []image.Point{{299, 299}, {0, 1}, {1, 0}, {150, 299}, {299, 0}} {
		for k := range 3 {
			i := m.PixOffset(p.X, p.Y) + k
			m.Pix[i]++
			if _, ok := Uniform(m); ok {
				t.Errorf("Uniform with pixel %v channel %d changed", p, k)
			}
			// A sub-image without the pixel is uniform.
			if _, ok := Uniform(m.SubImage(image.Rect(p.X+1, 0, 300, 300))); !ok && p.X < 299 {
				t.Errorf("sub-image right of %v is not uniform", p)
			}
			m.Pix[i]--
		}
	}
}

// TestRelease decodes images of every kind into released buffers that were
// scribbled over: the results must be exactly fresh decodes.
func TestRelease(t *testing.T) {
	var files [][]byte
	for seed := range uint64(3) {
		files = append(files,
			mapServerPNG(t, mapLike(300, 200, seed, false), true),
			mapServerPNG(t, mapLike(300, 200, seed+10, true), false),
		)
	}
	imgs := testImages()
	for _, name := range []string{"rgb", "rgba", "gray", "paletted004", "paletted256"} {
		files = append(files, stdPNG(t, imgs[name], png.BestSpeed))
	}
	// A corrupt one: its buffer goes back to the pool on the error.
	cs := splitPNG(t, files[0])
	cs[len(cs)-1].data = []byte{1}
	bad := joinPNG(cs)
	for round := range 3 {
		for i, data := range files {
			want, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Decode(bad); err == nil {
				t.Fatal("a bad IEND decodes")
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if !sameDecoded(got, want) {
				t.Fatalf("round %d, file %d: a decode into a released buffer differs", round, i)
			}
			pix := pixOf(got)
			Release(got)
			if p := pixOf(got); p != nil {
				t.Errorf("%T keeps its pixels after Release", got)
			}
			Release(got) // a second time: nothing
			for k := range pix[:cap(pix)] {
				pix[:cap(pix)][k] = 0xa5 // what a stale buffer holds
			}
		}
	}

	// Sub-images, images Decode made nothing of and nil are left alone.
	img, err := Decode(files[0])
	if err != nil {
		t.Fatal(err)
	}
	sub := img.(*RGB).SubImage(image.Rect(0, 0, 300, 200))
	Release(sub)
	Release(nil)
	Release((*RGB)(nil))
	Release((*image.NRGBA)(nil))
	Release(image.NewYCbCr(image.Rect(0, 0, 8, 8), image.YCbCrSubsampleRatio420))
	nrgba := image.NewNRGBA(image.Rect(0, 0, 300, 200))
	for _, s := range []image.Image{nrgba.SubImage(image.Rect(0, 1, 300, 200)), nrgba.SubImage(image.Rect(0, 0, 299, 200)), nrgba.SubImage(image.Rect(0, 0, 300, 199))} {
		Release(s)
		if s.(*image.NRGBA).Pix == nil {
			t.Errorf("Release of sub-image %v takes its pixels", s.Bounds())
		}
	}
	if pixOf(sub) == nil || pixOf(img) == nil {
		t.Error("Release of a sub-image takes pixels")
	}
	Release(img)
}

func pixOf(img image.Image) []byte {
	switch m := img.(type) {
	case *RGB:
		return m.Pix
	case *image.NRGBA:
		return m.Pix
	case *image.RGBA:
		return m.Pix
	case *image.Gray:
		return m.Pix
	case *image.Paletted:
		return m.Pix
	}
	return nil
}

func TestPixClass(t *testing.T) {
	prev := 0
	for n := 1 << 15; n <= 1<<26+1; n += n/37 + 1 {
		class, size, ok := pixClass(n)
		if ok != (n > 1<<15 && n <= 1<<26) {
			t.Fatalf("pixClass(%d): ok %v", n, ok)
		}
		if !ok {
			continue
		}
		if size < n || size > n+n/8+8 || class < prev || class >= len(pixPools) {
			t.Fatalf("pixClass(%d) = %d, %d", n, class, size)
		}
		if c, s, _ := pixClass(size); c != class || s != size {
			t.Fatalf("pixClass(%d) = %d, %d but pixClass(%d) = %d, %d", n, class, size, size, c, s)
		}
		prev = class
	}
}

// TestDecodeReleaseConcurrent decodes and releases from several goroutines
// (run with -race): no two live images share a buffer.
func TestDecodeReleaseConcurrent(t *testing.T) {
	var files [][]byte
	var wants []image.Image
	for seed := range uint64(4) {
		data := mapServerPNG(t, mapLike(256, 192, seed, seed%2 == 1), seed%2 == 0)
		want, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		files, wants = append(files, data), append(wants, want)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 12 {
				k := (g + i) % len(files)
				img, err := Decode(files[k])
				if err != nil {
					t.Error(err)
					return
				}
				tiles, err := Tiles(img, 2, 2, 128, 96, 0)
				if err != nil {
					t.Error(err)
					return
				}
				for _, row := range tiles {
					for _, tile := range row {
						Uniform(tile)
					}
				}
				if !sameDecoded(img, wants[k]) {
					t.Errorf("goroutine %d: image %d differs", g, k)
				}
				Release(img)
			}
		})
	}
	wg.Wait()
}

func TestExpandRGB(t *testing.T) {
	for n := range 20 {
		src := make([]byte, 3*n)
		for i := range src {
			src[i] = byte(i*37 + 5)
		}
		dst := make([]byte, 4*n)
		expandRGB(dst, src)
		for x := range n {
			if want := []byte{src[3*x], src[3*x+1], src[3*x+2], 0xff}; !bytes.Equal(dst[4*x:4*x+4], want) {
				t.Fatalf("%d pixels: pixel %d is %v, want %v", n, x, dst[4*x:4*x+4], want)
			}
		}
	}
}
