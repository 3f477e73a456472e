package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"tilecache/internal/grid"
	"tilecache/internal/imaging"
	"tilecache/internal/source"
	"tilecache/internal/vectortile"
)

// ImageOptions configure how fetched images become tiles. Zero values
// mean the defaults.
type ImageOptions struct {
	// PNGCompression is the zlib level (1–9) of png and png8 tiles;
	// default 1, the fastest.
	PNGCompression int `yaml:"pngCompression"`
	// JPEGQuality (1–100) of jpeg tiles; default 85.
	JPEGQuality int `yaml:"jpegQuality"`
	// SkipBlank names the tiles not stored: "transparent" (every pixel
	// fully transparent), "uniform" (every pixel the same colour, whatever
	// it is) or "none" (the default: store every tile). Skipped tiles still
	// count as processed.
	SkipBlank string `yaml:"skipBlank"`
}

type skipMode int

const (
	skipNone skipMode = iota
	skipTransparent
	skipUniform
)

// Pipeline cuts decoded metatiles into encoded tiles.
type Pipeline struct {
	enc  map[string]imaging.Encoder // by tile format
	skip skipMode
}

// Build returns the client and pipeline of a layer offering formats: what
// every source that fetches images sets up.
func Build(formats []string, h HTTPOptions, i ImageOptions) (*Client, *Pipeline, error) {
	client, err := NewClient(h)
	if err != nil {
		return nil, nil, err
	}
	pipe, err := NewPipeline(formats, i)
	if err != nil {
		return nil, nil, err
	}
	return client, pipe, nil
}

// NewPipeline returns the pipeline of a layer offering formats.
func NewPipeline(formats []string, o ImageOptions) (*Pipeline, error) {
	p := &Pipeline{enc: make(map[string]imaging.Encoder, len(formats))}
	switch o.SkipBlank {
	case "", "none":
	case "transparent":
		p.skip = skipTransparent
	case "uniform":
		p.skip = skipUniform
	default:
		return nil, fmt.Errorf("skipBlank %q is not one of none, transparent, uniform", o.SkipBlank)
	}
	if o.PNGCompression != 0 && (o.PNGCompression < 1 || o.PNGCompression > 9) {
		return nil, fmt.Errorf("pngCompression %d is not a zlib level 1..9", o.PNGCompression)
	}
	if o.JPEGQuality != 0 && (o.JPEGQuality < 1 || o.JPEGQuality > 100) {
		return nil, fmt.Errorf("jpegQuality %d is not in 1..100", o.JPEGQuality)
	}
	for _, f := range formats {
		if vectortile.Is(f) {
			continue // stored as the upstream sent it: see Vector
		}
		e, err := imaging.NewEncoder(f, imaging.Options{PNGCompression: o.PNGCompression, JPEGQuality: o.JPEGQuality})
		if err != nil {
			return nil, err
		}
		p.enc[f] = e
	}
	return p, nil
}

