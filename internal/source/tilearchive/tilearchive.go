// Package tilearchive is the source that reads a tile archive (PMTiles or
// MBTiles, as tippecanoe, Planetiler, GDAL or an export of this cache
// write them): seeding copies its tiles into the cache and a miss is
// rendered from it.
//
// Options (the layer's `source:` mapping):
//
//	type: pmtiles          # or mbtiles
//	url: /data/basemap.pmtiles          # required: a file path, s3://bucket/key,
//	                                    # or (PMTiles only) an https:// URL read with range requests
//	timeout, retries, retryBackoff, maxConcurrent, headers    # for an https:// archive, as for the xyz source
//	allowPrivateUpstream                                      # as for the xyz source
//	pngCompression, jpegQuality, skipBlank                    # as for the xyz source
//
// Both formats hold Web Mercator tiles in XYZ order, so every grid set of
// the layer must be that pyramid (EPSG:900913 and its like: level z of
// 2^z × 2^z tiles over the whole world); another is refused. A tile the
// archive does not have is a blank tile (skipped when skipBlank allows);
// a tile of the layer's format is stored as the archive holds it, a
// raster tile of another format is decoded and encoded again; vector
// tiles are stored as they are (gzip included) once checked.
//
// The archive is opened at the first render, not when the layer is
// defined (an archive on a host that is down must not stop the service
// starting). An archive replaced while it is read (another ETag) is
// opened again; an MBTiles in a bucket is copied to a temporary file
// first (SQLite reads a file), at most MaxDownload bytes.
package tilearchive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"

	"tilecache/internal/archive"
	"tilecache/internal/archive/pmtiles"
	"tilecache/internal/archive/rangeread"
	"tilecache/internal/grid"
	"tilecache/internal/imaging"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/vectortile"
)

// MaxDownload bounds the MBTiles file copied from a bucket.
const MaxDownload = 8 << 30

// Options configure the source; see the package documentation.
type Options struct {
	URL string `yaml:"url"`

	upstream.HTTPOptions  `yaml:",inline"`
	upstream.ImageOptions `yaml:",inline"`
}

// Access is what the sources may read archives with.
type Access struct {
	// Objects reads archives in buckets (nil: an s3:// archive is
	// refused, as on the embedded backend).
	Objects rangeread.Objects
	// OpenMBTiles opens an MBTiles file (mbtiles.Open). It is given only
	// where the SQLite driver is worth linking: the workers (which `serve`
	// runs too), not the tile function, where an mbtiles layer's miss
	// fails saying to seed it.
	OpenMBTiles func(ctx context.Context, path string) (archive.Reader, error)
}

// Source reads tiles from an archive.
type Source struct {
	kind   string // "pmtiles" or "mbtiles"
	loc    rangeread.Location
	access Access
	client *upstream.Client
	pipe   *upstream.Pipeline
	budget *upstream.Budget
	skip   bool // skipBlank is set: blank tiles must be seen decoded

	// held is the open archive, apart from the Source so that the
	// Source's cleanup (a source dropped by the cache of sources when a
	// layer changes) can close it: the file, the temporary copy.
	held *held
}

// held is what a Source holds open.
type held struct {
	mu     sync.Mutex
	opened *opened
}

func (h *held) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opened != nil {
		h.opened.close()
		h.opened = nil
	}
}

// opened is an archive open for reading.
type opened struct {
	r       archive.Reader
	format  string // the archive's tile format: png, jpg, webp, pbf, …
	closers []func() error
}

func (o *opened) close() {
	for _, c := range o.closers {
		c()
	}
}

var _ source.Source = (*Source)(nil)

// New builds the source of layer l (of type pmtiles or mbtiles) from its
// `source:` mapping, reading archives with what a gives.
func New(l *layer.Layer, sh upstream.Shared, a Access) (*Source, error) {
	kind := l.SourceType
	var doc struct {
		Type    string `yaml:"type"`
		Options `yaml:",inline"`
	}
	if err := upstream.DecodeOptions(&l.Source, &doc); err != nil {
		return nil, fmt.Errorf("%s options: %w", kind, err)
	}
	o := doc.Options
	if o.URL == "" {
		return nil, fmt.Errorf("%s options: url is required (a file path, s3://bucket/key or an https:// URL)", kind)
	}
	loc, err := rangeread.Parse(o.URL)
	if err != nil {
		return nil, fmt.Errorf("%s options: url: %w", kind, err)
	}
	switch {
	case loc.Scheme == "s3" && a.Objects == nil:
		return nil, fmt.Errorf("%s options: url %s: an archive in a bucket is read only on the AWS backend (here, give a file path)", kind, loc)
	case kind == "mbtiles" && (loc.Scheme == "https" || loc.Scheme == "http"):
		return nil, fmt.Errorf("mbtiles options: url %s: an MBTiles archive is an SQLite file, read from a file or an s3:// object; only PMTiles is read from a web server", loc)
	}
	for _, sub := range l.Subsets {
		if !MercatorQuad(sub) {
			return nil, fmt.Errorf("%s options: grid set %s is not the Web Mercator pyramid (EPSG:900913: level z of 2^z × 2^z tiles over the world), the only tiling a %s archive holds; give the layer that grid set only", kind, sub.GridSet.ID, kind)
		}
	}
	o.HTTPOptions.Layer = l.Name
	o.HTTPOptions.Addresses = sh.Addresses(o.AllowPrivateUpstream && l.Managed == layer.ManagedByFile)
	client, pipe, err := upstream.Build(l.Formats, o.HTTPOptions, o.ImageOptions)
	if err != nil {
		return nil, fmt.Errorf("%s options: %w", kind, err)
	}
	s := &Source{kind: kind, loc: loc, access: a, client: client, pipe: pipe, budget: sh.Budget,
		skip: o.SkipBlank != "" && o.SkipBlank != "none", held: &held{}}
	runtime.AddCleanup(s, (*held).close, s.held)
	return s, nil
}

