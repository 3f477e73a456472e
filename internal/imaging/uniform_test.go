package imaging

import (
	"image"
	"image/color"
	"testing"
)

func TestUniform(t *testing.T) {
	fillRGBA := func(r image.Rectangle, c color.RGBA) *image.RGBA {
		m := image.NewRGBA(r)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				m.SetRGBA(x, y, c)
			}
		}
		return m
	}
	red := color.RGBA{200, 10, 10, 255}
	meta := fillRGBA(image.Rect(0, 0, 512, 512), red)
	meta.SetRGBA(0, 0, color.RGBA{1, 2, 3, 255}) // outside the sub-images below
	withRGBA := func(m *image.RGBA, x, y int, c color.RGBA) *image.RGBA { m.SetRGBA(x, y, c); return m }

	transparent := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	for i := range transparent.Pix {
		if i%4 != 3 {
			transparent.Pix[i] = uint8(i) // RGB garbage under alpha 0
		}
	}
	nrgbaWith := func(x, y int, c color.NRGBA) *image.NRGBA {
		m := image.NewNRGBA(image.Rect(0, 0, 256, 256))
		m.SetNRGBA(x, y, c)
		return m
	}

	pal := color.Palette{color.RGBA{0, 0, 255, 255}, color.RGBA{0, 255, 0, 255}, color.RGBA{0, 0, 255, 255}}
	paletted := func(ix ...uint8) *image.Paletted {
		m := image.NewPaletted(image.Rect(0, 0, 64, 64), pal)
		for i := range m.Pix {
			m.Pix[i] = ix[i%len(ix)]
		}
		return m
	}
	palLast := paletted(0)
	palLast.SetColorIndex(63, 63, 1)

	gray := image.NewGray(image.Rect(0, 0, 100, 100))
	grayLast := image.NewGray(image.Rect(0, 0, 100, 100))
	grayLast.SetGray(99, 99, color.Gray{1})

	ycc := func(ratio image.YCbCrSubsampleRatio, dy, dcb, dcr int) *image.YCbCr {
		m := image.NewYCbCr(image.Rect(0, 0, 64, 64), ratio)
		for i := range m.Y {
			m.Y[i] = 100
		}
		for i := range m.Cb {
			m.Cb[i], m.Cr[i] = 90, 160
		}
		if dy >= 0 {
			m.Y[dy]++
		}
		if dcb >= 0 {
			m.Cb[dcb]++
		}
		if dcr >= 0 {
			m.Cr[dcr]++
		}
		return m
	}
	yccMeta := ycc(image.YCbCrSubsampleRatio420, -1, -1, -1)
	yccMeta.Y[0] = 7 // outside the sub-image below

	generic := image.NewNRGBA64(image.Rect(0, 0, 32, 32))
	genericLast := image.NewNRGBA64(image.Rect(0, 0, 32, 32))
	genericLast.SetNRGBA64(31, 31, color.NRGBA64{1, 0, 0, 0xffff})

	tests := []struct {
		name string
		img  image.Image
		want bool
		c    color.Color // wanted colour when uniform
	}{
		{"rgba", fillRGBA(image.Rect(0, 0, 256, 256), red), true, red},
		{"rgba sub-image", subImage(meta, 256, 256, 256, 256), true, red},
		{"rgba sub-image odd size", subImage(meta, 3, 5, 17, 9), true, red},
		{"rgba last pixel", withRGBA(fillRGBA(image.Rect(0, 0, 256, 256), red), 255, 255, color.RGBA{200, 10, 11, 255}), false, nil},
		{"rgba last column", withRGBA(fillRGBA(image.Rect(0, 0, 256, 256), red), 255, 7, color.RGBA{200, 10, 10, 254}), false, nil},
		{"rgba last row of sub-image", subImage(withRGBA(fillRGBA(image.Rect(0, 0, 512, 512), red), 300, 511, color.RGBA{}), 256, 256, 256, 256), false, nil},
		{"rgba odd width last pixel", withRGBA(fillRGBA(image.Rect(0, 0, 7, 3), red), 6, 2, color.RGBA{}), false, nil},
		{"nrgba transparent with any rgb", transparent, true, color.NRGBA{}},
		{"nrgba transparent sub-image", subImage(transparent, 1, 2, 100, 50), true, color.NRGBA{}},
		{"nrgba one translucent pixel", nrgbaWith(255, 255, color.NRGBA{0, 0, 0, 1}), false, nil},
		{"nrgba opaque except last", nrgbaWith(0, 0, color.NRGBA{9, 9, 9, 255}), false, nil},
		{"paletted", paletted(1), true, pal[1]},
		{"paletted equal colours", paletted(0, 2), true, pal[0]},
		{"paletted last pixel", palLast, false, nil},
		{"paletted sub-image", subImage(palLast, 0, 0, 63, 64), true, pal[0]},
		{"gray", gray, true, color.Gray{}},
		{"gray last pixel", grayLast, false, nil},
		{"gray sub-image", subImage(grayLast, 50, 50, 49, 50), true, color.Gray{}},
		{"ycbcr 4:2:0", ycc(image.YCbCrSubsampleRatio420, -1, -1, -1), true, color.YCbCr{100, 90, 160}},
		{"ycbcr 4:4:4", ycc(image.YCbCrSubsampleRatio444, -1, -1, -1), true, color.YCbCr{100, 90, 160}},
		{"ycbcr last Y", ycc(image.YCbCrSubsampleRatio420, 64*64-1, -1, -1), false, nil},
		{"ycbcr last Cb", ycc(image.YCbCrSubsampleRatio420, -1, 32*32-1, -1), false, nil},
		{"ycbcr last Cr", ycc(image.YCbCrSubsampleRatio422, -1, -1, 32*64-1), false, nil},
		{"ycbcr sub-image", subImage(yccMeta, 2, 2, 30, 30), true, color.YCbCr{100, 90, 160}},
		{"generic", generic, true, color.NRGBA64{}},
		{"generic last pixel", genericLast, false, nil},
		{"empty", image.NewRGBA(image.Rect(3, 3, 3, 3)), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := Uniform(tt.img)
			if ok != tt.want {
				t.Fatalf("Uniform = %v, want %v", ok, tt.want)
			}
			if !ok {
				if c != nil {
					t.Errorf("colour %v for a non-uniform image, want nil", c)
				}
				return
			}
			r1, g1, b1, a1 := c.RGBA()
			r2, g2, b2, a2 := tt.c.RGBA()
			if [4]uint32{r1, g1, b1, a1} != [4]uint32{r2, g2, b2, a2} {
				t.Errorf("colour %v, want %v", c, tt.c)
			}
		})
	}
}

func BenchmarkUniform(b *testing.B) {
	meta := toRGBAImage(mapLike(1024, 1024, 1, false))
	flat := image.NewRGBA(image.Rect(0, 0, 1024, 1024))
	for _, bc := range []struct {
		name string
		img  image.Image
	}{
		{"uniform RGBA 256", subImage(flat, 512, 256, 256, 256)},
		{"map tile RGBA 256", subImage(meta, 512, 256, 256, 256)},
		{"uniform RGB 256", subImage(toRGB(flat, 1, image.Point{}), 512, 256, 256, 256)},
		{"map tile RGB 256", subImage(toRGB(meta, 1, image.Point{}), 512, 256, 256, 256)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(256 * 256 * 4)
			for b.Loop() {
				Uniform(bc.img)
			}
		})
	}
}
