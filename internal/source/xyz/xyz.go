// Package xyz is the source that caches another tile service: tiles are
// fetched one by one from a URL template.
//
// Options (the layer's `source:` mapping):
//
//	type: xyz
//	url: https://tiles.example.org/{z}/{x}/{y}.png   # required
//	passThrough: true     # store the upstream's bytes as they are when the upstream format is the tile format
//	format: image/png     # the upstream's format (for passThrough); default image/png
//	timeout, retries, retryBackoff, maxConcurrent, headers    # as for the wms source
//	allowPrivateUpstream                                      # as for the wms source
//	pngCompression, jpegQuality, skipBlank                    # as for the wms source
//
// Placeholders: {z}; {x}; {y}, the row counted from the top (XYZ, "slippy
// map" tiles); {-y}, the row counted from the bottom (TMS). A vector tile
// format (application/vnd.mapbox-vector-tile, as martin, tegola, t-rex or
// pg_tileserv serve at {z}/{x}/{y}.pbf) is fetched, checked as a vector
// tile and stored as it came, gzip-compressed or not. Tiles must have
// the grid set's tile size. A tile the upstream does not have (HTTP 404 or
// 204) is a blank tile: transparent, skipped when skipBlank allows.
package xyz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // formats image.DecodeConfig recognises
	_ "image/png"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"tilecache/internal/imaging"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/vectortile"
)

// Options configure the source; see the package documentation.
type Options struct {
	URL         string `yaml:"url"`
	Format      string `yaml:"format"`
	PassThrough *bool  `yaml:"passThrough"`

	upstream.HTTPOptions  `yaml:",inline"`
	upstream.ImageOptions `yaml:",inline"`
}

// Source fetches tiles from a tile service.
type Source struct {
	opts        Options
	passThrough bool
	client      *upstream.Client
	pipe        *upstream.Pipeline
	budget      *upstream.Budget
}

var _ source.Source = (*Source)(nil)

// UpstreamCap reports the layer's maxConcurrent; a lane fetches a
// metatile's tiles at once, up to that cap.
func (s *Source) UpstreamCap(metaW, metaH int) (limit, perLane int) {
	limit = s.client.MaxConcurrent()
	return limit, min(metaW*metaH, limit)
}

// New builds the source of layer l from its `source:` mapping with what
// the process's sources share: the budget that bounds the decoded tiles
// in flight and the networks every upstream may be at. The upstream may
// be at any address only when l is managed by the layer file and its
// source sets allowPrivateUpstream.
func New(l *layer.Layer, sh upstream.Shared) (*Source, error) {
	var doc struct {
		Type    string `yaml:"type"`
		Options `yaml:",inline"`
	}
	if err := upstream.DecodeOptions(&l.Source, &doc); err != nil {
		return nil, fmt.Errorf("xyz options: %w", err)
	}
	o := doc.Options
	if o.Format == "" {
		o.Format = "image/png"
	}
	if o.URL == "" {
		return nil, fmt.Errorf("xyz options: url is required")
	}
	probe := Expand(o.URL, 1, 2, 3, 4)
	if u, err := url.Parse(probe); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("xyz options: url %q is not an http(s) URL template", upstream.Redact(o.URL))
	}
	if !strings.Contains(o.URL, "{z}") || !strings.Contains(o.URL, "{x}") ||
		(!strings.Contains(o.URL, "{y}") && !strings.Contains(o.URL, "{-y}")) {
		return nil, fmt.Errorf("xyz options: url %q needs {z}, {x} and {y} or {-y}", upstream.Redact(o.URL))
	}
	o.HTTPOptions.Layer = l.Name // the metrics' label
	o.HTTPOptions.Addresses = sh.Addresses(o.AllowPrivateUpstream && l.Managed == layer.ManagedByFile)
	client, pipe, err := upstream.Build(l.Formats, o.HTTPOptions, o.ImageOptions)
	if err != nil {
		return nil, fmt.Errorf("xyz options: %w", err)
	}
	pass := o.PassThrough == nil || *o.PassThrough
	// Blank tiles can only be recognised in decoded pixels.
	pass = pass && (o.SkipBlank == "" || o.SkipBlank == "none")
	return &Source{opts: o, passThrough: pass, client: client, pipe: pipe, budget: sh.Budget}, nil
}

// Expand fills the URL template for tile (z, x, y) of a grid with rows
// rows, y counted from the bottom.
func Expand(template string, z int, x, y, rows int64) string {
	return strings.NewReplacer(
		"{z}", strconv.Itoa(z),
		"{x}", strconv.FormatInt(x, 10),
		"{y}", strconv.FormatInt(rows-1-y, 10),
		"{-y}", strconv.FormatInt(y, 10),
	).Replace(template)
}

// Render implements source.Source: the metatile's tiles are fetched
// concurrently (within the layer's cap).
func (s *Source) Render(ctx context.Context, req source.Request) ([]source.Tile, error) {
	_, rows := req.GridSet.Size(req.Z)
	return source.EachTile(ctx, req.Tiles, func(ctx context.Context, t *source.Tile) error { return s.tile(ctx, req, t, rows) })
}

