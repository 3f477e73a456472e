package imaging

import (
	"image"
	"image/color"
	"testing"
)

// uniformRed is the colour of the uniform RGBA images.
var uniformRed = color.RGBA{200, 10, 10, 255}

// uniformRGBA is r filled with c.
func uniformRGBA(r image.Rectangle, c color.RGBA) *image.RGBA {
	m := image.NewRGBA(r)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

// redMeta is a red 512×512 image but for its pixel 0,0.
func redMeta() *image.RGBA {
	return withPixel(uniformRGBA(image.Rect(0, 0, 512, 512), uniformRed), 0, 0, color.RGBA{1, 2, 3, 255})
}

func withPixel(m *image.RGBA, x, y int, c color.RGBA) *image.RGBA { m.SetRGBA(x, y, c); return m }

// transparentNRGBA is transparent with RGB garbage under alpha 0.
func transparentNRGBA() *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	for i := range m.Pix {
		if i%4 != 3 {
			m.Pix[i] = uint8(i)
		}
	}
	return m
}

// nrgbaWithPixel is transparent but for its pixel x,y of colour c.
func nrgbaWithPixel(x, y int, c color.NRGBA) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	m.SetNRGBA(x, y, c)
	return m
}

// uniformPalette has two equal colours, 0 and 2.
var uniformPalette = color.Palette{color.RGBA{0, 0, 255, 255}, color.RGBA{0, 255, 0, 255}, color.RGBA{0, 0, 255, 255}}

// palettedOf is 64×64 of uniformPalette's colours ix, repeated.
func palettedOf(ix ...uint8) *image.Paletted {
	m := image.NewPaletted(image.Rect(0, 0, 64, 64), uniformPalette)
	for i := range m.Pix {
		m.Pix[i] = ix[i%len(ix)]
	}
	return m
}

// palettedLast is of colour 0 but for its last pixel.
func palettedLast() *image.Paletted {
	m := palettedOf(0)
	m.SetColorIndex(63, 63, 1)
	return m
}

// grayLast is black but for its last pixel.
func grayLast() *image.Gray {
	m := image.NewGray(image.Rect(0, 0, 100, 100))
	m.SetGray(99, 99, color.Gray{1})
	return m
}

// yccOf is 64×64 of Y 100, Cb 90, Cr 160 but for the samples dy, dcb and
// dcr (-1: none) one more.
func yccOf(ratio image.YCbCrSubsampleRatio, dy, dcb, dcr int) *image.YCbCr {
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

// yccMeta is uniform 4:2:0 but for its first Y sample.
func yccMeta() *image.YCbCr {
	m := yccOf(image.YCbCrSubsampleRatio420, -1, -1, -1)
	m.Y[0] = 7
	return m
}

// genericLast is transparent but for its last pixel.
func genericLast() *image.NRGBA64 {
	m := image.NewNRGBA64(image.Rect(0, 0, 32, 32))
	m.SetNRGBA64(31, 31, color.NRGBA64{1, 0, 0, 0xffff})
	return m
}

// uniformCase is an image and whether it is of one colour, c.
type uniformCase struct {
	name string
	img  image.Image
	want bool
	c    color.Color // wanted colour when uniform
}

// uniformCases are built when asked for: their images are large.
func uniformCases() []uniformCase {
	red := uniformRed
	return []uniformCase{
		{"rgba", uniformRGBA(image.Rect(0, 0, 256, 256), red), true, red},
		{"rgba sub-image", subImage(redMeta(), 256, 256, 256, 256), true, red},
		{"rgba sub-image odd size", subImage(redMeta(), 3, 5, 17, 9), true, red},
		{"rgba last pixel", withPixel(uniformRGBA(image.Rect(0, 0, 256, 256), red), 255, 255, color.RGBA{200, 10, 11, 255}), false, nil},
		{"rgba last column", withPixel(uniformRGBA(image.Rect(0, 0, 256, 256), red), 255, 7, color.RGBA{200, 10, 10, 254}), false, nil},
		{"rgba last row of sub-image", subImage(withPixel(uniformRGBA(image.Rect(0, 0, 512, 512), red), 300, 511, color.RGBA{}), 256, 256, 256, 256), false, nil},
		{"rgba odd width last pixel", withPixel(uniformRGBA(image.Rect(0, 0, 7, 3), red), 6, 2, color.RGBA{}), false, nil},
		{"nrgba transparent with any rgb", transparentNRGBA(), true, color.NRGBA{}},
		{"nrgba transparent sub-image", subImage(transparentNRGBA(), 1, 2, 100, 50), true, color.NRGBA{}},
		{"nrgba one translucent pixel", nrgbaWithPixel(255, 255, color.NRGBA{0, 0, 0, 1}), false, nil},
		{"nrgba opaque except last", nrgbaWithPixel(0, 0, color.NRGBA{9, 9, 9, 255}), false, nil},
		{"paletted", palettedOf(1), true, uniformPalette[1]},
		{"paletted equal colours", palettedOf(0, 2), true, uniformPalette[0]},
		{"paletted last pixel", palettedLast(), false, nil},
		{"paletted sub-image", subImage(palettedLast(), 0, 0, 63, 64), true, uniformPalette[0]},
		{"gray", image.NewGray(image.Rect(0, 0, 100, 100)), true, color.Gray{}},
		{"gray last pixel", grayLast(), false, nil},
		{"gray sub-image", subImage(grayLast(), 50, 50, 49, 50), true, color.Gray{}},
		{"ycbcr 4:2:0", yccOf(image.YCbCrSubsampleRatio420, -1, -1, -1), true, color.YCbCr{100, 90, 160}},
		{"ycbcr 4:4:4", yccOf(image.YCbCrSubsampleRatio444, -1, -1, -1), true, color.YCbCr{100, 90, 160}},
		{"ycbcr last Y", yccOf(image.YCbCrSubsampleRatio420, 64*64-1, -1, -1), false, nil},
		{"ycbcr last Cb", yccOf(image.YCbCrSubsampleRatio420, -1, 32*32-1, -1), false, nil},
		{"ycbcr last Cr", yccOf(image.YCbCrSubsampleRatio422, -1, -1, 32*64-1), false, nil},
		{"ycbcr sub-image", subImage(yccMeta(), 2, 2, 30, 30), true, color.YCbCr{100, 90, 160}},
		{"generic", image.NewNRGBA64(image.Rect(0, 0, 32, 32)), true, color.NRGBA64{}},
		{"generic last pixel", genericLast(), false, nil},
		{"empty", image.NewRGBA(image.Rect(3, 3, 3, 3)), false, nil},
	}
}

func TestUniform(t *testing.T) {
	for _, tt := range uniformCases() {
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
