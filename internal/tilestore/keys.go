package tilestore

import (
	"crypto/sha1"
	"encoding/hex"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// formats maps a MIME type to its GeoWebCache short name and file extension
// (contract §9).
var formats = map[string][2]string{
	"image/png":             {"png", "png"},
	"image/jpeg":            {"jpeg", "jpeg"},
	"image/gif":             {"gif", "gif"},
	"image/png8":            {"png8", "png"},
	"image/png24":           {"png24", "png"},
	"image/png; mode=24bit": {"png_24", "png"},
	"image/tiff":            {"tiff", "tiff"},
	// GeoWebCache's ApplicationMime.mapboxVector: short name
	// mapbox-vectortile, extension pbf.
	"application/vnd.mapbox-vector-tile": {"mapbox-vectortile", "pbf"},
	// GeoWebCache's ApplicationMime.geojson: short name geojson,
	// extension geojson.
	"application/json;type=geojson": {"geojson", "geojson"},
}

// Format returns the short name and extension of a MIME type; ok is false
// for a type the key layout does not know.
func Format(mime string) (id, ext string, ok bool) {
	f, ok := formats[mime]
	return f[0], f[1], ok
}

// FormatExt returns the file extension of a format short name (png8 →
// png); ok is false for a short name the key layout does not know.
func FormatExt(id string) (ext string, ok bool) {
	for _, f := range formats {
		if f[0] == id {
			return f[1], true
		}
	}
	return "", false
}

// DefaultParametersID is the parameters id of tiles without parameters.
const DefaultParametersID = "default"

// ParametersID returns GeoWebCache's id for normalised parameters:
// "default" when there are none, else the lower-case hex SHA-1 of "?" and
// the KEY=value pairs sorted by key and joined with "&".
func ParametersID(params map[string]string) string {
	if len(params) == 0 {
		return DefaultParametersID
	}
	sum := sha1.Sum([]byte(ParametersQuery(params)))
	return hex.EncodeToString(sum[:])
}

// ParametersQuery returns "?K1=v1&K2=v2" with keys sorted, values verbatim.
func ParametersQuery(params map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(params)) {
		if i == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(params[k])
	}
	return b.String()
}

// SetName names a tile set as users and the disk quota do: by the layer's
// name (not its store id), a grid set, a format's short name and a
// parameters id. It is the unit GeoWebCache keeps page statistics for. It
// is comparable, so it can key maps.
type SetName struct {
	Layer        string // layer name, e.g. "topp:states"
	GridSetID    string
	FormatID     string // short name, e.g. "png"
	ParametersID string
}

// ID returns "layer|gridSet|formatId|parametersId", the tile set's id in
// usage records and task stores.
func (s SetName) ID() string {
	return s.Layer + "|" + s.GridSetID + "|" + s.FormatID + "|" + s.ParametersID
}

// TileSet is a tile set as the store holds it: its name, and where its
// tiles are kept. Its keys share a prefix (Dir), which names the layer by
// its store id, LayerID, rather than by SetName.Layer.
type TileSet struct {
	SetName
	Prefix  string // configured key prefix, may be empty
	LayerID string // the layer's store id, the first segment of its keys
	Ext     string // extension, e.g. "png"
}

// LayerPrefix returns "[prefix/]layerId/", the prefix of every object of a layer.
func LayerPrefix(prefix, layerID string) string {
	if prefix == "" {
		return layerID + "/"
	}
	return strings.TrimSuffix(prefix, "/") + "/" + layerID + "/"
}

// Dir returns the key prefix of the tile set, ending in "/".
func (s TileSet) Dir() string {
	return LayerPrefix(s.Prefix, s.LayerID) + s.GridSetID + "/" + s.FormatID + "/" + s.ParametersID + "/"
}

// LevelDir returns the key prefix of the tile set's tiles at level z.
func (s TileSet) LevelDir(z int) string { return s.Dir() + strconv.Itoa(z) + "/" }

// Key returns the object key of tile z/x/y (y counted from the bottom).
// It writes straight into one buffer, so building a key costs one allocation.
func (s TileSet) Key(z int, x, y int64) string {
	var b strings.Builder
	prefix := strings.TrimSuffix(s.Prefix, "/")
	b.Grow(len(prefix) + len(s.LayerID) + len(s.GridSetID) + len(s.FormatID) + len(s.ParametersID) + len(s.Ext) + 40)
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteByte('/')
	}
	for _, part := range [...]string{s.LayerID, s.GridSetID, s.FormatID, s.ParametersID} {
		b.WriteString(part)
		b.WriteByte('/')
	}
	var num [20]byte
	b.Write(strconv.AppendInt(num[:0], int64(z), 10))
	b.WriteByte('/')
	b.Write(strconv.AppendInt(num[:0], x, 10))
	b.WriteByte('/')
	b.Write(strconv.AppendInt(num[:0], y, 10))
	b.WriteByte('.')
	b.WriteString(s.Ext)
	return b.String()
}

