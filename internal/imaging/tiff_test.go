package imaging

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/image/tiff"
)

// tiffSpec describes a baseline TIFF for buildTIFF.
type tiffSpec struct {
	be           bool // big-endian ("MM")
	w, h         int
	samples      int    // 3 (RGB) or 4 (RGBA)
	extra        int    // ExtraSamples of the alpha: 1 associated, 2 unassociated
	rowsPerStrip int    // 0: all rows in one strip
	scatter      bool   // strips written last first, with a gap between them
	pix          []byte // w*h*samples bytes, row after row
}

// buildTIFF writes s the way a map server writes an uncompressed TIFF:
// header, strips, then the IFD (all SHORT/LONG values, arrays out of line).
func buildTIFF(s tiffSpec) []byte {
	var bo interface {
		binary.ByteOrder
		binary.AppendByteOrder
	} = binary.LittleEndian
	out := []byte(tiffLE)
	if s.be {
		bo, out = binary.BigEndian, []byte(tiffBE)
	}
	out = bo.AppendUint32(out, 0) // IFD offset, set below
	rows := s.rowsPerStrip
	if rows <= 0 {
		rows = s.h
	}
	stride := s.w * s.samples
	n := (s.h + rows - 1) / rows
	offsets, counts := make([]uint32, n), make([]uint32, n)
	order := make([]int, n)
	for i := range order {
		order[i] = i
		if s.scatter {
			order[i] = n - 1 - i
		}
	}
	for _, i := range order {
		if s.scatter {
			out = append(out, 0xEE, 0xEE, 0xEE) // a gap no strip covers
		}
		lo, hi := i*rows*stride, min((i+1)*rows, s.h)*stride
		offsets[i], counts[i] = uint32(len(out)), uint32(hi-lo)
		out = append(out, s.pix[lo:hi]...)
	}
	if len(out)%2 == 1 {
		out = append(out, 0)
	}
	type entry struct {
		tag, typ uint16
		vals     []uint32
	}
	bits := make([]uint32, s.samples)
	for i := range bits {
		bits[i] = 8
	}
	entries := []entry{
		{tagImageWidth, 4, []uint32{uint32(s.w)}},
		{tagImageLength, 4, []uint32{uint32(s.h)}},
		{tagBitsPerSample, 3, bits},
		{tagCompression, 3, []uint32{1}},
		{tagPhotometric, 3, []uint32{2}},
		{tagStripOffsets, 4, offsets},
		{tagSamplesPerPixel, 3, []uint32{uint32(s.samples)}},
		{tagRowsPerStrip, 4, []uint32{uint32(rows)}},
		{tagStripByteCounts, 4, counts},
		{tagPlanarConfig, 3, []uint32{1}},
	}
	if s.extra != 0 {
		entries = append(entries, entry{tagExtraSamples, 3, []uint32{uint32(s.extra)}})
	}
	// Out-of-line arrays first, then the IFD pointing at them.
	at := make([]uint32, len(entries))
	for i, e := range entries {
		size := 2 * len(e.vals)
		if e.typ == 4 {
			size = 4 * len(e.vals)
		}
		if size <= 4 {
			continue
		}
		at[i] = uint32(len(out))
		for _, v := range e.vals {
			if e.typ == 4 {
				out = bo.AppendUint32(out, v)
			} else {
				out = bo.AppendUint16(out, uint16(v))
			}
		}
	}
	bo.PutUint32(out[4:], uint32(len(out)))
	out = bo.AppendUint16(out, uint16(len(entries)))
	for i, e := range entries {
		out = bo.AppendUint16(out, e.tag)
		out = bo.AppendUint16(out, e.typ)
		out = bo.AppendUint32(out, uint32(len(e.vals)))
		if at[i] != 0 {
			out = bo.AppendUint32(out, at[i])
			continue
		}
		var v [4]byte
		if e.typ == 4 {
			bo.PutUint32(v[:], e.vals[0])
		} else {
			for j, x := range e.vals {
				bo.PutUint16(v[2*j:], uint16(x))
			}
		}
		out = append(out, v[:]...)
	}
	return bo.AppendUint32(out, 0) // no next IFD
}

// tiffPix returns w*h*samples bytes of a map-like picture: gradients, a
// grid of lines and, with 4 samples, alpha that varies (premultiplied
// when assoc, so that the colour never exceeds the alpha).
func tiffPix(w, h, samples int, assoc bool) []byte {
	pix := make([]byte, 0, w*h*samples)
	for y := range h {
		for x := range w {
			c := []byte{uint8(x * 7), uint8(y * 5), uint8(x*y + 40)}
			if x%5 == 0 || y%4 == 0 {
				c = []byte{30, 30, 30}
			}
			pix = append(pix, c...)
			if samples == 4 {
				a := uint8(x*3 + y*11)
				if assoc {
					for i := range 3 {
						pix[len(pix)-3+i] = uint8(int(pix[len(pix)-3+i]) * int(a) / 255)
					}
				}
				pix = append(pix, a)
			}
		}
	}
	return pix
}

