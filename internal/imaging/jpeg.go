package imaging

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"sync"
)

// jpegEncoder writes baseline JPEGs with image/jpeg. Tiles that image/jpeg
// reads quickly (*image.YCbCr, *image.Gray, opaque *image.RGBA) go to it as
// they are; an *RGB is expanded into a pooled *image.RGBA (the same pixels:
// the same JPEG as of the *image.RGBA), and any other tile is composited
// over the background into it, since image/jpeg reads other types pixel by
// pixel through the image.Image interface.
type jpegEncoder struct {
	quality int
	bg      color.NRGBA
	scratch sync.Pool // of *jpegState
}

type jpegState struct {
	rgba image.RGBA
	src  rowSource
	out  jpegWriter
}

// jpegWriter gives image/jpeg the byte writer with Flush it looks for, so
// it writes straight into the buffer instead of through a new bufio.Writer.
type jpegWriter struct{ b []byte }

func (w *jpegWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *jpegWriter) WriteByte(c byte) error {
	w.b = append(w.b, c)
	return nil
}

func (w *jpegWriter) Flush() error { return nil }

func (e *jpegEncoder) ContentType() string { return "image/jpeg" }

// Encode implements Encoder.
func (e *jpegEncoder) Encode(img image.Image) ([]byte, error) {
	b := img.Bounds()
	if b.Empty() {
		return nil, errors.New("imaging: encode jpeg: empty image")
	}
	if int64(b.Dx())*int64(b.Dy()) > maxPixels {
		return nil, fmt.Errorf("imaging: encode jpeg: %dx%d image is too large", b.Dx(), b.Dy())
	}
	st, _ := e.scratch.Get().(*jpegState)
	if st == nil {
		st = new(jpegState)
	}
	defer func() {
		st.src.img = nil
		e.scratch.Put(st)
	}()
	var src image.Image
	switch m := img.(type) {
	case *image.YCbCr, *image.Gray:
		src = m
	case *RGB:
		src = st.fromRGB(m)
	case *image.RGBA:
		if isOpaque(m) {
			src = m
		} else {
			src = st.flattenRGBA(m, e.bg)
		}
	default:
		src = st.flatten(img, e.bg)
	}
	buf := getBuf()
	st.out.b = *buf
	err := jpeg.Encode(&st.out, src, &jpeg.Options{Quality: e.quality})
	var out []byte
	if err == nil {
		out = make([]byte, len(st.out.b))
		copy(out, st.out.b)
	}
	*buf, st.out.b = st.out.b, nil
	putBuf(buf)
	if err != nil {
		return nil, fmt.Errorf("imaging: encode jpeg: %w", err)
	}
	return out, nil
}

// canvas returns the pooled RGBA image resized to w×h.
func (st *jpegState) canvas(w, h int) *image.RGBA {
	n := 4 * w * h
	if cap(st.rgba.Pix) < n {
		st.rgba.Pix = make([]byte, n)
	}
	st.rgba.Pix = st.rgba.Pix[:n]
	st.rgba.Stride = 4 * w
	st.rgba.Rect = image.Rect(0, 0, w, h)
	return &st.rgba
}

// fromRGB copies an RGB image into the canvas.
func (st *jpegState) fromRGB(m *RGB) *image.RGBA {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	dst := st.canvas(w, h)
	for y := range h {
		expandRGB(dst.Pix[y*dst.Stride:y*dst.Stride+4*w], m.Pix[y*m.Stride:y*m.Stride+3*w])
	}
	return dst
}

// flatten composites img over bg (whose alpha is ignored) into the canvas.
func (st *jpegState) flatten(img image.Image, bg color.NRGBA) *image.RGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	dst := st.canvas(w, h)
	st.src.reset(img, false)
	bgc := [3]uint32{uint32(bg.R), uint32(bg.G), uint32(bg.B)}
	for y := range h {
		row := st.src.row(y)
		d := dst.Pix[y*dst.Stride : y*dst.Stride+4*w]
		for i := 0; i+4 <= len(row); i += 4 {
			s := row[i : i+4 : i+4]
			o := d[i : i+4 : i+4]
			switch a := uint32(s[3]); a {
			case 0xff:
				o[0], o[1], o[2] = s[0], s[1], s[2]
			case 0:
				o[0], o[1], o[2] = uint8(bgc[0]), uint8(bgc[1]), uint8(bgc[2])
			default:
				for k := range 3 {
					o[k] = uint8((uint32(s[k])*a + bgc[k]*(255-a) + 127) / 255)
				}
			}
			o[3] = 0xff
		}
	}
	return dst
}

// flattenRGBA composites a premultiplied image over bg into the canvas.
func (st *jpegState) flattenRGBA(m *image.RGBA, bg color.NRGBA) *image.RGBA {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	dst := st.canvas(w, h)
	bgc := [3]uint32{uint32(bg.R), uint32(bg.G), uint32(bg.B)}
	for y := range h {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		d := dst.Pix[y*dst.Stride : y*dst.Stride+4*w]
		for i := 0; i+4 <= len(row); i += 4 {
			s := row[i : i+4 : i+4]
			o := d[i : i+4 : i+4]
			t := 255 - uint32(s[3])
			for k := range 3 {
				o[k] = uint8(min(255, uint32(s[k])+(bgc[k]*t+127)/255))
			}
			o[3] = 0xff
		}
	}
	return dst
}
