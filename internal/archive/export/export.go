// Package export is what every export of stored tiles to an archive
// shares, whoever reads the tiles: the command line (tilecache export,
// through a deployment's public tiles) and the export task (a worker,
// through the tile store). It names the archive kinds, maps a tile
// format to an archive's, brings a stored tile to the encoding an
// archive holds, fills an archive's metadata from a tile set's
// description, and creates the writer of a kind on a file.
//
// It knows no layer, grid set or store: its callers describe the tile
// set in its terms (Description).
package export

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"tilecache/internal/archive"
	"tilecache/internal/archive/gpkg"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/archive/pmtiles"
)

// The archive kinds, each also its file name's extension.
const (
	PMTiles = "pmtiles"
	MBTiles = "mbtiles"
	GPKG    = "gpkg"
)

// Kind returns the archive kind s names (case-insensitively); ok is false
// for anything else.
func Kind(s string) (kind string, ok bool) {
	switch k := strings.ToLower(s); k {
	case PMTiles, MBTiles, GPKG:
		return k, true
	}
	return "", false
}

// XYZOnly reports whether archives of kind hold only the Web Mercator
// pyramid in XYZ order (PMTiles and MBTiles do; a GeoPackage has a tile
// matrix set of its own).
func XYZOnly(kind string) bool { return kind != GPKG }

// ContentType is the media type of an archive of kind.
func ContentType(kind string) string {
	switch kind {
	case MBTiles:
		return "application/vnd.mapbox.mbtiles"
	case GPKG:
		return "application/geopackage+sqlite3"
	}
	return "application/vnd.pmtiles"
}

// TileFormat returns an archive's name for a tile format (a MIME type):
// "png", "jpg", "webp" or "pbf"; ok is false for a format no archive
// holds.
func TileFormat(mime string) (string, bool) {
	switch {
	case strings.HasPrefix(mime, "image/png"):
		return "png", true
	case mime == "image/jpeg":
		return "jpg", true
	case mime == "image/webp":
		return "webp", true
	case mime == "application/vnd.mapbox-vector-tile":
		return "pbf", true
	}
	return "", false
}

// Check returns an error naming the problem when archives of kind cannot
// hold tiles of mime.
func Check(kind, mime string) error {
	f, ok := TileFormat(mime)
	switch {
	case !ok:
		return fmt.Errorf("tile format %s: an archive holds png, jpeg, webp or Mapbox vector tiles", mime)
	case kind == GPKG && f == "pbf":
		return errors.New("a GeoPackage tile table holds images: export vector tiles to pmtiles or mbtiles")
	}
	return nil
}

// MaxTile bounds a tile's bytes once decompressed.
const MaxTile = 64 << 20

// TileData returns a stored tile's bytes (gzipped when stored with that
// Content-Encoding) as archives of tileFormat hold them: vector tiles
// gzipped once, as MBTiles and PMTiles readers expect, images as they are.
func TileData(tileFormat string, data []byte, gzipped bool) ([]byte, error) {
	switch {
	case tileFormat == "pbf" && !gzipped:
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		zw.Write(data)
		zw.Close()
		return buf.Bytes(), nil
	case tileFormat != "pbf" && gzipped:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(io.LimitReader(zr, MaxTile))
	}
	return data, nil
}

// Description is what an export says of its tile set, for the archive's
// metadata.
type Description struct {
	// Name is the tile set's title (its layer's name when it has none).
	Name        string
	Attribution string
	// TileFormat is the archive's name of the tiles' format (TileFormat).
	TileFormat       string
	MinZoom, MaxZoom int
	// Box is the exported area in Web Mercator metres: minx, miny, maxx,
	// maxy.
	Box [4]float64
	// Center is the tile set's own centre (TileJSON's: longitude,
	// latitude, zoom), nil when it has none or the export is of a part
	// of it (then the centre of Box).
	Center *[3]float64
	// VectorLayers is TileJSON's vector_layers of a vector tile set, as
	// its JSON.
	VectorLayers json.RawMessage
}

// Metadata returns the archive's metadata for d.
func Metadata(d Description) archive.Metadata {
	md := archive.Metadata{Name: d.Name, Attribution: d.Attribution, Format: d.TileFormat,
		MinZoom: d.MinZoom, MaxZoom: d.MaxZoom, VectorLayers: d.VectorLayers}
	if d.TileFormat != "pbf" {
		md.Type = "overlay"
		md.VectorLayers = nil
	}
	w, s := MercatorLonLat(d.Box[0], d.Box[1])
	e, n := MercatorLonLat(d.Box[2], d.Box[3])
	md.Bounds = [4]float64{w, s, e, n}
	md.Center = [3]float64{(w + e) / 2, (s + n) / 2, float64(d.MinZoom)}
	if d.Center != nil {
		md.Center = *d.Center
		md.Center[2] = min(max(md.Center[2], float64(d.MinZoom)), float64(d.MaxZoom))
	}
	return md
}

// MercatorLonLat converts Web Mercator metres to degrees, clamped to the
// world Web Mercator maps.
func MercatorLonLat(x, y float64) (lon, lat float64) {
	const r = 6378137.0
	lon = x / r * 180 / math.Pi
	lat = (2*math.Atan(math.Exp(y/r)) - math.Pi/2) * 180 / math.Pi
	return math.Max(-180, math.Min(180, lon)), math.Max(-85.05112878, math.Min(85.05112878, lat))
}

// Writer is an archive being written to a file.
type Writer interface {
	archive.Writer
	// Abort drops what was written.
	Abort() error
}

// Options are how Create makes an archive.
type Options struct {
	// TileFormat is the archive's name of the tiles' format (TileFormat).
	TileFormat string
	// MaxZoom is the highest level, of the Web Mercator pyramid unless
	// TileMatrixSet is given.
	MaxZoom int
	// TileMatrixSet is a GeoPackage's tiling; zero: the Web Mercator
	// pyramid to MaxZoom.
	TileMatrixSet gpkg.TileMatrixSet
	// StagingDir is where a PMTiles writer stages its tiles; "" means a
	// temporary directory of its own.
	StagingDir string
}

// Create creates an archive of kind at path (replacing a file there);
// closeOut closes the file a PMTiles writer writes to, after Close or
// Abort.
func Create(ctx context.Context, kind, path string, o Options) (w Writer, closeOut func() error, err error) {
	none := func() error { return nil }
	switch kind {
	case MBTiles:
		os.Remove(path)
		w, err := mbtiles.Create(ctx, path)
		return w, none, err
	case GPKG:
		os.Remove(path)
		tms := o.TileMatrixSet
		if len(tms.Matrices) == 0 {
			tms = gpkg.WebMercatorQuad(o.MaxZoom)
		}
		w, err := gpkg.Create(ctx, path, gpkg.Options{Format: o.TileFormat, TileMatrixSet: tms})
		return w, none, err
	case PMTiles:
	default:
		return nil, nil, fmt.Errorf("unknown archive kind %q", kind)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	opt := pmtiles.Options{}
	if o.TileFormat == "pbf" {
		opt.TileCompression = pmtiles.Gzip
	}
	pw, err := pmtiles.Create(o.StagingDir, f, opt)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return pw, f.Close, nil
}
