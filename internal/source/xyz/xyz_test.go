package xyz_test

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/xyz"
)

// TestPassThroughRefusesBrokenBodies: an answer whose header is a valid PNG
// of the tile's size but whose body is cut or corrupted is a tile failure
// with the upstream's URL, never a stored tile; a whole PNG passes through
// byte for byte.
func TestPassThroughRefusesBrokenBodies(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 256, 256))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	img.Set(3, 3, color.NRGBA{1, 2, 3, 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
	corrupt := bytes.Clone(whole)
	for i := len(corrupt) / 2; i < len(corrupt)/2+64; i++ {
		corrupt[i] ^= 0xA5
	}
	bodies := map[string][]byte{"/0/0/0.png": whole, "/1/0/0.png": whole[:len(whole)/2], "/1/1/0.png": corrupt}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(bodies[r.URL.Path])
	}))
	defer srv.Close()
	cat, err := layer.Parse([]byte(`
layers:
  - name: up
    gridSubsets: [{gridSet: EPSG:900913}]
    formats: [image/png]
    metatiling: [1, 1]
    source: {type: xyz, url: "`+srv.URL+`/{z}/{x}/{y}.png", retries: -1, allowPrivateUpstream: true}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	l, _ := cat.Layer("up")
	src, err := xyz.New(l, upstream.Shared{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := grid.Builtin("EPSG:900913")
	render := func(z int, x, y int64) ([]source.Tile, error) {
		return src.Render(t.Context(), source.Request{Layer: "up", GridSet: g, Z: z, Format: "image/png",
			Tiles: grid.TileRange{Z: z, MinX: x, MinY: y, MaxX: x, MaxY: y}})
	}
	tiles, err := render(0, 0, 0)
	if err != nil || len(tiles) != 1 || !bytes.Equal(tiles[0].Data, whole) {
		t.Fatalf("whole PNG: got %v, want it passed through unchanged", err)
	}
	for _, c := range []struct {
		name string
		x    int64
	}{{"cut in half", 0}, {"corrupted body", 1}} {
		// Rows count from the bottom; {y} is from the top: z1 y=1 is row 0.
		_, err := render(1, c.x, 1)
		var ue *upstream.Error
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("%s: got %v, want an upstream error naming the URL", c.name, err)
		}
	}
}