// ParseKey parses the key of one of the set's tiles: it is Key's inverse,
// and ok is true only for a key Key builds byte for byte. Such a key is the
// set's directory (as Key writes it: Dir, for any prefix but "/"), then
// "z/x/y", each a non-negative decimal number written canonically (digits
// only: no sign, no space, no leading zero unless it is "0"; z an int, x
// and y int64s), then "." and the set's extension. Numbers follow the REST
// layer's rule for tile paths, so that one tile has one key and one path.
// It does not allocate.
func (s TileSet) ParseKey(key string) (z int, x, y int64, ok bool) {
	rest, ok := cutLayer(key, s.Prefix, s.LayerID)
	for _, id := range [...]string{s.GridSetID, s.FormatID, s.ParametersID} {
		if ok {
			rest, ok = cutSegment(rest, id)
		}
	}
	if !ok {
		return 0, 0, 0, false
	}
	z, x, y, ext, ok := parseTilePath(rest)
	if !ok || ext != s.Ext {
		return 0, 0, 0, false
	}
	return z, x, y, true
}

// ParseLayerKey parses the key of a tile of layer layerID under prefix (a
// key a listing of LayerPrefix(prefix, layerID) finds) when the tile set is
// not known beforehand: it returns the tile set named by the key (prefix
// and layerID as given, its grid set, format and parameters ids and its
// extension; the key does not hold the layer's name, so set.Layer is empty
// for the caller to fill) and the tile, so that set.Key(z, x, y) == key. The three ids
// must be non-empty and hold no "/"; the tile is written as ParseKey
// requires, with the format's extension when Format knows the format id
// (FormatExt), and any non-empty extension without "/" otherwise (tiles of
// a format this program does not serve, left by another writer of the
// bucket). ok is false for any other key, side objects such as
// ParametersKey's included.
func ParseLayerKey(prefix, layerID, key string) (set TileSet, z int, x, y int64, ok bool) {
	rest, ok := cutLayer(key, prefix, layerID)
	var ids [3]string
	for i := range ids {
		if ok {
			ids[i], rest, ok = strings.Cut(rest, "/")
			ok = ok && ids[i] != ""
		}
	}
	if !ok {
		return TileSet{}, 0, 0, 0, false
	}
	z, x, y, ext, ok := parseTilePath(rest)
	if !ok {
		return TileSet{}, 0, 0, 0, false
	}
	if want, known := FormatExt(ids[1]); known && ext != want {
		return TileSet{}, 0, 0, 0, false
	}
	set = TileSet{SetName: SetName{GridSetID: ids[0], FormatID: ids[1], ParametersID: ids[2]}, Prefix: prefix, LayerID: layerID, Ext: ext}
	return set, z, x, y, true
}

// cutLayer returns what follows "[prefix/]layerID/" in key, the start of
// every key of the layer as Key writes it.
func cutLayer(key, prefix, layerID string) (string, bool) {
	if prefix = strings.TrimSuffix(prefix, "/"); prefix != "" {
		var ok bool
		if key, ok = cutSegment(key, prefix); !ok {
			return "", false
		}
	}
	return cutSegment(key, layerID)
}

// cutSegment returns what follows seg and "/" at the start of key.
func cutSegment(key, seg string) (string, bool) {
	if len(key) <= len(seg) || key[len(seg)] != '/' || key[:len(seg)] != seg {
		return "", false
	}
	return key[len(seg)+1:], true
}

// parseTilePath parses "z/x/y.ext", the end of a tile's key, by ParseKey's
// rules; ext is non-empty and holds no "/".
func parseTilePath(p string) (z int, x, y int64, ext string, ok bool) {
	zs, p, ok1 := strings.Cut(p, "/")
	xs, p, ok2 := strings.Cut(p, "/")
	ys, ext, ok3 := strings.Cut(p, ".")
	if !ok1 || !ok2 || !ok3 || ext == "" || strings.IndexByte(ext, '/') >= 0 {
		return 0, 0, 0, "", false
	}
	zv, okz := ParseCanonical(zs)
	x, okx := ParseCanonical(xs)
	y, oky := ParseCanonical(ys)
	if !okz || !okx || !oky || int64(int(zv)) != zv {
		return 0, 0, 0, "", false
	}
	return int(zv), x, y, ext, true
}

// ParseCanonical parses a non-negative int64 written as strconv.FormatInt
// writes it: digits only, no leading zero unless it is "0", at most
// math.MaxInt64. It takes a string or bytes, so that a parser of bytes
// need not copy them; every parser of tile numbers in paths and keys uses
// it, so that one tile has one path and one key.
func ParseCanonical[S string | []byte](s S) (int64, bool) {
	if len(s) == 0 || len(s) > 19 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n uint64 // 19 digits stay below 10¹⁹ < 2⁶⁴
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// IndexObject is the key, under the key prefix, of the demo map page: the
// object answered for "/", where the CDN in front of the bucket and the
// local program serve it (package site writes it).
const IndexObject = "index.html"

// ParametersKey returns the key of the side object that records a
// parameters id's parameters: "[prefix/]layerId/parameters-{id}.properties".
func ParametersKey(prefix, layerID, parametersID string) string {
	return LayerPrefix(prefix, layerID) + "parameters-" + parametersID + ".properties"
}

// ArchivesDir is the first key segment, under the key prefix, of tile
// archives served as they are (a PMTiles read by map clients with range
// requests): "archives/…". No layer may have it as its id.
const ArchivesDir = "archives"

// ArchiveKey returns the key, without the key prefix, of a tile set's
// PMTiles archive: "archives/layerId/gridSetId/formatId/parametersId.pmtiles".
func ArchiveKey(layerID, gridSetID, formatID, parametersID string) string {
	return ArchivesDir + "/" + layerID + "/" + gridSetID + "/" + formatID + "/" + parametersID + ".pmtiles"
}
