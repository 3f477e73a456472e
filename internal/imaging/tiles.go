package imaging

import (
	"fmt"
	"image"
)

// Tiles cuts a metatile image into a cols×rows grid of w×h tiles after
// dropping gutter pixels on every side; tiles[row][col], row 0 at the top.
// The tiles are sub-images sharing the metatile's pixels (no copy), with
// the metatile's coordinates: a tile's Bounds().Min is not (0, 0) in
// general. Error when the image size is not cols*w+2*gutter by
// rows*h+2*gutter.
func Tiles(img image.Image, cols, rows, w, h, gutter int) ([][]image.Image, error) {
	if cols <= 0 || rows <= 0 || w <= 0 || h <= 0 || gutter < 0 {
		return nil, fmt.Errorf("imaging: cut %dx%d tiles of %dx%d with gutter %d: invalid grid", cols, rows, w, h, gutter)
	}
	b := img.Bounds()
	wantW, wantH := cols*w+2*gutter, rows*h+2*gutter
	if b.Dx() != wantW || b.Dy() != wantH {
		return nil, fmt.Errorf("imaging: cut %dx%d tiles of %dx%d with gutter %d: image is %dx%d, want %dx%d",
			cols, rows, w, h, gutter, b.Dx(), b.Dy(), wantW, wantH)
	}
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		sub = subImager{img}
	}
	tiles := make([][]image.Image, rows)
	for r := range rows {
		tiles[r] = make([]image.Image, cols)
		for c := range cols {
			min := b.Min.Add(image.Pt(gutter+c*w, gutter+r*h))
			tiles[r][c] = sub.SubImage(image.Rectangle{Min: min, Max: min.Add(image.Pt(w, h))})
		}
	}
	return tiles, nil
}

// subImager gives SubImage to an image type that lacks it.
type subImager struct{ image.Image }

func (s subImager) SubImage(r image.Rectangle) image.Image {
	return window{s.Image, r.Intersect(s.Bounds())}
}

// window is a rectangle of another image.
type window struct {
	image.Image
	r image.Rectangle
}

func (w window) Bounds() image.Rectangle { return w.r }
