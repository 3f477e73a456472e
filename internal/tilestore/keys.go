package tilestore

import (
	"crypto/sha1"
	"encoding/hex"
	"maps"
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

// TileSet names the tiles of one layer, grid set, format and parameters id;
// its keys share a prefix.
type TileSet struct {
	Prefix       string // configured key prefix, may be empty
	LayerID      string
	GridSetID    string
	FormatID     string // short name, e.g. "png"
	Ext          string // extension, e.g. "png"
	ParametersID string
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

// ParametersKey returns the key of the side object that records a
// parameters id's parameters: "[prefix/]layerId/parameters-{id}.properties".
func ParametersKey(prefix, layerID, parametersID string) string {
	return LayerPrefix(prefix, layerID) + "parameters-" + parametersID + ".properties"
}
