package imaging

import (
	"image"
	"image/color"
	"strings"
	"testing"
)

func TestTiles(t *testing.T) {
	tests := []struct {
		name                     string
		bounds                   image.Rectangle
		cols, rows, w, h, gutter int
		wantErr                  string
	}{
		{name: "4x4 of 256", bounds: image.Rect(0, 0, 1024, 1024), cols: 4, rows: 4, w: 256, h: 256},
		{name: "gutter", bounds: image.Rect(0, 0, 1024+2*32, 512+2*32), cols: 4, rows: 2, w: 256, h: 256, gutter: 32},
		{name: "non-zero origin", bounds: image.Rect(-100, 50, -100+3*64+10, 50+64+10), cols: 3, rows: 1, w: 64, h: 64, gutter: 5},
		{name: "one tile", bounds: image.Rect(0, 0, 512, 512), cols: 1, rows: 1, w: 512, h: 512},
		{name: "width wrong", bounds: image.Rect(0, 0, 1000, 1024), cols: 4, rows: 4, w: 256, h: 256, wantErr: "image is 1000x1024, want 1024x1024"},
		{name: "gutter missing", bounds: image.Rect(0, 0, 1024, 1024), cols: 4, rows: 4, w: 256, h: 256, gutter: 16, wantErr: "want 1056x1056"},
		{name: "no tiles", bounds: image.Rect(0, 0, 0, 0), cols: 0, rows: 4, w: 256, h: 256, wantErr: "invalid grid"},
		{name: "negative gutter", bounds: image.Rect(0, 0, 1000, 1000), cols: 4, rows: 4, w: 256, h: 256, gutter: -12, wantErr: "invalid grid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := image.NewNRGBA(tt.bounds)
			tiles, err := Tiles(meta, tt.cols, tt.rows, tt.w, tt.h, tt.gutter)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tiles) != tt.rows {
				t.Fatalf("%d rows, want %d", len(tiles), tt.rows)
			}
			for r, row := range tiles {
				if len(row) != tt.cols {
					t.Fatalf("row %d has %d tiles, want %d", r, len(row), tt.cols)
				}
				for c, tile := range row {
					min := tt.bounds.Min.Add(image.Pt(tt.gutter+c*tt.w, tt.gutter+r*tt.h))
					if want := (image.Rectangle{Min: min, Max: min.Add(image.Pt(tt.w, tt.h))}); tile.Bounds() != want {
						t.Errorf("tile [%d][%d] bounds %v, want %v", r, c, tile.Bounds(), want)
					}
					// The tile shares the metatile's pixels.
					colour := color.NRGBA{uint8(r), uint8(c), 7, 255}
					meta.SetNRGBA(min.X+1, min.Y+2, colour)
					if got := tile.At(min.X+1, min.Y+2); got != colour {
						t.Errorf("tile [%d][%d] does not show the metatile's pixel: %v", r, c, got)
					}
				}
			}
		})
	}
}

// plainImage is an image type without SubImage.
type plainImage struct{ image.Image }

func TestTilesWithoutSubImage(t *testing.T) {
	meta := image.NewGray(image.Rect(0, 0, 20, 10))
	for i := range meta.Pix {
		meta.Pix[i] = uint8(i)
	}
	tiles, err := Tiles(plainImage{meta}, 2, 1, 10, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	tile := tiles[0][1]
	if tile.Bounds() != image.Rect(10, 0, 20, 10) || tile.At(12, 3) != meta.At(12, 3) {
		t.Errorf("tile %v, pixel %v; want bounds (10,0)-(20,10) and %v", tile.Bounds(), tile.At(12, 3), meta.At(12, 3))
	}
}
