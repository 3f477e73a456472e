// Archives opened for an import: where they may lie, what they hold, and
// their tiles made into a layer's.

package tilearchive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"os"

	"tilecache/internal/apperr"
	"tilecache/internal/archive"
	"tilecache/internal/archive/pmtiles"
	"tilecache/internal/archive/rangeread"
	"tilecache/internal/imaging"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/source/upstream"
	"tilecache/internal/vectortile"
)

// Opener opens the archives imports copy into layers: a file path only
// when Files (the embedded backend, where the process that takes the
// request is the one that works it, on the operator's own machine), an
// s3:// object through Access.Objects, an https:// PMTiles through a
// client held to the address policy of upstreams (Shared.Allow: a
// request never reaches the deployment's own network unless the process
// allows it).
type Opener struct {
	Access Access
	Shared upstream.Shared
	Files  bool
}

// Opened is an archive open for an import.
type Opened struct {
	// Kind is "pmtiles" or "mbtiles".
	Kind string
	// Format is the tiles' encoding as the archive says it: png, jpg,
	// webp, pbf, … ("" when it does not say).
	Format   string
	Location rangeread.Location
	// Version names what the archive is now (an object's or a web
	// server's ETag, a file's size and modification time; "" when
	// unknown): an import resumed later checks that it reads the same.
	Version string
	reader  walker
	closers []func() error
}

// walker is what both formats' readers do for an import.
type walker interface {
	archive.Reader
	Count(ctx context.Context, minZ, maxZ int) (int64, error)
	Walk(ctx context.Context, minZ, maxZ int, skip int64, fn func(z int, x, y int64, data []byte) error) error
}

// Close releases what the archive holds (a file, a temporary copy).
func (o *Opened) Close() error {
	var errs []error
	for _, c := range o.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// Metadata returns what the archive says about itself.
func (o *Opened) Metadata(ctx context.Context) (archive.Metadata, error) {
	return o.reader.Metadata(ctx)
}

// Count returns how many tiles the archive holds at levels minZ..maxZ.
func (o *Opened) Count(ctx context.Context, minZ, maxZ int) (int64, error) {
	return o.reader.Count(ctx, minZ, maxZ)
}

// Walk calls fn for the tiles of levels minZ..maxZ (y counted from the
// north) in the archive's own fixed order, after the first skip of them.
func (o *Opened) Walk(ctx context.Context, minZ, maxZ int, skip int64, fn func(z int, x, y int64, data []byte) error) error {
	return o.reader.Walk(ctx, minZ, maxZ, skip, fn)
}

// Open opens the archive at raw (a file path, s3://bucket/key or an
// https:// URL), its kind found from its first bytes. A location that is
// not allowed here, or an archive that cannot be read, is an Invalid
// error naming the location and the problem.
func (op Opener) Open(ctx context.Context, raw string) (*Opened, error) {
	loc, err := rangeread.Parse(raw)
	if err != nil {
		return nil, apperr.Invalidf("archive: %v", err)
	}
	invalid := func(format string, args ...any) error {
		return apperr.Invalidf("archive %s: %s", loc, fmt.Sprintf(format, args...))
	}
	var src pmtiles.RangeReader
	o := &Opened{Location: loc}
	switch loc.Scheme {
	case "file":
		if !op.Files {
			return nil, invalid("a file path is read only on the embedded backend; give an s3://bucket/key object or an https:// PMTiles URL")
		}
		f, err := rangeread.OpenFile(loc.Path)
		if err != nil {
			return nil, invalid("%v", err)
		}
		src, o.closers = f, append(o.closers, f.Close)
		if st, err := os.Stat(loc.Path); err == nil {
			o.Version = fmt.Sprintf("%d@%d", st.Size(), st.ModTime().UnixNano())
		}
	case "s3":
		if op.Access.Objects == nil {
			return nil, invalid("an archive in a bucket is read only on the AWS backend (here, give a file path)")
		}
		src = rangeread.NewS3(op.Access.Objects, loc.Bucket, loc.Key)
	default:
		client, err := upstream.NewClient(upstream.HTTPOptions{Addresses: op.Shared.Addresses(false)})
		if err != nil {
			return nil, err
		}
		src = rangeread.NewHTTP(client, loc.URL)
	}
	head, err := src.ReadRange(ctx, 0, 16)
	if err != nil {
		o.Close()
		return nil, invalid("%v", err)
	}
	if e, ok := src.(interface{ ETag() string }); ok {
		o.Version = e.ETag()
	}
	switch {
	case bytes.HasPrefix(head, []byte("PMTiles")):
		o.Kind = "pmtiles"
		err = op.openPMTiles(ctx, o, src)
	case bytes.HasPrefix(head, []byte("SQLite format 3\x00")):
		o.Kind = "mbtiles"
		if loc.Scheme != "file" && loc.Scheme != "s3" {
			err = errors.New("an MBTiles archive is an SQLite file, read from a file or an s3:// object; only PMTiles is read from a web server")
			break
		}
		err = op.openMBTiles(ctx, o, src)
	default:
		err = errors.New("neither a PMTiles archive (version 3) nor an MBTiles (SQLite) file")
	}
	if err != nil {
		o.Close()
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, invalid("%v", err)
	}
	return o, nil
}

func (op Opener) openPMTiles(ctx context.Context, o *Opened, src pmtiles.RangeReader) error {
	r, err := pmtiles.Open(ctx, src)
	if err != nil {
		return err
	}
	h := r.Header()
	if h.TileCompression != pmtiles.NoCompression && h.TileCompression != pmtiles.Gzip && h.TileCompression != pmtiles.UnknownCompression {
		return fmt.Errorf("tile compression %d is not supported (none or gzip)", h.TileCompression)
	}
	o.reader, o.Format = r, pmtiles.FormatOf(h.TileType)
	return nil
}

func (op Opener) openMBTiles(ctx context.Context, o *Opened, src pmtiles.RangeReader) error {
	if op.Access.OpenMBTiles == nil {
		return errors.New("this function does not read MBTiles archives")
	}
	path := o.Location.Path
	if o.Location.Scheme == "s3" {
		f, err := os.CreateTemp("", "tilecache-import-*.mbtiles")
		if err != nil {
			return fmt.Errorf("copy to a temporary file: %w", err)
		}
		path = f.Name()
		o.closers = append(o.closers, func() error { return os.Remove(path) })
		err = Download(ctx, src, f, MaxDownload)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("copy to a temporary file: %w", err)
		}
	}
	r, err := op.Access.OpenMBTiles(ctx, path)
	if err != nil {
		return err
	}
	o.closers = append([]func() error{r.Close}, o.closers...)
	w, ok := r.(walker)
	if !ok {
		return errors.New("this reader cannot walk an MBTiles file's levels")
	}
	md, err := r.Metadata(ctx)
	if err != nil {
		return err
	}
	o.reader, o.Format = w, md.Format
	return nil
}