// tile fetches one tile into t.
func (s *Source) tile(ctx context.Context, req source.Request, t *source.Tile, rows int64) error {
	u := Expand(s.opts.URL, req.Z, t.X, t.Y, rows)
	if vectortile.Is(req.Format) {
		return s.vector(ctx, req, t, u)
	}
	w, h := req.GridSet.TileWidth, req.GridSet.TileHeight
	limit := int64(w)*int64(h)*4 + 1<<20 // the raw tile, plus headers
	err := s.client.FetchLimited(ctx, u, limit, func(body []byte, contentType string) error {
		if tw, th, ok := imaging.Size(body); ok && (tw != w || th != h) {
			return &upstream.Error{URL: upstream.Redact(u), Status: 200, Msg: fmt.Sprintf("tile is %d×%d pixels, the grid's are %d×%d", tw, th, w, h)}
		}
		if len(body) == 0 { // 200 with nothing: no tile there
			return s.blank(t, w, h, req.Format)
		}
		release, err := s.budget.Acquire(ctx, upstream.DecodedSize(w, h))
		if err != nil {
			return err
		}
		defer release()
		if s.passThrough && source.ContentType(req.Format) == s.opts.Format && req.Format != "image/png8" {
			// Stored as fetched, once the header shows an image of the
			// tile's size and format and the whole image decodes.
			cfg, kind, err := image.DecodeConfig(bytes.NewReader(body))
			if err != nil || "image/"+kind != s.opts.Format {
				return &upstream.Error{URL: upstream.Redact(u), Status: 200, Msg: fmt.Sprintf("not a %s image (%s): %s", s.opts.Format, contentType, upstream.Excerpt(body))}
			}
			if cfg.Width != w || cfg.Height != h {
				return &upstream.Error{URL: upstream.Redact(u), Status: 200, Msg: fmt.Sprintf("tile is %d×%d pixels, the grid's are %d×%d", cfg.Width, cfg.Height, w, h)}
			}
			// A valid header is not a valid image: decode it all, so that a
			// broken body is a tile failure, not a stored tile.
			img, err := imaging.Decode(body)
			if err != nil {
				return upstream.DecodeFailure(u, contentType, err)
			}
			imaging.Release(img)
			t.Data = bytes.Clone(body)
			return nil
		}
		img, err := imaging.Decode(body)
		if err != nil {
			return upstream.DecodeFailure(u, contentType, err)
		}
		if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
			return &upstream.Error{URL: upstream.Redact(u), Status: 200, Msg: fmt.Sprintf("tile is %d×%d pixels, the grid's are %d×%d", b.Dx(), b.Dy(), w, h)}
		}
		out, err := s.pipe.Tile(img, t.X, t.Y, req.Format)
		imaging.Release(img) // encoded: its pixel buffer can serve the next Decode
		*t = out
		return err
	})
	var ue *upstream.Error
	if errors.As(err, &ue) && (ue.Status == http.StatusNotFound || ue.Status == http.StatusNoContent) {
		return s.blank(t, w, h, req.Format)
	}
	if err != nil {
		return fmt.Errorf("xyz tile z%d %d/%d: %w", req.Z, t.X, t.Y, err)
	}
	return nil
}

// vector fetches one vector tile into t: stored as it came (gzip
// included) once checked (upstream.Pipeline.Vector). A tile the upstream
// does not have (404 or 204) is an empty vector tile: skipped when
// skipBlank allows, else stored empty (zero bytes, a tile of no layers).
//
// t keeps its position whatever happens: it is set only from a tile
// checked, so that a failure names the tile that failed.
func (s *Source) vector(ctx context.Context, req source.Request, t *source.Tile, u string) error {
	err := s.client.FetchVector(ctx, u, func(body []byte, contentType string) error {
		out, err := s.pipe.Vector(ctx, s.budget, req.Format, body, contentType, u, t.X, t.Y)
		if err == nil {
			*t = out
		}
		return err
	})
	var ue *upstream.Error
	if errors.As(err, &ue) && (ue.Status == http.StatusNotFound || ue.Status == http.StatusNoContent) {
		out, err := s.pipe.Vector(ctx, s.budget, req.Format, nil, "", u, t.X, t.Y)
		if err != nil {
			return fmt.Errorf("xyz tile z%d %d/%d: %w", req.Z, t.X, t.Y, err)
		}
		*t = out
		return nil
	}
	if err != nil {
		return fmt.Errorf("xyz tile z%d %d/%d: %w", req.Z, t.X, t.Y, err)
	}
	return nil
}

// blank fills t with a transparent tile (or marks it skipped).
func (s *Source) blank(t *source.Tile, w, h int, format string) error {
	out, err := s.pipe.Tile(image.NewNRGBA(image.Rect(0, 0, w, h)), t.X, t.Y, format)
	*t = out
	return err
}
