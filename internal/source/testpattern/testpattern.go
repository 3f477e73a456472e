// Package testpattern is the built-in test-pattern source: it draws every
// tile with its layer, grid set, z/x/y and parameter values on a background
// colour derived from them, so every tile is distinct and a test (or a
// person looking at a map) can check that each tile landed where it belongs.
//
// Options (the layer's `source:` mapping):
//
//	type: testpattern
//	delay: 50ms          # wait this long per metatile, to imitate a slow upstream
//	failZooms: [5]       # fail every metatile of these zoom levels, to imitate a broken upstream
//	panicZooms: [6]      # panic on every metatile of these zoom levels, to imitate a decoder crashing on a strange input
//
// Rendering is deterministic: the same request always yields the same bytes.
package testpattern

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"image/color"
	"image/jpeg"
	"maps"
	"slices"
	"time"

	"gopkg.in/yaml.v3"

	"tilecache/internal/source"
)

// Options configure the source.
type Options struct {
	Delay      time.Duration `yaml:"delay"`
	FailZooms  []int         `yaml:"failZooms"`
	PanicZooms []int         `yaml:"panicZooms"`
}

// Source draws test-pattern tiles.
type Source struct {
	opts Options
}

var _ source.Source = (*Source)(nil)

// New builds a source from the layer's source mapping.
func New(node *yaml.Node) (*Source, error) {
	var doc struct {
		Type    string `yaml:"type"`
		Options `yaml:",inline"`
	}
	if node != nil && node.Kind != 0 {
		if err := node.Decode(&doc); err != nil {
			return nil, fmt.Errorf("testpattern options: %w", err)
		}
	}
	if doc.Delay < 0 {
		return nil, fmt.Errorf("testpattern options: delay %v is negative", doc.Delay)
	}
	return &Source{opts: doc.Options}, nil
}

// ErrInjected is returned for metatiles of a zoom level listed in failZooms.
var ErrInjected = fmt.Errorf("testpattern: failure injected by failZooms")

// Render implements source.Source.
func (s *Source) Render(ctx context.Context, req source.Request) ([]source.Tile, error) {
	if s.opts.Delay > 0 {
		t := time.NewTimer(s.opts.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("render metatile: %w", ctx.Err())
		case <-t.C:
		}
	}
	if slices.Contains(s.opts.PanicZooms, req.Z) {
		panic(fmt.Sprintf("testpattern: panic injected by panicZooms at z%d %d,%d", req.Z, req.Tiles.MinX, req.Tiles.MinY))
	}
	if slices.Contains(s.opts.FailZooms, req.Z) {
		return nil, fmt.Errorf("render z%d metatile at %d,%d: %w", req.Z, req.Tiles.MinX, req.Tiles.MinY, ErrInjected)
	}
	r := req.Tiles
	tiles := make([]source.Tile, 0, r.Count())
	for y := r.MinY; y <= r.MaxY; y++ {
		for x := r.MinX; x <= r.MaxX; x++ {
			data, err := s.Tile(req, x, y)
			if err != nil {
				return nil, err
			}
			tiles = append(tiles, source.Tile{X: x, Y: y, Data: data})
		}
	}
	return tiles, nil
}

// Label returns the text lines drawn on tile x, y of req.
func Label(req source.Request, x, y int64) []string {
	lines := []string{req.Layer, req.GridSet.ID, fmt.Sprintf("z=%d x=%d y=%d", req.Z, x, y)}
	for _, k := range slices.Sorted(maps.Keys(req.Parameters)) {
		lines = append(lines, k+"="+req.Parameters[k])
	}
	return lines
}

// Tile draws and encodes one tile.
func (s *Source) Tile(req source.Request, x, y int64) ([]byte, error) {
	w, h := req.GridSet.TileWidth, req.GridSet.TileHeight
	lines := Label(req, x, y)
	bg := bgOf(lines)
	fg := color.RGBA{A: 255}
	b := newBitmap(w, h)
	b.frame() // the tile's edges show on a map
	for i, l := range lines {
		b.text(8, 20+16*i, l)
	}
	switch req.Format {
	case "image/jpeg":
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, b.rgba(bg, fg), &jpeg.Options{Quality: 85}); err != nil {
			return nil, fmt.Errorf("encode jpeg: %w", err)
		}
		return buf.Bytes(), nil
	case "image/png", "image/png8", "image/png24", "image/png; mode=24bit":
		data, err := b.png(bg, fg)
		if err != nil {
			return nil, fmt.Errorf("encode png: %w", err)
		}
		return data, nil
	default:
		return nil, fmt.Errorf("testpattern: format %s is not supported", req.Format)
	}
}

// bgOf is a tile's background colour, derived from its label.
func bgOf(lines []string) color.RGBA {
	hash := fnv.New32a()
	for _, l := range lines {
		hash.Write([]byte(l))
		hash.Write([]byte{0})
	}
	sum := hash.Sum32()
	return color.RGBA{R: 128 + uint8(sum)&127, G: 128 + uint8(sum>>8)&127, B: 128 + uint8(sum>>16)&127, A: 255}
}