// Cut encodes the tiles of range r from img, whose tile (r.MinX, r.MaxY)
// (the top-left one: rows count from the bottom) has its top-left pixel at
// origin. Tiles are w × h pixels.
func (p *Pipeline) Cut(img image.Image, r grid.TileRange, origin image.Point, w, h int, format string, parallel int) ([]source.Tile, error) {
	sub, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	})
	if !ok {
		return nil, fmt.Errorf("cut metatile: %T cannot be cut", img)
	}
	tiles := make([]source.Tile, 0, r.Count())
	for y := r.MaxY; y >= r.MinY; y-- {
		for x := r.MinX; x <= r.MaxX; x++ {
			tiles = append(tiles, source.Tile{X: x, Y: y})
		}
	}
	cut := func(i int) error {
		x, y := tiles[i].X, tiles[i].Y
		top := origin.Y + int(r.MaxY-y)*h
		left := origin.X + int(x-r.MinX)*w
		t, err := p.Tile(sub.SubImage(image.Rect(left, top, left+w, top+h)), x, y, format)
		tiles[i] = t
		return err
	}
	if parallel <= 1 {
		for i := range tiles {
			if err := cut(i); err != nil {
				return nil, err
			}
		}
		return tiles, nil
	}
	// parallel workers take the next tile until none is left; one that
	// fails stops, the others go on, and the first failure is reported.
	var (
		g    errgroup.Group
		next atomic.Int64
	)
	for range min(parallel, len(tiles)) {
		g.Go(func() error {
			for i := int(next.Add(1) - 1); i < len(tiles); i = int(next.Add(1) - 1) {
				if err := cut(i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return tiles, nil
}

// Tile encodes one tile image, or marks it skipped when it is blank.
func (p *Pipeline) Tile(img image.Image, x, y int64, format string) (source.Tile, error) {
	if p.Blank(img) {
		return source.Tile{X: x, Y: y, Skip: true}, nil
	}
	enc, ok := p.enc[format]
	if !ok {
		return source.Tile{}, fmt.Errorf("tile format %q is not offered by the layer", format)
	}
	data, err := enc.Encode(img)
	if err != nil {
		return source.Tile{}, fmt.Errorf("encode tile %d/%d as %s: %w", x, y, format, err)
	}
	return source.Tile{X: x, Y: y, Data: data}, nil
}

// Blank reports whether the layer skips storing img.
func (p *Pipeline) Blank(img image.Image) bool {
	if p.skip == skipNone {
		return false
	}
	c, ok := imaging.Uniform(img)
	if !ok {
		return false
	}
	if p.skip == skipUniform {
		return true
	}
	_, _, _, a := c.RGBA()
	return a == 0
}

// DecodeFailure is the *Error for an answer to url (with Content-Type
// contentType) that imaging.Decode refused with err: an answer that is not
// an image carries the upstream's own message (a service exception's code
// and text), a broken image what is wrong with it. Its URL is url redacted.
func DecodeFailure(url, contentType string, err error) *Error {
	if ni, ok := errors.AsType[*imaging.NotImageError](err); ok {
		msg := "answer is not an image (" + contentType + ")"
		if ni.Code != "" {
			msg += ": " + ni.Code
		}
		if ni.Message != "" {
			msg += ": " + ni.Message
		}
		return &Error{URL: Redact(url), Status: 200, Msg: msg}
	}
	return &Error{URL: Redact(url), Status: 200, Msg: fmt.Sprintf("undecodable image (%s): %v", contentType, err)}
}

// Vector returns the tile at x, y of an upstream's answer body (of
// Content-Type contentType, from url) in vector tile format format (MVT or
// GeoJSON): body as it came (gzip-compressed or not: Encoding says), once
// vectortile.ParseAs found it a tile of that format of at most
// vectortile.MaxSize bytes and within the limits of what a tile may hold;
// an empty GeoJSON answer is stored as a FeatureCollection without
// features. An answer that is not one (an HTML page, a service
// exception, a truncated or oversized body, a tile past a limit) is an
// *Error, and nothing of it is stored. A tile without features is blank:
// skipped unless skipBlank is none (any other mode skips it, as it draws
// nothing).
//
// The check is counted against budget (nil: no bound) as images' decoding
// is: it takes VectorCost of body, waiting for room, so that however many
// vector tiles are fetched at once the checks in flight take no more
// memory than the budget.
func (p *Pipeline) Vector(ctx context.Context, budget *Budget, format string, body []byte, contentType, url string, x, y int64) (source.Tile, error) {
	vt, err := p.checkVector(ctx, budget, format, body, vectortile.Size(body))
	if err != nil && vectortile.IsTooLarge(err) && vectortile.Gzipped(body) && vectortile.Size(body) < vectortile.MaxSize {
		// A gzip stream of several members, or one whose trailer lies:
		// larger than its trailer says. Checked again with room for the
		// largest tile.
		vt, err = p.checkVector(ctx, budget, format, body, vectortile.MaxSize)
	}
	if err != nil {
		if !vectortile.IsInvalid(err) {
			return source.Tile{}, err // the wait for the budget ended
		}
		msg := err.Error() + " (" + contentType + ")"
		if len(body) > 0 && (body[0] == '<' || strings.Contains(contentType, "xml") || strings.Contains(contentType, "html")) {
			msg += ": " + Excerpt(body)
		}
		return source.Tile{}, &Error{URL: Redact(url), Status: 200, Msg: msg}
	}
	if vt.Empty() && p.skip != skipNone {
		return source.Tile{X: x, Y: y, Skip: true}, nil
	}
	t := source.Tile{X: x, Y: y, Data: bytes.Clone(body)}
	if format == vectortile.GeoJSON && len(bytes.TrimSpace(body)) == 0 {
		t.Data = vectortile.EmptyGeoJSON() // an empty answer stored as what it stands for
	}
	if vt.Gzip {
		t.Encoding = "gzip"
	}
	return t, nil
}

// checkVector checks body as a vector tile of at most size bytes
// decompressed, holding what that may cost from budget meanwhile.
func (p *Pipeline) checkVector(ctx context.Context, budget *Budget, format string, body []byte, size int) (vectortile.Tile, error) {
	release, err := budget.Acquire(ctx, vectortile.AllocBound(size))
	if err != nil {
		return vectortile.Tile{}, fmt.Errorf("check a vector tile: %w", err)
	}
	defer release()
	return vectortile.ParseAs(format, body, size)
}

// Encodes reports whether the pipeline has an encoder for format.
func (p *Pipeline) Encodes(format string) bool { _, ok := p.enc[format]; return ok }
