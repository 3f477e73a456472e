package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"golang.org/x/image/tiff"
)

// fixCRCs returns data with the CRC of every complete chunk recomputed, so
// that mutations reach the chunk and pixel decoding instead of stopping at
// the first checksum.
func fixCRCs(data []byte) []byte {
	if !bytes.HasPrefix(data, []byte(pngSignature)) {
		return data
	}
	out := bytes.Clone(data)
	for pos := len(pngSignature); len(out)-pos >= 12; {
		n := int(binary.BigEndian.Uint32(out[pos:]))
		if n < 0 || n > len(out)-pos-12 {
			break
		}
		end := pos + 8 + n
		binary.BigEndian.PutUint32(out[end:], crc32.ChecksumIEEE(out[pos+4:end]))
		pos = end + 4
	}
	return out
}

// FuzzDecode checks that Decode never panics, that an error is never
// returned with an image, and that on PNGs it agrees with image/png:
// whatever both decode is the same image (see sameDecoded), and Decode
// does not accept what image/png rejects (other than data after the zlib
// stream, which libpng and, mostly, image/png accept too); on TIFFs, that
// whatever both it and golang.org/x/image/tiff decode is the same image.
// Every image is
// released, so later inputs decode into recycled buffers: stale pixels
// would show as a difference.
func FuzzDecode(f *testing.F) {
	imgs := testImages()
	for _, name := range []string{"rgb", "rgba", "gray", "paletted004", "paletted017", "rgba16"} {
		sub := subImage(imgs[name], 3, 2, 9, 7)
		f.Add(stdPNG(f, sub, png.BestCompression))
		f.Add(rechunkIDAT(f, stdPNG(f, sub, png.NoCompression), 50))
	}
	f.Add(mapServerPNG(f, mapLike(16, 8, 1, false), true))
	small := subImage(imgs["rgb"], 0, 0, 16, 16)
	var jb, gb bytes.Buffer
	if err := jpeg.Encode(&jb, small, nil); err != nil {
		f.Fatal(err)
	}
	if err := gif.Encode(&gb, small, nil); err != nil {
		f.Fatal(err)
	}
	f.Add(jb.Bytes())
	f.Add(gb.Bytes())
	for _, data := range tiffCorpus(f) {
		f.Add(data)
	}
	f.Add([]byte(`<?xml version="1.0"?><ServiceExceptionReport><ServiceException code="x">oops</ServiceException></ServiceExceptionReport>`))
	f.Add([]byte("<html><title>502</title></html>"))
	f.Add([]byte{})
	f.Add([]byte(pngSignature))

	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range [][]byte{data, fixCRCs(data)} {
			img, err := Decode(d)
			if (img == nil) == (err == nil) {
				t.Fatalf("Decode returns image %T and error %v", img, err)
			}
			var nie *NotImageError
			if errors.As(err, &nie) && strings.ContainsAny(nie.Message, "\r\n") {
				t.Fatalf("NotImageError message spans lines: %q", nie.Message)
			}
			if bytes.HasPrefix(d, []byte(tiffLE)) || bytes.HasPrefix(d, []byte(tiffBE)) {
				if err == nil && img.Bounds().Dx()*img.Bounds().Dy() <= 1<<20 {
					if want, werr := tiff.Decode(bytes.NewReader(d)); werr == nil && !sameDecoded(img, want) {
						t.Fatalf("Decode gives %T, x/image/tiff %T, or the pixels differ", img, want)
					}
				}
				Release(img)
				continue
			}
			if !bytes.HasPrefix(d, []byte(pngSignature)) {
				Release(img)
				continue
			}
			cfg, cerr := png.DecodeConfig(bytes.NewReader(d))
			if cerr != nil || cfg.Width*cfg.Height > 1<<20 {
				Release(img)
				continue // image/png would allocate too much for a fuzz run
			}
			want, werr := png.Decode(bytes.NewReader(d))
			switch {
			case err == nil && werr != nil && !strings.Contains(werr.Error(), "too much pixel data"):
				t.Fatalf("Decode accepts what image/png rejects: %v", werr)
			case err == nil && werr == nil && !sameDecoded(img, want):
				t.Fatalf("Decode gives %T, image/png %T, or the pixels or palettes differ", img, want)
			}
			Release(img)
		}
	})
}

// FuzzEncodePNG encodes truecolour images made from the input (an opaque
// *RGB, a sub-image of one whose rows are apart, and an NRGBA with the
// input's alpha) at the default level and at level 6, and wants image/png
// to decode the same pixels. Data cycled over the rows makes flat rows
// (unfiltered), rows of continuous tone (Sub on the first row, Up below)
// and the mixes between, so every filter choice meets every row above.
func FuzzEncodePNG(f *testing.F) {
	f.Add(uint8(4), uint8(3), []byte("flat flat flat noise 0123456789"))
	f.Add(uint8(17), uint8(9), bytes.Repeat([]byte{10, 20, 30}, 50))
	f.Add(uint8(0), uint8(0), []byte{1, 2, 3, 4})
	f.Add(uint8(63), uint8(12), []byte{0, 255, 1, 254, 2, 253, 7, 7, 7, 7, 7, 7, 7, 9})
	encs := map[int]Encoder{}
	for _, level := range []int{0, 6} {
		enc, err := NewEncoder("image/png", Options{PNGCompression: level})
		if err != nil {
			f.Fatal(err)
		}
		encs[level] = enc
	}
	f.Fuzz(func(t *testing.T, w8, h8 uint8, data []byte) {
		if len(data) == 0 {
			return
		}
		w, h := int(w8)%64+1, int(h8)%64+1
		big := NewRGB(image.Rect(0, 0, w+2, h+1))
		for i := range big.Pix {
			big.Pix[i] = data[i%len(data)]
		}
		rgb := NewRGB(image.Rect(0, 0, w, h))
		copy(rgb.Pix, big.Pix)
		nrgba := image.NewNRGBA(image.Rect(0, 0, w, h))
		for i := range nrgba.Pix {
			nrgba.Pix[i] = data[(i*7)%len(data)]
		}
		inputs := []image.Image{rgb, big.SubImage(image.Rect(1, 1, w+1, h+1)), nrgba}
		for level, enc := range encs {
			for i, img := range inputs {
				out, err := enc.Encode(img)
				if err != nil {
					t.Fatalf("level %d, input %d: %v", level, i, err)
				}
				got, err := png.Decode(bytes.NewReader(out))
				if err != nil {
					t.Fatalf("level %d, input %d: image/png cannot decode the output: %v", level, i, err)
				}
				b := img.Bounds()
				if got.Bounds() != image.Rect(0, 0, b.Dx(), b.Dy()) {
					t.Fatalf("level %d, input %d: decoded bounds %v, want %dx%d", level, i, got.Bounds(), b.Dx(), b.Dy())
				}
				for y := b.Min.Y; y < b.Max.Y; y++ {
					for x := b.Min.X; x < b.Max.X; x++ {
						if want, g := nrgbaAt(img, x, y), nrgbaAt(got, x-b.Min.X, y-b.Min.Y); want != g {
							t.Fatalf("level %d, input %d: pixel %d,%d is %v, want %v", level, i, x, y, g, want)
						}
					}
				}
			}
		}
	})
}