func xTIFF(tb testing.TB, m image.Image, c tiff.CompressionType) []byte {
	tb.Helper()
	var b bytes.Buffer
	if err := tiff.Encode(&b, m, &tiff.Options{Compression: c}); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// tiffCorpus returns TIFFs of every kind the fast path reads, hand-built
// as map servers write them, and ones golang.org/x/image/tiff writes
// (RGBA, NRGBA, grey, paletted; uncompressed and deflated), which take
// the fallback.
func tiffCorpus(tb testing.TB) map[string][]byte {
	c := map[string][]byte{}
	for _, be := range []bool{false, true} {
		bo := "le"
		if be {
			bo = "be"
		}
		c[bo+"/rgb-one-strip"] = buildTIFF(tiffSpec{be: be, w: 13, h: 9, samples: 3, pix: tiffPix(13, 9, 3, false)})
		c[bo+"/rgb-strips"] = buildTIFF(tiffSpec{be: be, w: 13, h: 9, samples: 3, rowsPerStrip: 2, pix: tiffPix(13, 9, 3, false)})
		c[bo+"/rgb-scattered"] = buildTIFF(tiffSpec{be: be, w: 13, h: 9, samples: 3, rowsPerStrip: 4, scatter: true, pix: tiffPix(13, 9, 3, false)})
		c[bo+"/rgba-assoc"] = buildTIFF(tiffSpec{be: be, w: 11, h: 6, samples: 4, extra: 1, rowsPerStrip: 5, pix: tiffPix(11, 6, 4, true)})
		c[bo+"/rgba-unassoc"] = buildTIFF(tiffSpec{be: be, w: 11, h: 6, samples: 4, extra: 2, pix: tiffPix(11, 6, 4, false)})
	}
	imgs := testImages()
	for _, name := range []string{"rgb", "rgba", "gray", "paletted017"} {
		sub := subImage(imgs[name], 3, 2, 9, 7)
		c["x/"+name+"-none"] = xTIFF(tb, sub, tiff.Uncompressed)
		c["x/"+name+"-deflate"] = xTIFF(tb, sub, tiff.Deflate)
	}
	nrgba := image.NewNRGBA(image.Rect(0, 0, 7, 5))
	for i := range nrgba.Pix {
		nrgba.Pix[i] = uint8(i * 13)
	}
	c["x/nrgba-none"] = xTIFF(tb, nrgba, tiff.Uncompressed)
	// A real answer: MapServer 8's GDAL/GTiff output format (IMAGEMODE
	// RGB) for a 64² GetMap of the test WMS (infra/wms).
	real, err := os.ReadFile("testdata/mapserver-gtiff-64.tif")
	if err != nil {
		tb.Fatal(err)
	}
	c["mapserver/rgb-strips"] = real
	return c
}

// within reports whether s lies inside data's backing array.
func within(s, data []byte) bool {
	if len(s) == 0 || len(data) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&s[0])), uintptr(unsafe.Pointer(&data[0]))
	return p >= lo && p < lo+uintptr(len(data))
}

// TestDecodeTIFFMatchesXImage decodes every file of the corpus with
// Decode and with golang.org/x/image/tiff and wants the same image (an
// *RGB where x/image gives an opaque *image.RGBA), over the answer's own
// bytes exactly for contiguous RGB strips.
func TestDecodeTIFFMatchesXImage(t *testing.T) {
	for name, data := range tiffCorpus(t) {
		t.Run(name, func(t *testing.T) {
			want, err := tiff.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("x/image/tiff: %v", err)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !sameDecoded(got, want) {
				t.Fatalf("Decode gives %T %v, x/image/tiff %T %v, or the pixels differ", got, got.Bounds(), want, want.Bounds())
			}
			rgb, isRGB := got.(*RGB)
			zeroCopy := isRGB && within(rgb.Pix, data)
			if wantZero := strings.HasSuffix(name, "rgb-one-strip") || strings.HasSuffix(name, "rgb-strips"); zeroCopy != wantZero {
				t.Errorf("pixels over the answer's bytes: %v, want %v", zeroCopy, wantZero)
			}
			if w, h, ok := Size(data); !ok || w != want.Bounds().Dx() || h != want.Bounds().Dy() {
				t.Errorf("Size = %d, %d, %v; want %v", w, h, ok, want.Bounds().Size())
			}
			Release(got)
			// Released and decoded again (into a recycled buffer when it
			// was copied): still the same.
			again, err := Decode(data)
			if err != nil || !sameDecoded(again, want) {
				t.Fatalf("second Decode: %v, or the pixels differ", err)
			}
			Release(again)
		})
	}
}

