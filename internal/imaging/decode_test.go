package imaging

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"reflect"
	"strings"
	"testing"
)

// pngChunk is one chunk of a PNG file, for tests that take files apart.
type pngChunk struct {
	typ  string
	data []byte
}

// splitPNG returns the chunks of a well-formed PNG.
func splitPNG(tb testing.TB, data []byte) []pngChunk {
	tb.Helper()
	var out []pngChunk
	for pos := 8; pos < len(data); {
		n := int(binary.BigEndian.Uint32(data[pos:]))
		out = append(out, pngChunk{string(data[pos+4 : pos+8]), data[pos+8 : pos+8+n]})
		pos += 12 + n
	}
	return out
}

// joinPNG assembles chunks into a PNG file with correct CRCs.
func joinPNG(chunks []pngChunk) []byte {
	out := []byte(pngSignature)
	for _, c := range chunks {
		out = binary.BigEndian.AppendUint32(out, uint32(len(c.data)))
		start := len(out)
		out = append(out, c.typ...)
		out = append(out, c.data...)
		out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(out[start:]))
	}
	return out
}

// rechunkIDAT splits the image data of a PNG into IDAT chunks of n bytes,
// with an empty IDAT chunk in the middle for good measure.
func rechunkIDAT(tb testing.TB, data []byte, n int) []byte {
	var z []byte
	var before, after []pngChunk
	for _, c := range splitPNG(tb, data) {
		switch {
		case c.typ == "IDAT":
			z = append(z, c.data...)
		case z == nil:
			before = append(before, c)
		default:
			after = append(after, c)
		}
	}
	out := before
	for i := 0; len(z) > 0; i++ {
		k := min(n, len(z))
		out = append(out, pngChunk{"IDAT", z[:k]})
		z = z[k:]
		if i == 1 {
			out = append(out, pngChunk{"IDAT", nil})
		}
	}
	return joinPNG(append(out, after...))
}

// stdPNG encodes with image/png.
func stdPNG(tb testing.TB, img image.Image, level png.CompressionLevel) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: level}).Encode(&buf, img); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// testImages returns small images of every kind a PNG can hold, with
// content that makes image/png's encoder use all five row filters.
func testImages() map[string]image.Image {
	m := mapLike(67, 45, 7, false)
	tr := mapLike(67, 45, 8, true)
	gray := image.NewGray(m.Rect)
	gray16 := image.NewGray16(m.Rect)
	rgba64 := image.NewRGBA64(m.Rect)
	nrgba64 := image.NewNRGBA64(m.Rect)
	for y := range m.Rect.Dy() {
		for x := range m.Rect.Dx() {
			c := m.NRGBAAt(x, y)
			gray.SetGray(x, y, color.Gray{c.G})
			gray16.SetGray16(x, y, color.Gray16{uint16(c.G)<<8 | uint16(c.R)})
			rgba64.Set(x, y, c)
			nrgba64.Set(x, y, tr.NRGBAAt(x, y))
		}
	}
	imgs := map[string]image.Image{
		"rgb":     toRGBAImage(m),
		"rgba":    tr,
		"gray":    gray,
		"gray16":  gray16,
		"rgb16":   rgba64,
		"rgba16":  nrgba64,
		"uniform": image.NewNRGBA(image.Rect(0, 0, 300, 200)),
	}
	for _, n := range []int{2, 4, 16, 17, 256} {
		p := image.NewPaletted(m.Rect, nil)
		for i := range n {
			p.Palette = append(p.Palette, color.NRGBA{uint8(i * 37), uint8(i * 91), uint8(255 - i), uint8(255 - i%3*100)})
		}
		for i := range p.Pix {
			p.Pix[i] = uint8((i*i/7 + i/67) % n)
		}
		imgs["paletted"+string(rune('0'+n/100))+string(rune('0'+n/10%10))+string(rune('0'+n%10))] = p
	}
	return imgs
}

// sameDecoded reports whether Decode's image got is what image/png's want
// is: the same type, pixels and palette, except that Decode gives an *RGB
// where image/png gives an opaque *image.RGBA, then with the same pixels.
func sameDecoded(got, want image.Image) bool {
	rgb, ok := got.(*RGB)
	if !ok {
		return reflect.DeepEqual(got, want)
	}
	m, ok := want.(*image.RGBA)
	if !ok || rgb.Rect != m.Rect {
		return false
	}
	for y := m.Rect.Min.Y; y < m.Rect.Max.Y; y++ {
		for x := m.Rect.Min.X; x < m.Rect.Max.X; x++ {
			if rgb.RGBAAt(x, y) != m.RGBAAt(x, y) {
				return false
			}
		}
	}
	return true
}

