package imaging

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"testing"
)

// mapLike draws a deterministic map-like picture: a shaded, noisy terrain
// background (the part that does not compress well, as hillshading or
// imagery does), flat land-use polygons, and antialiased roads and
// boundaries on top. When transparent is true the background is left out
// and the polygons are half transparent, as an overlay layer rendered with
// TRANSPARENT=TRUE looks.
func mapLike(w, h int, seed uint64, transparent bool) *image.NRGBA {
	rng := rand.New(rand.NewPCG(seed, 0x6d61706c696b65))
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	if !transparent {
		// Smooth relief: a few sine waves shaded like a hillshade, plus noise.
		type wave struct{ fx, fy, ph, amp float64 }
		var waves [6]wave
		for i := range waves {
			waves[i] = wave{rng.Float64() * 0.02, rng.Float64() * 0.02, rng.Float64() * 6.3, 1 / float64(i+1)}
		}
		for y := range h {
			for x := range w {
				var v, dx float64
				for _, wv := range waves {
					a := wv.fx*float64(x) + wv.fy*float64(y) + wv.ph
					v += wv.amp * math.Sin(a)
					dx += wv.amp * wv.fx * math.Cos(a) * 60
				}
				shade := 0.75 + 0.25*math.Tanh(dx)
				n := float64(rng.IntN(7)) - 3 // fine noise, ±3 levels
				r := (200 + 20*v) * shade
				g := (215 + 15*v) * shade
				b := (180 + 10*v) * shade
				i := img.PixOffset(x, y)
				img.Pix[i+0] = clamp8(r + n)
				img.Pix[i+1] = clamp8(g + n)
				img.Pix[i+2] = clamp8(b + n)
				img.Pix[i+3] = 255
			}
		}
	}
	// Land-use polygons: flat colours (forest, water, built-up areas).
	fills := []color.NRGBA{{170, 210, 160, 255}, {160, 200, 230, 255}, {225, 220, 215, 255}, {240, 235, 200, 255}}
	for range 40 {
		c := fills[rng.IntN(len(fills))]
		if transparent {
			c.A = 160
		}
		cx, cy := rng.Float64()*float64(w), rng.Float64()*float64(h)
		r := 20 + rng.Float64()*float64(w)/8
		var pts [][2]float64
		n := 5 + rng.IntN(6)
		for i := range n {
			a := 2 * math.Pi * float64(i) / float64(n)
			rr := r * (0.6 + 0.6*rng.Float64())
			pts = append(pts, [2]float64{cx + rr*math.Cos(a), cy + rr*math.Sin(a)})
		}
		fillPolygon(img, pts, c)
	}
	// Roads and boundaries: antialiased lines of a few widths and colours.
	strokes := []struct {
		c     color.NRGBA
		width float64
	}{{color.NRGBA{255, 255, 255, 255}, 5}, {color.NRGBA{240, 160, 60, 255}, 3}, {color.NRGBA{90, 90, 90, 255}, 1.2}, {color.NRGBA{150, 80, 150, 255}, 2}}
	for range 120 {
		s := strokes[rng.IntN(len(strokes))]
		x, y := rng.Float64()*float64(w), rng.Float64()*float64(h)
		a := rng.Float64() * 2 * math.Pi
		for range 4 + rng.IntN(8) {
			a += (rng.Float64() - 0.5) * 1.2
			l := 20 + rng.Float64()*120
			nx, ny := x+l*math.Cos(a), y+l*math.Sin(a)
			drawLine(img, x, y, nx, ny, s.width, s.c)
			x, y = nx, ny
		}
	}
	return img
}

func clamp8(v float64) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v + 0.5)
}

// blend composites c with coverage cov (0..1) over the pixel at x, y.
func blend(img *image.NRGBA, x, y int, c color.NRGBA, cov float64) {
	if !(image.Point{x, y}.In(img.Rect)) || cov <= 0 {
		return
	}
	i := img.PixOffset(x, y)
	p := img.Pix[i : i+4 : i+4]
	sa := float64(c.A) / 255 * math.Min(cov, 1)
	da := float64(p[3]) / 255
	oa := sa + da*(1-sa)
	if oa == 0 {
		return
	}
	for k, sc := range [3]uint8{c.R, c.G, c.B} {
		p[k] = clamp8((float64(sc)*sa + float64(p[k])*da*(1-sa)) / oa)
	}
	p[3] = clamp8(oa * 255)
}