// MercatorQuad reports whether the subset's levels are those of the Web
// Mercator pyramid archives hold: a Web Mercator CRS, the world's extent
// (within a metre), square tiles, level z made of 2^z × 2^z tiles.
func MercatorQuad(s *grid.Subset) bool {
	g := s.GridSet
	const half = 20037508.342789244
	if !grid.SameCRS(g.EPSG, 3857) || g.TileWidth != g.TileHeight {
		return false
	}
	for _, v := range [...]float64{g.Extent.MinX, g.Extent.MinY, -g.Extent.MaxX, -g.Extent.MaxY} {
		if math.Abs(v+half) > 1 {
			return false
		}
	}
	for z := s.MinZoom; z <= s.MaxZoom; z++ {
		if z > 31 {
			return false
		}
		cols, rows := g.Size(z)
		if cols != 1<<z || rows != 1<<z {
			return false
		}
	}
	return true
}

// open returns the archive, opening it at the first call.
func (s *Source) open(ctx context.Context) (*opened, error) {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	if s.held.opened != nil {
		return s.held.opened, nil
	}
	o, err := s.openArchive(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s archive %s: %w", s.kind, s.loc, err)
	}
	s.held.opened = o
	return o, nil
}

// reopen drops o, which found its archive replaced, so that the next
// read opens the new one.
func (s *Source) reopen(o *opened) {
	s.held.mu.Lock()
	defer s.held.mu.Unlock()
	if s.held.opened == o {
		s.held.opened = nil
		o.close()
	}
}

func (s *Source) openArchive(ctx context.Context) (*opened, error) {
	if s.kind == "mbtiles" {
		return s.openMBTiles(ctx)
	}
	var src pmtiles.RangeReader
	o := &opened{}
	switch s.loc.Scheme {
	case "file":
		f, err := rangeread.OpenFile(s.loc.Path)
		if err != nil {
			return nil, err
		}
		src, o.closers = f, append(o.closers, f.Close)
	case "s3":
		src = rangeread.NewS3(s.access.Objects, s.loc.Bucket, s.loc.Key)
	default:
		src = rangeread.NewHTTP(s.client, s.loc.URL)
	}
	r, err := pmtiles.Open(ctx, src)
	if err != nil {
		o.close()
		return nil, err
	}
	h := r.Header()
	if h.TileCompression != pmtiles.NoCompression && h.TileCompression != pmtiles.Gzip && h.TileCompression != pmtiles.UnknownCompression {
		o.close()
		return nil, fmt.Errorf("tile compression %d is not supported (none or gzip)", h.TileCompression)
	}
	o.r, o.format = r, pmtiles.FormatOf(h.TileType)
	return o, nil
}

func (s *Source) openMBTiles(ctx context.Context) (*opened, error) {
	if s.access.OpenMBTiles == nil {
		return nil, errors.New("this function does not read MBTiles archives (the workers do): seed the layer's levels rather than render its misses here")
	}
	o := &opened{}
	path := s.loc.Path
	if s.loc.Scheme == "s3" {
		f, err := os.CreateTemp("", "tilecache-*.mbtiles")
		if err != nil {
			return nil, fmt.Errorf("copy to a temporary file: %w", err)
		}
		path = f.Name()
		o.closers = append(o.closers, func() error { return os.Remove(path) })
		err = Download(ctx, rangeread.NewS3(s.access.Objects, s.loc.Bucket, s.loc.Key), f, MaxDownload)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			o.close()
			return nil, fmt.Errorf("copy to a temporary file: %w", err)
		}
	}
	r, err := s.access.OpenMBTiles(ctx, path)
	if err != nil {
		o.close()
		return nil, err
	}
	o.closers = append([]func() error{r.Close}, o.closers...)
	md, err := r.Metadata(ctx)
	if err != nil {
		o.close()
		return nil, err
	}
	o.r, o.format = r, md.Format
	return o, nil
}