// pngCorpus returns PNG files of every kind, written by image/png at
// several levels and the way MapServer writes them, with the image data
// in one IDAT chunk or many.
func pngCorpus(tb testing.TB) map[string][]byte {
	corpus := map[string][]byte{}
	for name, img := range testImages() {
		for _, l := range []struct {
			name  string
			level png.CompressionLevel
		}{{"none", png.NoCompression}, {"fast", png.BestSpeed}, {"best", png.BestCompression}} {
			data := stdPNG(tb, img, l.level)
			corpus[name+"/"+l.name] = data
			corpus[name+"/"+l.name+"/chunked"] = rechunkIDAT(tb, data, 97)
		}
	}
	corpus["mapserver/rgb"] = mapServerPNG(tb, mapLike(300, 200, 3, false), true)
	corpus["mapserver/rgba"] = mapServerPNG(tb, mapLike(300, 200, 4, true), false)
	return corpus
}

func TestDecodeMatchesImagePNG(t *testing.T) {
	for name, data := range pngCorpus(t) {
		t.Run(name, func(t *testing.T) {
			want, err := png.Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			if !sameDecoded(got, want) {
				t.Errorf("Decode gives %T %v, image/png %T %v, or their pixels or palettes differ", got, got.Bounds(), want, want.Bounds())
			}
		})
	}
}

// TestDecodeEdgeCases runs PNGs taken apart and put together again
// through both decoders: they must agree on success and on the result.
func TestDecodeEdgeCases(t *testing.T) {
	rgb := stdPNG(t, testImages()["rgb"], png.BestCompression)
	pal := stdPNG(t, testImages()["paletted017"], png.BestSpeed)
	edit := func(data []byte, f func([]pngChunk) []pngChunk) []byte {
		return joinPNG(f(splitPNG(t, data)))
	}
	insertAfter := func(typ string, c pngChunk) func([]pngChunk) []pngChunk {
		return func(cs []pngChunk) []pngChunk {
			for i := range cs {
				if cs[i].typ == typ {
					return append(cs[:i+1], append([]pngChunk{c}, cs[i+1:]...)...)
				}
			}
			return cs
		}
	}
	ihdr := func(f func(b []byte)) func([]pngChunk) []pngChunk {
		return func(cs []pngChunk) []pngChunk {
			b := bytes.Clone(cs[0].data)
			f(b)
			cs[0].data = b
			return cs
		}
	}
	idat := func(f func(z []byte) []byte) func([]pngChunk) []pngChunk {
		return func(cs []pngChunk) []pngChunk {
			for i := range cs {
				if cs[i].typ == "IDAT" {
					cs[i].data = f(bytes.Clone(cs[i].data))
				}
			}
			return cs
		}
	}
	cases := map[string][]byte{
		"unknown chunks":    edit(rgb, insertAfter("IHDR", pngChunk{"tEXt", []byte("Software\x00test")})),
		"chunk before IHDR": joinPNG(append([]pngChunk{{"zzZz", []byte("x")}}, splitPNG(t, rgb)...)),
		"trailing IDAT":     edit(rgb, insertAfter("IDAT", pngChunk{"IDAT", []byte("garbage")})),
		"data after IEND":   append(bytes.Clone(rgb), "trailing garbage"...),
		"rgb with tRNS":     edit(rgb, insertAfter("IHDR", pngChunk{"tRNS", []byte{0, 200, 0, 210, 0, 180}})),
		"rgb with PLTE":     edit(rgb, insertAfter("IHDR", pngChunk{"PLTE", []byte{1, 2, 3}})),
		"palette with tRNS": edit(pal, insertAfter("PLTE", pngChunk{"tRNS", []byte{0, 128, 255, 7}})),
		"long tRNS":         edit(pal, insertAfter("PLTE", pngChunk{"tRNS", bytes.Repeat([]byte{9}, 40)})),
		"interlace flag":    edit(rgb, ihdr(func(b []byte) { b[12] = 1 })),
		"bad interlace":     edit(rgb, ihdr(func(b []byte) { b[12] = 2 })),
		"bad colour type":   edit(rgb, ihdr(func(b []byte) { b[9] = 5 })),
		"bad depth":         edit(rgb, ihdr(func(b []byte) { b[8] = 3 })),
		"zero width":        edit(rgb, ihdr(func(b []byte) { binary.BigEndian.PutUint32(b, 0) })),
		"huge":              edit(rgb, ihdr(func(b []byte) { binary.BigEndian.PutUint32(b, 1<<20) })),
		"IHDR twice":        edit(rgb, insertAfter("IHDR", splitPNG(t, rgb)[0])),
		"PLTE after IDAT":   edit(pal, insertAfter("IDAT", pngChunk{"PLTE", []byte{1, 2, 3}})),
		"no PLTE":           edit(pal, func(cs []pngChunk) []pngChunk { return append(cs[:1], cs[2:]...) }),
		"no IEND":           edit(rgb, func(cs []pngChunk) []pngChunk { return cs[:len(cs)-1] }),
		"IEND with data":    edit(rgb, func(cs []pngChunk) []pngChunk { cs[len(cs)-1].data = []byte{1}; return cs }),
		"bad zlib header":   edit(rgb, idat(func(z []byte) []byte { z[0] = 0x79; return z })),
		"zlib dictionary":   edit(rgb, idat(func(z []byte) []byte { z[1] |= 0x20; z[1] += byte(31 - (uint(z[0])<<8|uint(z[1]))%31); return z })),
		"bad adler":         edit(rgb, idat(func(z []byte) []byte { z[len(z)-1]++; return z })),
		"no adler":          edit(rgb, idat(func(z []byte) []byte { return z[:len(z)-4] })),
		"data after stream": edit(rgb, idat(func(z []byte) []byte { return append(z, 0, 0, 0, 0) })),
		"short stream":      edit(rgb, idat(func(z []byte) []byte { return z[:len(z)/2] })),
		"bad filter byte":   edit(stdPNG(t, testImages()["uniform"], png.NoCompression), idat(func(z []byte) []byte { z[7] = 9; return z })),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			want, wantErr := png.Decode(bytes.NewReader(data))
			got, err := Decode(data)
			switch {
			case err != nil && wantErr != nil:
				var nie *NotImageError
				if errors.As(err, &nie) {
					t.Errorf("Decode error %v is a NotImageError", err)
				}
			case err != nil:
				if name != "huge" {
					t.Errorf("Decode error %v, image/png decodes it", err)
				}
			case wantErr != nil:
				t.Errorf("Decode succeeds, image/png errs: %v", wantErr)
			case !sameDecoded(got, want):
				t.Errorf("Decode gives %T, image/png %T, or the pixels differ", got, want)
			}
		})
	}
}