// fillPolygon fills a polygon with the even-odd rule, sampling pixel centres.
func fillPolygon(img *image.NRGBA, pts [][2]float64, c color.NRGBA) {
	b := img.Rect
	for y := b.Min.Y; y < b.Max.Y; y++ {
		fy := float64(y) + 0.5
		var xs []float64
		for i := range pts {
			p, q := pts[i], pts[(i+1)%len(pts)]
			if (p[1] <= fy) != (q[1] <= fy) {
				xs = append(xs, p[0]+(fy-p[1])*(q[0]-p[0])/(q[1]-p[1]))
			}
		}
		for i := 1; i < len(xs); i++ { // insertion sort: few crossings
			for j := i; j > 0 && xs[j] < xs[j-1]; j-- {
				xs[j], xs[j-1] = xs[j-1], xs[j]
			}
		}
		for i := 0; i+1 < len(xs); i += 2 {
			x0, x1 := max(int(math.Ceil(xs[i]-0.5)), b.Min.X), min(int(math.Ceil(xs[i+1]-0.5)), b.Max.X)
			for x := x0; x < x1; x++ {
				blend(img, x, y, c, 1)
			}
		}
	}
}

// drawLine strokes a segment with an antialiased edge of one pixel.
func drawLine(img *image.NRGBA, x0, y0, x1, y1, width float64, c color.NRGBA) {
	minX, maxX := int(math.Floor(min(x0, x1)-width)), int(math.Ceil(max(x0, x1)+width))
	minY, maxY := int(math.Floor(min(y0, y1)-width)), int(math.Ceil(max(y0, y1)+width))
	dx, dy := x1-x0, y1-y0
	l2 := dx*dx + dy*dy
	for y := minY; y <= maxY; y++ {
		for x := minX; x <= maxX; x++ {
			px, py := float64(x)+0.5, float64(y)+0.5
			t := 0.0
			if l2 > 0 {
				t = math.Max(0, math.Min(1, ((px-x0)*dx+(py-y0)*dy)/l2))
			}
			ex, ey := x0+t*dx-px, y0+t*dy-py
			d := math.Sqrt(ex*ex+ey*ey) - width/2
			blend(img, x, y, c, 0.5-d)
		}
	}
}

// toRGBA returns the opaque picture as *image.RGBA, the type image/png
// decodes an RGB PNG to.
func toRGBAImage(m *image.NRGBA) *image.RGBA {
	out := image.NewRGBA(m.Rect)
	for i := 0; i < len(m.Pix); i += 4 {
		c := color.NRGBA{m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3]}
		r := color.RGBAModel.Convert(c).(color.RGBA)
		out.Pix[i], out.Pix[i+1], out.Pix[i+2], out.Pix[i+3] = r.R, r.G, r.B, r.A
	}
	return out
}

// mapServerPNG writes img the way MapServer's AGG driver does with
// FORMATOPTION COMPRESSION=1: libpng, no row filter, zlib level 1, IDAT
// chunks of 8192 bytes; RGB when opaque is true, RGBA otherwise.
func mapServerPNG(tb testing.TB, img *image.NRGBA, opaque bool) []byte {
	tb.Helper()
	w, h := img.Rect.Dx(), img.Rect.Dy()
	bpp := 4
	ct := byte(6)
	if opaque {
		bpp, ct = 3, 2
	}
	var raw bytes.Buffer
	zw, err := zlib.NewWriterLevel(&raw, zlib.BestSpeed)
	if err != nil {
		tb.Fatal(err)
	}
	row := make([]byte, 1+w*bpp)
	for y := range h {
		src := img.Pix[img.PixOffset(0, y):]
		for x := range w {
			copy(row[1+x*bpp:1+x*bpp+bpp], src[4*x:4*x+bpp])
		}
		zw.Write(row)
	}
	zw.Close()

	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(len(data)))
		out.Write(b[:])
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.BigEndian.PutUint32(b[:], crc.Sum32())
		out.Write(b[:])
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, ct
	chunk("IHDR", ihdr[:])
	data := raw.Bytes()
	for len(data) > 0 {
		n := min(len(data), 8192)
		chunk("IDAT", data[:n])
		data = data[n:]
	}
	chunk("IEND", nil)
	return out.Bytes()
}
