package imaging

import (
	"image"
	"math/bits"
	"sync"
)

// Release hands the pixel buffer of an image Decode returned back to
// Decode, to hold the pixels of a later image of about the same size
// instead of allocating a new one: seeding decodes one metatile after
// another, and without Release each is a few megabytes of garbage.
//
// The caller must be done with img and with every sub-image of it (such
// as the tiles Tiles or SubImage cut from it): Release sets img's Pix to
// nil, but the sub-images still see the buffer, which the next Decode
// overwrites. Encoded tiles are fresh slices and stay valid.
//
// Release ignores nil, sub-images, images already released, and images it
// does not know how to reuse (such as a JPEG's *image.YCbCr). It cannot
// tell the *image.NRGBA, *image.RGBA, *image.Gray and *image.Paletted that
// Decode returns from ones made elsewhere, and takes the buffer of any
// whole one: pass it only images from Decode. Release is optional: an
// image not released is garbage collected as usual.
func Release(img image.Image) {
	switch m := img.(type) {
	case *RGB:
		if m != nil && m.buf != nil {
			putPix(m.buf)
			m.buf, m.Pix = nil, nil
		}
	case *image.NRGBA:
		if m != nil && whole(m.Pix, m.Stride, m.Rect, 4) {
			putPixSlice(m.Pix)
			m.Pix = nil
		}
	case *image.RGBA:
		if m != nil && whole(m.Pix, m.Stride, m.Rect, 4) {
			putPixSlice(m.Pix)
			m.Pix = nil
		}
	case *image.Gray:
		if m != nil && whole(m.Pix, m.Stride, m.Rect, 1) {
			putPixSlice(m.Pix)
			m.Pix = nil
		}
	case *image.Paletted:
		if m != nil && whole(m.Pix, m.Stride, m.Rect, 1) {
			putPixSlice(m.Pix)
			m.Pix = nil
		}
	}
}

// whole reports whether pix is the pixel buffer of a whole image as
// Decode returns it (origin at 0,0, rows packed), not a sub-image.
func whole(pix []byte, stride int, r image.Rectangle, bpp int) bool {
	return r.Min == (image.Point{}) && !r.Empty() && stride == bpp*r.Dx() && len(pix) == stride*r.Dy()
}

// The pixel buffer pool: buffers sorted into size classes, 8 per power of
// two (so a buffer is at most 1/8 larger than asked for), from 32 KiB to
// 64 MiB; smaller and larger ones are not pooled. A buffer is taken from
// the class that holds the size asked for (all of its buffers are large
// enough) and returned to the largest class it holds.
const (
	poolMinShift = 16 // classes of sizes above 2^(poolMinShift-1)
	poolMaxShift = 26 // 64 MiB
	poolSteps    = 8
)

var pixPools [(poolMaxShift - poolMinShift + 1) * poolSteps]sync.Pool // of *[]byte

// pixClass returns the smallest size class of at least n bytes and its
// size; ok is false when n is outside the pooled sizes.
func pixClass(n int) (class, size int, ok bool) {
	if n <= 1<<(poolMinShift-1) || n > 1<<poolMaxShift {
		return 0, 0, false
	}
	s := bits.Len(uint(n - 1)) // 2^(s-1) < n <= 2^s
	step := 1 << (s - 4)
	m := (n + step - 1) / step // 9..16 steps of 2^(s-4)
	return (s-poolMinShift)*poolSteps + m - 9, m * step, true
}

// getPix returns a buffer of at least n bytes (n of them in its length),
// from the pool when one is free. Its contents are stale: the caller
// overwrites every byte it uses.
func getPix(n int) *[]byte {
	class, size, ok := pixClass(n)
	if !ok {
		b := make([]byte, n)
		return &b
	}
	if b, _ := pixPools[class].Get().(*[]byte); b != nil {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, size)
	return &b
}

// putPix returns a buffer of getPix (or any buffer no longer referenced)
// to the pool.
func putPix(b *[]byte) {
	c := cap(*b)
	class, size, ok := pixClass(c)
	if !ok {
		return
	}
	if size > c { // the class above what b holds: use the one below
		if class == 0 {
			return
		}
		class--
	}
	*b = (*b)[:0]
	pixPools[class].Put(b)
}

func putPixSlice(pix []byte) { putPix(&pix) }