func TestDecodeTruncated(t *testing.T) {
	data := stdPNG(t, testImages()["rgb"], png.BestSpeed)
	for _, n := range []int{0, 1, 7, 8, 12, 20, 33, 40, 41, len(data) / 2, len(data) - 13, len(data) - 12, len(data) - 1} {
		_, err := Decode(data[:n])
		if err == nil {
			t.Errorf("Decode of %d of %d bytes succeeds", n, len(data))
			continue
		}
		var nie *NotImageError
		if errors.As(err, &nie) != (n < 8) {
			t.Errorf("Decode of %d bytes: %v (a NotImageError only before the signature is complete)", n, err)
		}
	}
	// A flipped bit anywhere is caught by a CRC.
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 4
	if _, err := Decode(bad); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("Decode of a corrupt PNG: %v, want a checksum error", err)
	}
}

func TestDecodeJPEGAndGIF(t *testing.T) {
	src := toRGBAImage(mapLike(64, 48, 5, false))
	var jb bytes.Buffer
	if err := jpeg.Encode(&jb, src, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	img, err := Decode(jb.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := img.(*image.YCbCr); !ok || img.Bounds() != src.Rect {
		t.Errorf("JPEG decodes to %T %v, want *image.YCbCr %v", img, img.Bounds(), src.Rect)
	}
	if _, err := Decode(jb.Bytes()[:jb.Len()/2]); err == nil {
		t.Error("Decode of a truncated JPEG succeeds")
	}

	var gb bytes.Buffer
	if err := gif.Encode(&gb, src, nil); err != nil {
		t.Fatal(err)
	}
	img, err = Decode(gb.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := img.(*image.Paletted); !ok || img.Bounds() != src.Rect {
		t.Errorf("GIF decodes to %T %v, want *image.Paletted %v", img, img.Bounds(), src.Rect)
	}
}

// notImageCases are answers that are no image: what Decode's NotImageError
// says of each.
var notImageCases = []struct {
	name     string
	body     string
	wantCT   string // prefix
	wantCode string
	wantMsg  string
}{
	{
		name: "MapServer WMS 1.1.1 exception",
		body: `<?xml version='1.0' encoding="UTF-8" standalone="no" ?>
<!DOCTYPE ServiceExceptionReport SYSTEM "http://schemas.opengis.net/wms/1.1.1/exception_1_1_1.dtd">
<ServiceExceptionReport version="1.1.1">
<ServiceException code="LayerNotDefined">
msWMSLoadGetMapParams(): WMS server error. Invalid layer(s) given in the LAYERS parameter. A layer might be disabled for this request. Check wms/ows_enable_request settings.
</ServiceException>
</ServiceExceptionReport>`,
		wantCT:   "text/xml",
		wantCode: "LayerNotDefined",
		wantMsg:  "msWMSLoadGetMapParams(): WMS server error. Invalid layer(s) given in the LAYERS parameter. A layer might be disabled for this request. Check wms/ows_enable_request settings.",
	},
	{
		name: "WMS 1.3 exception with namespace, entities and CDATA",
		body: `<?xml version="1.0" encoding="ISO-8859-1"?>
<ogc:ServiceExceptionReport version="1.3.0" xmlns:ogc="http://www.opengis.net/ogc">
  <ogc:ServiceException code='InvalidCRS' locator="crs">
    CRS &quot;EPSG:1234&quot; &amp; <![CDATA[bbox <0,0>]]>
       not supported
  </ogc:ServiceException>
  <ogc:ServiceException>second</ogc:ServiceException>
</ogc:ServiceExceptionReport>`,
		wantCT:   "text/xml",
		wantCode: "InvalidCRS",
		wantMsg:  `CRS "EPSG:1234" & bbox <0,0> not supported`,
	},
	{
		name: "OWS exception report",
		body: `<?xml version="1.0" encoding="UTF-8"?>
<ows:ExceptionReport xmlns:ows="http://www.opengis.net/ows/1.1" version="1.1.0">
  <ows:Exception exceptionCode="TileOutOfRange" locator="TILEROW">
    <ows:ExceptionText>TileRow 99 is out of range</ows:ExceptionText>
  </ows:Exception>
</ows:ExceptionReport>`,
		wantCT:   "text/xml",
		wantCode: "TileOutOfRange",
		wantMsg:  "TileRow 99 is out of range",
	},
	{
		name:    "HTML error page",
		body:    "<html>\r\n<head><title>502 Bad Gateway</title><style>body{color:red}</style></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
		wantCT:  "text/html",
		wantMsg: "502 Bad Gateway 502 Bad Gateway nginx",
	},
	{
		name:    "plain text",
		body:    "Internal Server Error\n\tcheck the\x1blogs\n",
		wantCT:  "text/plain",
		wantMsg: "Internal Server Error check the logs",
	},
	{
		name:    "binary",
		body:    "\x00\x01\x02\x03\x04garbage\xff\xfe",
		wantCT:  "application/octet-stream",
		wantMsg: "14 bytes of binary data",
	},
	{
		name:    "empty",
		body:    "",
		wantMsg: "empty body",
	},
	{
		name:    "long text is cut",
		body:    strings.Repeat("word ", 200),
		wantCT:  "text/plain",
		wantMsg: strings.TrimSpace(strings.Repeat("word ", 60)) + "…",
	},
}

func TestDecodeNotImage(t *testing.T) {
	for _, tt := range notImageCases {
		t.Run(tt.name, func(t *testing.T) {
			img, err := Decode([]byte(tt.body))
			if img != nil {
				t.Errorf("Decode returns an image: %T", img)
			}
			var nie *NotImageError
			if !errors.As(err, &nie) {
				t.Fatalf("Decode error %v (%T), want a *NotImageError", err, err)
			}
			if !strings.HasPrefix(nie.ContentType, tt.wantCT) || (tt.wantCT == "" && nie.ContentType != "") {
				t.Errorf("ContentType %q, want %q…", nie.ContentType, tt.wantCT)
			}
			if nie.Code != tt.wantCode {
				t.Errorf("Code %q, want %q", nie.Code, tt.wantCode)
			}
			if nie.Message != tt.wantMsg {
				t.Errorf("Message\n%q\nwant\n%q", nie.Message, tt.wantMsg)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("Error() spans lines: %q", err.Error())
			}
		})
	}
	// Images of formats Decode does not read are no NotImageError.
	_, err := Decode([]byte("RIFF\x00\x00\x00\x00WEBPVP8 "))
	var nie *NotImageError
	if err == nil || errors.As(err, &nie) {
		t.Errorf("Decode of a WebP: %v, want an unsupported-format error", err)
	}
}

// TestSize: the declared size of PNG, JPEG and GIF headers, read without
// decoding; anything else is not known.
func TestSize(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 37, 21))
	var p, j, g bytes.Buffer
	if err := png.Encode(&p, img); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&j, img, nil); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&g, img, nil); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"png": p.Bytes(), "jpeg": j.Bytes(), "gif": g.Bytes()} {
		if w, h, ok := Size(data); !ok || w != 37 || h != 21 {
			t.Errorf("%s: got %d×%d (%v), want 37×21", name, w, h, ok)
		}
		if _, _, ok := Size(data[:10]); ok {
			t.Errorf("%s cut to 10 bytes: got a size, want none", name)
		}
	}
	if _, _, ok := Size([]byte("<ServiceExceptionReport/>")); ok {
		t.Error("an exception report: got a size, want none")
	}
}
