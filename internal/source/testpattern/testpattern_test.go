package testpattern_test

import (
	"bytes"
	"image/jpeg"
	"image/png"
	"testing"

	"gopkg.in/yaml.v3"

	"tilecache/internal/grid"
	"tilecache/internal/source"
	"tilecache/internal/source/testpattern"
)

func request(t testing.TB, format string) source.Request {
	g, ok := grid.Builtin("EPSG:4326")
	if !ok {
		t.Fatal("no EPSG:4326")
	}
	return source.Request{Layer: "demo:world", GridSet: g, Z: 3, Tiles: grid.TileRange{Z: 3, MinX: 4, MinY: 0, MaxX: 7, MaxY: 3},
		Format: format, Parameters: map[string]string{"STYLES": "grid"}}
}

func TestRenderIsDistinctAndDecodes(t *testing.T) {
	src, err := testpattern.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"image/png", "image/jpeg"} {
		tiles, err := src.Render(t.Context(), request(t, format))
		if err != nil {
			t.Fatal(err)
		}
		if len(tiles) != 16 {
			t.Fatalf("got %d tiles, want 16", len(tiles))
		}
		seen := map[string]bool{}
		for _, tl := range tiles {
			if seen[string(tl.Data)] {
				t.Errorf("%s: tile %d/%d is not distinct", format, tl.X, tl.Y)
			}
			seen[string(tl.Data)] = true
			var w, h int
			if format == "image/png" {
				img, err := png.Decode(bytes.NewReader(tl.Data))
				if err != nil {
					t.Fatal(err)
				}
				w, h = img.Bounds().Dx(), img.Bounds().Dy()
			} else {
				img, err := jpeg.Decode(bytes.NewReader(tl.Data))
				if err != nil {
					t.Fatal(err)
				}
				w, h = img.Bounds().Dx(), img.Bounds().Dy()
			}
			if w != 256 || h != 256 {
				t.Errorf("got %dx%d, want 256x256", w, h)
			}
		}
		again, _ := src.Render(t.Context(), request(t, format))
		if !bytes.Equal(again[5].Data, tiles[5].Data) {
			t.Errorf("%s: rendering is not deterministic", format)
		}
	}
}

func TestOptions(t *testing.T) {
	var node yaml.Node
	if err := yaml.Unmarshal([]byte("{type: testpattern, failZooms: [3]}"), &node); err != nil {
		t.Fatal(err)
	}
	src, err := testpattern.New(node.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Render(t.Context(), request(t, "image/png")); err == nil {
		t.Error("got no error at a failing zoom level")
	}
	if err := yaml.Unmarshal([]byte("{type: testpattern, delay: -1s}"), &node); err != nil {
		t.Fatal(err)
	}
	if _, err := testpattern.New(node.Content[0]); err == nil {
		t.Error("negative delay accepted")
	}
}

func BenchmarkTilePNG(b *testing.B) {
	src, _ := testpattern.New(nil)
	req := request(b, "image/png")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.Tile(req, 5, 2); err != nil {
			b.Fatal(err)
		}
	}
}