// MIME returns the MIME type of the archive's tiles ("" when the archive
// does not say): vectortile.MVT for vector tiles.
func (o *Opened) MIME() string {
	if o.Format == "pbf" || o.Format == "mvt" {
		return vectortile.MVT
	}
	return mimeOf(o.Format)
}

// Matches reports whether the archive's tiles are tiles of format (a MIME
// type of the layer), stored as they are: the same encoding.
func (o *Opened) Matches(format string) bool {
	m := o.MIME()
	return m != "" && m == format
}

// Converter returns the function that makes an archive tile (data at
// x, y from the north of level z) into the tile of layer l in format
// stored under row yBottom: a raster tile as the archive holds it once it
// is found an image of the grid's tile size, a vector tile once checked
// (gzip kept); a blank tile marked skipped where the layer's source skips
// blank tiles (skipBlank), as a seed of it would. The archive's format
// must match (Matches).
func (o *Opened) Converter(l *layer.Layer, format string, tileW, tileH int) (func(ctx context.Context, x, yBottom int64, data []byte) (source.Tile, error), error) {
	var opts struct {
		SkipBlank string `yaml:"skipBlank"`
	}
	if l.Source.Kind != 0 {
		_ = l.Source.Decode(&opts) // an undecodable mapping has no skipBlank
	}
	pipe, err := upstream.NewPipeline(nil, upstream.ImageOptions{SkipBlank: opts.SkipBlank})
	if err != nil {
		return nil, err
	}
	skip := opts.SkipBlank != "" && opts.SkipBlank != "none"
	where := o.Location.String()
	if vectortile.Is(format) {
		return func(ctx context.Context, x, y int64, data []byte) (source.Tile, error) {
			return pipe.Vector(ctx, nil, format, data, vectortile.MVT, where, x, y)
		}, nil
	}
	return func(ctx context.Context, x, y int64, data []byte) (source.Tile, error) {
		if !skip {
			cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
			if err != nil || cfg.Width != tileW || cfg.Height != tileH {
				return source.Tile{}, fmt.Errorf("tile %d/%d is not a %d×%d %s image", x, y, tileW, tileH, describe(o.Format))
			}
			return source.Tile{X: x, Y: y, Data: data}, nil
		}
		img, err := imaging.Decode(data)
		if err != nil {
			return source.Tile{}, fmt.Errorf("tile %d/%d: %s: %w", x, y, describe(o.Format), err)
		}
		defer imaging.Release(img)
		if b := img.Bounds(); b.Dx() != tileW || b.Dy() != tileH {
			return source.Tile{}, fmt.Errorf("tile %d/%d is %d×%d pixels, the grid's are %d×%d", x, y, b.Dx(), b.Dy(), tileW, tileH)
		}
		if pipe.Blank(img) {
			return source.Tile{X: x, Y: y, Skip: true}, nil
		}
		return source.Tile{X: x, Y: y, Data: data}, nil
	}, nil
}