// Download copies what src reads into w, 8 MiB at a time, and fails past
// limit bytes.
func Download(ctx context.Context, src pmtiles.RangeReader, w io.Writer, limit int64) error {
	const chunk = 8 << 20
	for off := int64(0); ; off += chunk {
		if off >= limit {
			return fmt.Errorf("the archive is larger than %d bytes", limit)
		}
		b, err := src.ReadRange(ctx, off, chunk)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		if len(b) < chunk {
			return nil
		}
	}
}

// Render implements source.Source: each tile of the metatile is read
// from the archive.
func (s *Source) Render(ctx context.Context, req source.Request) ([]source.Tile, error) {
	tiles, err := s.render(ctx, req)
	if errors.Is(err, rangeread.ErrChanged) {
		// Replaced since it was opened: read the new archive once.
		tiles, err = s.render(ctx, req)
	}
	return tiles, err
}

func (s *Source) render(ctx context.Context, req source.Request) ([]source.Tile, error) {
	o, err := s.open(ctx)
	if err != nil {
		return nil, err
	}
	vector := vectortile.Is(req.Format)
	if vector != (o.format == "pbf" || o.format == "mvt") {
		return nil, fmt.Errorf("%s archive %s holds %s tiles, which cannot make %s tiles", s.kind, s.loc, describe(o.format), req.Format)
	}
	_, rows := req.GridSet.Size(req.Z)
	tiles, err := source.EachTile(ctx, req.Tiles, func(ctx context.Context, t *source.Tile) error {
		data, ok, err := o.r.Tile(ctx, req.Z, t.X, rows-1-t.Y)
		if err != nil {
			return err
		}
		if vector {
			return s.vector(ctx, req, t, data)
		}
		return s.raster(ctx, req, o.format, t, data, ok)
	})
	if errors.Is(err, rangeread.ErrChanged) {
		s.reopen(o)
	}
	if err != nil {
		return nil, fmt.Errorf("%s archive %s, level %d: %w", s.kind, s.loc, req.Z, err)
	}
	return tiles, nil
}

func describe(format string) string {
	if format == "" {
		return "tiles of an unknown format"
	}
	return format
}

// vector fills t with the vector tile data (nil: none), checked.
func (s *Source) vector(ctx context.Context, req source.Request, t *source.Tile, data []byte) error {
	out, err := s.pipe.Vector(ctx, s.budget, req.Format, data, vectortile.MVT, s.loc.String(), t.X, t.Y)
	if err != nil {
		return fmt.Errorf("tile %d/%d: %w", t.X, t.Y, err)
	}
	*t = out
	return nil
}

// mimeOf is the MIME type of an archive's raster format.
func mimeOf(format string) string {
	switch format {
	case "jpg", "jpeg":
		return "image/jpeg"
	case "":
		return ""
	}
	return "image/" + format
}

// raster fills t from the raster tile data (ok false: none there).
func (s *Source) raster(ctx context.Context, req source.Request, format string, t *source.Tile, data []byte, ok bool) error {
	w, h := req.GridSet.TileWidth, req.GridSet.TileHeight
	if !ok || len(data) == 0 {
		out, err := s.pipe.Tile(image.NewNRGBA(image.Rect(0, 0, w, h)), t.X, t.Y, req.Format)
		*t = out
		return err
	}
	if tw, th, known := imaging.Size(data); known && (tw != w || th != h) {
		return fmt.Errorf("tile %d/%d is %d×%d pixels, the grid's are %d×%d", t.X, t.Y, tw, th, w, h)
	}
	release, err := s.budget.Acquire(ctx, upstream.DecodedSize(w, h))
	if err != nil {
		return err
	}
	defer release()
	if !s.skip && source.ContentType(req.Format) == mimeOf(format) && req.Format != "image/png8" {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width != w || cfg.Height != h {
			return fmt.Errorf("tile %d/%d is not a %d×%d %s image", t.X, t.Y, w, h, format)
		}
		t.Data = bytes.Clone(data)
		return nil
	}
	img, err := imaging.Decode(data)
	if err != nil {
		return fmt.Errorf("tile %d/%d: %s: %w", t.X, t.Y, strings.TrimSpace(describe(format)), err)
	}
	if b := img.Bounds(); b.Dx() != w || b.Dy() != h {
		imaging.Release(img)
		return fmt.Errorf("tile %d/%d is %d×%d pixels, the grid's are %d×%d", t.X, t.Y, b.Dx(), b.Dy(), w, h)
	}
	out, err := s.pipe.Tile(img, t.X, t.Y, req.Format)
	imaging.Release(img)
	*t = out
	return err
}