// TestDecodeTIFFBroken wants an error, never a panic or an image, for
// every cut of a TIFF and for IFDs that point outside the file, declare
// strips too short for the rows, too few strips or too many pixels.
func TestDecodeTIFFBroken(t *testing.T) {
	for name, data := range tiffCorpus(t) {
		for n := range len(data) {
			img, err := Decode(data[:n])
			if err == nil {
				// A cut after the last byte any strip or tag uses is whole.
				if _, xerr := tiff.Decode(bytes.NewReader(data[:n])); xerr != nil {
					t.Fatalf("%s cut to %d of %d bytes: Decode accepts what x/image/tiff rejects (%v)", name, n, len(data), xerr)
				}
				Release(img)
			}
		}
	}
	spec := tiffSpec{w: 8, h: 6, samples: 3, rowsPerStrip: 2, pix: tiffPix(8, 6, 3, false)}
	good := buildTIFF(spec)
	bo := binary.LittleEndian
	ifd := int(bo.Uint32(good[4:]))
	// entry returns the offset of the IFD entry of tag.
	entry := func(data []byte, tag uint16) int {
		for i := range int(bo.Uint16(data[ifd:])) {
			if at := ifd + 2 + 12*i; bo.Uint16(data[at:]) == tag {
				return at
			}
		}
		t.Fatalf("no tag %d", tag)
		return 0
	}
	mutate := func(f func(d []byte)) []byte {
		d := bytes.Clone(good)
		f(d)
		return d
	}
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"IFD outside", "IFD offset", mutate(func(d []byte) { bo.PutUint32(d[4:], uint32(len(d)+10)) })},
		{"IFD in header", "IFD offset", mutate(func(d []byte) { bo.PutUint32(d[4:], 2) })},
		{"entries past end", "EOF", mutate(func(d []byte) { bo.PutUint16(d[ifd:], 5000) })},
		{"no width", "no image size", mutate(func(d []byte) { bo.PutUint32(d[entry(d, tagImageWidth)+8:], 0) })},
		{"huge", "too large", mutate(func(d []byte) {
			bo.PutUint32(d[entry(d, tagImageWidth)+8:], 1<<16)
			bo.PutUint32(d[entry(d, tagImageLength)+8:], 1<<16)
		})},
		{"strip array outside", "EOF", mutate(func(d []byte) { bo.PutUint32(d[entry(d, tagStripOffsets)+8:], uint32(len(d)-4)) })},
		{"count beyond file", "values", mutate(func(d []byte) { bo.PutUint32(d[entry(d, tagStripOffsets)+4:], uint32(len(d)+1)) })},
		{"strip too short", "too short", mutate(func(d []byte) {
			at := int(bo.Uint32(d[entry(d, tagStripByteCounts)+8:]))
			bo.PutUint32(d[at+4:], 5)
		})},
		{"strip outside", "cut", mutate(func(d []byte) {
			at := int(bo.Uint32(d[entry(d, tagStripOffsets)+8:]))
			bo.PutUint32(d[at+8:], uint32(len(d)-10))
		})},
		{"too few strips", "strips for", mutate(func(d []byte) { bo.PutUint32(d[entry(d, tagRowsPerStrip)+8:], 1) })},
	} {
		img, err := Decode(tc.data)
		if err == nil || img != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Decode = %T, %v; want an error containing %q", tc.name, img, err, tc.want)
		}
	}
}

// TestDecodeTIFFColours checks a few pixels by value, so that the
// differential test cannot pass by both decoders being wrong alike.
func TestDecodeTIFFColours(t *testing.T) {
	pix := []byte{
		255, 0, 0, 0, 255, 0,
		0, 0, 255, 10, 20, 30,
	}
	for _, be := range []bool{false, true} {
		img, err := Decode(buildTIFF(tiffSpec{be: be, w: 2, h: 2, samples: 3, rowsPerStrip: 1, pix: pix}))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			x, y int
			c    color.RGBA
		}{{0, 0, color.RGBA{255, 0, 0, 255}}, {1, 0, color.RGBA{0, 255, 0, 255}}, {0, 1, color.RGBA{0, 0, 255, 255}}, {1, 1, color.RGBA{10, 20, 30, 255}}} {
			if got := color.RGBAModel.Convert(img.At(p.x, p.y)); got != p.c {
				t.Errorf("be=%v: pixel %d,%d = %v, want %v", be, p.x, p.y, got, p.c)
			}
		}
	}
}
