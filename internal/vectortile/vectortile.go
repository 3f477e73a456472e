// Package vectortile knows the vector tile formats a layer may offer and
// checks an upstream's answer in one of them before it is stored: a
// Mapbox Vector Tile (MVT 2.1, application/vnd.mapbox-vector-tile) is
// walked as protobuf, bounded in size, and what it holds (its layers,
// their features and attribute keys) is reported; an answer that is not
// one (an HTML page, a service exception, a truncated body) is an error.
// A GeoJSON tile (application/json;type=geojson) is checked as a bounded
// FeatureCollection (ParseGeoJSON).
//
// The walker is written here rather than taken from an MVT library: it
// reads the wire format without decoding geometries or allocating per
// feature (a z0 tile of a dense layer holds tens of thousands), its
// nesting is fixed by the format (tile → layer → feature or value, never
// recursive), and every length is checked against what is left before it
// is used, so a hostile answer costs at most a few passes over its bytes.
// What a tile may hold (MaxLayers, MaxFeatures, MaxKeys, MaxValues,
// MaxNameLength) is counted before anything of it is kept, so what a
// check allocates is bounded by AllocBound of the tile's size whatever it
// holds.
package vectortile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// MVT is the media type of Mapbox Vector Tiles.
const MVT = "application/vnd.mapbox-vector-tile"

// MaxSize is the largest vector tile accepted, decompressed: 16 MiB. A
// Mapbox Vector Tile is meant to stay under 500 kB; MapServer's z0 tile
// of the test kit's 14,000 features is 1.1 MB.
const MaxSize = 16 << 20

// Is reports whether format (a MIME type) is a vector tile format (MVT or
// GeoJSON): it is not an image, and a metatile of it is never cut.
func Is(format string) bool { return format == MVT || format == GeoJSON }

// ParseAs checks data as a tile of format (MVT or GeoJSON) with Parse or
// ParseGeoJSON.
func ParseAs(format string, data []byte, max int) (Tile, error) {
	if format == GeoJSON {
		return ParseGeoJSON(data, max)
	}
	return Parse(data, max)
}

// Layer is what a vector tile holds of one of its layers.
type Layer struct {
	Name     string
	Features int
	// Keys are the attribute keys, in the layer's order.
	Keys []string
	// Geometry counts the features of each geometry type (1 point,
	// 2 line string, 3 polygon; 0 unknown).
	Geometry [4]int
	// KeyTypes is, for each of Keys, the type of the values features give
	// it: "String", "Number" or "Boolean" (TileJSON's vector_layers
	// fields), the first a feature gives; "" when none does.
	KeyTypes []string
}

// valueTypes are the TileJSON field types of Value's fields 1..7.
var valueTypes = [8]string{"", "String", "Number", "Number", "Number", "Number", "Number", "Boolean"}

// Tile is what a vector tile holds.
type Tile struct {
	Layers []Layer
	// Gzip is set when the tile as given was gzip-compressed.
	Gzip bool
}

// Empty reports whether no layer holds a feature: the vector tile draws
// nothing, as a transparent image.
func (t Tile) Empty() bool {
	for _, l := range t.Layers {
		if l.Features > 0 {
			return false
		}
	}
	return true
}

// Features returns the features of every layer.
func (t Tile) Features() int {
	n := 0
	for _, l := range t.Layers {
		n += l.Features
	}
	return n
}

// Error is a body that is not a valid vector tile.
type Error struct {
	Msg string
	// What the body is not: "" is a Mapbox Vector Tile.
	What string
	// tooLarge is set when the body is larger than the size allowed.
	tooLarge bool
}

func (e *Error) Error() string {
	if e.What != "" {
		return "not a " + e.What + ": " + e.Msg
	}
	return "not a Mapbox Vector Tile: " + e.Msg
}

func invalid(format string, args ...any) error { return &Error{Msg: fmt.Sprintf(format, args...)} }

// Gzipped reports whether data starts as a gzip stream does. No MVT can:
// its first byte would be field 3 of wire type 7, which does not exist.
func Gzipped(data []byte) bool { return len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b }

// Limits of what one tile may hold, checked by counting as its bytes are
// walked, before anything of it is kept: an answer past one is refused
// with an error naming the limit, at a cost of one pass over its bytes
// and no allocation per layer, feature, key or value. A tile under
// MaxSize could otherwise hold a million layers of a few bytes each, and
// a report of what it holds would take forty times its size. The limits
// are far above what real tiles hold: OpenMapTiles' have about 20
// layers and under a thousand keys in all (name:xx in some sixty
// languages in a few layers), a tile of raw OpenStreetMap tags a few
// thousand keys, and MapServer's z0 tile
// of the test kit's 14,000 features is 1.1 MB (200,000 such features
// would be 16 MB, the size limit).
const (
	// MaxLayers is the most layers a Mapbox Vector Tile may have.
	MaxLayers = 1000
	// MaxFeatures is the most features a tile may have, in all its
	// layers.
	MaxFeatures = 200_000
	// MaxKeys is the most attribute keys a tile may have: an MVT's keys
	// in all its layers, a GeoJSON tile's distinct property names. What a
	// tile reports of its keys is bounded by it.
	MaxKeys = 10_000
	// MaxValues is the most attribute values a Mapbox Vector Tile may
	// have in all its layers (each is kept as one byte while its features
	// are checked; a GeoJSON tile keeps nothing per value).
	MaxValues = 1_000_000
	// MaxNameLength is the longest layer name or key, in bytes
	// (OpenStreetMap's keys are at most 255 characters).
	MaxNameLength = 1024
)

// Parse checks that data (gzip-compressed or not) is a Mapbox Vector Tile
// of at most max bytes decompressed (max ≤ 0: MaxSize), within MaxLayers,
// MaxFeatures, MaxKeys, MaxValues and MaxNameLength, and returns what it
// holds. An empty body is a valid tile without layers.
//
// The tile is walked three times, none of them allocating per layer,
// feature, key or value: its layers are counted, then each layer's
// features, keys and values are counted and its name and keys measured,
// and only then is each layer checked and reported. What Parse allocates
// is at most AllocBound of the decompressed size.
func Parse(data []byte, max int) (Tile, error) {
	if max <= 0 {
		max = MaxSize
	}
	var t Tile
	var err error
	data, t.Gzip, err = gunzip(data, max)
	if err != nil {
		return Tile{}, err
	}
	c, err := count(data)
	if err != nil {
		return Tile{}, err
	}
	if c.layers == 0 {
		return t, nil
	}
	t.Layers = make([]Layer, 0, c.layers)
	var w walker
	err = fields(data, func(num int, wt int, v uint64, b []byte) error {
		if num != 3 {
			return nil
		}
		l, err := w.layer(b)
		if err != nil {
			return fmt.Errorf("layer %d: %w", len(t.Layers), err)
		}
		t.Layers = append(t.Layers, l)
		return nil
	})
	if err != nil {
		return Tile{}, err
	}
	return t, nil
}

// counts are what a tile holds, counted.
type counts struct {
	layers, features, keys, values int
}

// count counts the layers of a tile, refusing more than MaxLayers, then
// the features, keys and values of each, refusing a name or key longer
// than MaxNameLength and totals over MaxFeatures, MaxKeys and MaxValues.
// It checks the wire format of the tile and layer messages on the way.
func count(data []byte) (counts, error) {
	var c counts
	err := fields(data, func(num int, wt int, v uint64, b []byte) error {
		if num != 3 {
			return nil // an extension or unknown field: skipped
		}
		if wt != wireBytes {
			return invalid("layer field of wire type %d", wt)
		}
		c.layers++
		return nil
	})
	if err != nil {
		return c, err
	}
	if c.layers > MaxLayers {
		return c, invalid("%d layers, more than the %d a tile may have", c.layers, MaxLayers)
	}
	i := 0
	err = fields(data, func(num int, wt int, v uint64, b []byte) error {
		if num != 3 {
			return nil
		}
		err := fields(b, func(num int, wt int, v uint64, b []byte) error {
			want := wireBytes
			switch num {
			case 15, 5:
				want = wireVarint
			case 1, 2, 3, 4:
			default:
				return nil
			}
			if wt != want {
				return invalid("field %d of wire type %d", num, wt)
			}
			switch num {
			case 1:
				if len(b) > MaxNameLength {
					return invalid("a layer name of %d bytes, more than the %d a name may have", len(b), MaxNameLength)
				}
			case 2:
				c.features++
			case 3:
				if len(b) > MaxNameLength {
					return invalid("key %d of %d bytes, more than the %d a key may have", c.keys, len(b), MaxNameLength)
				}
				c.keys++
			case 4:
				c.values++
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
		i++
		return nil
	})
	switch {
	case err != nil:
		return c, err
	case c.features > MaxFeatures:
		return c, invalid("%d features, more than the %d a tile may have", c.features, MaxFeatures)
	case c.keys > MaxKeys:
		return c, invalid("%d keys, more than the %d a tile may have", c.keys, MaxKeys)
	case c.values > MaxValues:
		return c, invalid("%d values, more than the %d a tile may have", c.values, MaxValues)
	}
	return c, nil
}

// walker checks the layers of one tile, reusing its buffers from one
// layer to the next.
type walker struct {
	values []uint8 // per value of the layer, its typed field
	keys   []uint8 // per key of the layer, the type of its first value
}

// layer checks one layer message (counted: see count) and reports it.
func (w *walker) layer(data []byte) (Layer, error) {
	var (
		l                Layer
		version          uint64 = 1
		hasName, hasVers bool
		nkeys            int
	)
	w.values = w.values[:0]
	// First the layer's name, version, keys and values (which a feature
	// may precede), then its features.
	err := fields(data, func(num int, wt int, v uint64, b []byte) error {
		switch num {
		case 15:
			version, hasVers = v, true
		case 1:
			l.Name, hasName = string(b), true
		case 3:
			nkeys++
		case 4:
			typ, err := checkValue(b)
			if err != nil {
				return fmt.Errorf("value %d: %w", len(w.values), err)
			}
			w.values = append(w.values, typ)
		case 5:
			if v == 0 || v > 1<<31 {
				return invalid("extent %d", v)
			}
		}
		return nil
	})
	if err != nil {
		return Layer{}, err
	}
	switch {
	case !hasName || l.Name == "":
		return Layer{}, invalid("a layer without a name")
	case hasVers && version != 1 && version != 2:
		return Layer{}, invalid("layer %q of version %d", l.Name, version)
	}
	if nkeys > 0 {
		l.Keys = make([]string, 0, nkeys)
	}
	if cap(w.keys) < nkeys {
		w.keys = make([]uint8, nkeys)
	} else {
		w.keys = w.keys[:nkeys]
		clear(w.keys)
	}
	err = fields(data, func(num int, wt int, v uint64, b []byte) error {
		switch num {
		case 2:
			typ, err := checkFeature(b, w.values, w.keys)
			if err != nil {
				return fmt.Errorf("layer %q feature %d: %w", l.Name, l.Features, err)
			}
			l.Geometry[typ]++
			l.Features++
		case 3:
			l.Keys = append(l.Keys, string(b))
		}
		return nil
	})
	if err != nil {
		return Layer{}, err
	}
	if nkeys > 0 {
		l.KeyTypes = make([]string, nkeys)
		for i, t := range w.keys {
			l.KeyTypes[i] = valueTypes[t]
		}
	}
	return l, nil
}

// checkValue checks a Value message: exactly one of its typed fields,
// whose number it returns.
func checkValue(data []byte) (uint8, error) {
	n, typ := 0, uint8(0)
	err := fields(data, func(num int, wt int, v uint64, b []byte) error {
		want := -1
		switch num {
		case 1:
			want = wireBytes
		case 2:
			want = wireFixed32
		case 3:
			want = wireFixed64
		case 4, 5, 6, 7:
			want = wireVarint
		default:
			return nil
		}
		if wt != want {
			return invalid("value field %d of wire type %d", num, wt)
		}
		n, typ = n+1, uint8(num)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if n != 1 {
		return 0, invalid("a value with %d typed fields", n)
	}
	return typ, nil
}

// checkFeature checks a Feature message against its layer's values (the
// type of each) and keys (the type of each, set where still 0), and
// returns its geometry type.
func checkFeature(data []byte, values, keys []uint8) (int, error) {
	typ := 0
	var geometry []byte
	err := fields(data, func(num int, wt int, v uint64, b []byte) error {
		switch num {
		case 1:
			if wt != wireVarint {
				return invalid("id of wire type %d", wt)
			}
		case 2:
			if wt != wireBytes {
				return invalid("tags of wire type %d", wt)
			}
			n, key := 0, uint64(0)
			err := varints(b, func(tag uint64) error {
				limit := len(keys)
				if n%2 == 1 {
					limit = len(values)
				}
				if tag >= uint64(limit) {
					return invalid("tag %d names entry %d of %d", n, tag, limit)
				}
				if n%2 == 0 {
					key = tag
				} else if keys[key] == 0 {
					keys[key] = values[tag]
				}
				n++
				return nil
			})
			if err != nil {
				return err
			}
			if n%2 != 0 {
				return invalid("an odd number of tags (%d)", n)
			}
		case 3:
			if wt != wireVarint || v > 3 {
				return invalid("geometry type %d (wire type %d)", v, wt)
			}
			typ = int(v)
		case 4:
			if wt != wireBytes {
				return invalid("geometry of wire type %d", wt)
			}
			geometry = b
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return typ, checkGeometry(geometry)
}

// checkGeometry checks a feature's geometry commands: each command
// integer (MoveTo 1, LineTo 2, ClosePath 7) is followed by as many
// parameter pairs as its count says (ClosePath none).
func checkGeometry(data []byte) error {
	params := 0
	return varints(data, func(c uint64) error {
		if params > 0 {
			params--
			return nil
		}
		id, count := c&7, c>>3
		switch id {
		case 1, 2:
			if count == 0 || count > uint64(len(data)) {
				return invalid("geometry command %d with count %d", id, count)
			}
			params = int(count) * 2
		case 7:
			if count != 1 {
				return invalid("ClosePath with count %d", count)
			}
		default:
			return invalid("geometry command %d", id)
		}
		return nil
	}, func() error {
		if params > 0 {
			return invalid("geometry ends %d parameters short", params)
		}
		return nil
	})
}

// Wire types used by the format.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

var errTruncated = invalid("truncated")

// uvarint reads a varint from data at i, returning it and the next index.
func uvarint(data []byte, i int) (uint64, int, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		if i >= len(data) {
			return 0, 0, errTruncated
		}
		c := data[i]
		i++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
	return 0, 0, invalid("a varint longer than 10 bytes")
}

// fields calls fn for each field of a message: its number, wire type and
// value (varint: v; fixed: v; bytes: b, a sub-slice of data). Groups (wire
// types 3 and 4) and wire types 6 and 7 do not exist in the format.
func fields(data []byte, fn func(num int, wt int, v uint64, b []byte) error) error {
	for i := 0; i < len(data); {
		key, next, err := uvarint(data, i)
		if err != nil {
			return err
		}
		i = next
		num, wt := key>>3, int(key&7)
		if num == 0 || num > 1<<29-1 {
			return invalid("field number %d", num)
		}
		var (
			v uint64
			b []byte
		)
		switch wt {
		case wireVarint:
			v, i, err = uvarint(data, i)
			if err != nil {
				return err
			}
		case wireFixed64, wireFixed32:
			n := 8
			if wt == wireFixed32 {
				n = 4
			}
			if len(data)-i < n {
				return errTruncated
			}
			for k := n - 1; k >= 0; k-- {
				v = v<<8 | uint64(data[i+k])
			}
			i += n
		case wireBytes:
			n, next, err := uvarint(data, i)
			if err != nil {
				return err
			}
			i = next
			if n > uint64(len(data)-i) {
				return errTruncated
			}
			b = data[i : i+int(n)]
			i += int(n)
		default:
			return invalid("wire type %d", wt)
		}
		if err := fn(int(num), wt, v, b); err != nil {
			return err
		}
	}
	return nil
}

// varints calls fn for each varint of a packed field, then end (if any).
func varints(data []byte, fn func(uint64) error, end ...func() error) error {
	for i := 0; i < len(data); {
		v, next, err := uvarint(data, i)
		if err != nil {
			return err
		}
		i = next
		if err := fn(v); err != nil {
			return err
		}
	}
	for _, e := range end {
		if err := e(); err != nil {
			return err
		}
	}
	return nil
}

// gunzip returns data decompressed when it is gzip-compressed (and
// whether it was), failing when it is more than max bytes either way.
// The buffer is sized from the stream's trailer (its last member's size),
// so a tile of one member is read without growing it.
func gunzip(data []byte, max int) ([]byte, bool, error) {
	gz := Gzipped(data)
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, true, invalid("gzip header: %v", err)
		}
		var buf bytes.Buffer
		if n, ok := gzipSize(data); ok {
			buf.Grow(min(n, max) + bytes.MinRead)
		}
		if _, err := buf.ReadFrom(io.LimitReader(zr, int64(max)+1)); err != nil {
			return nil, true, invalid("gzip stream: %v", err)
		}
		data = buf.Bytes()
	}
	if len(data) > max {
		return nil, gz, &Error{Msg: fmt.Sprintf("more than %d bytes", max), tooLarge: true}
	}
	return data, gz, nil
}

// gzipSize returns the size a gzip stream says it decompresses to: the
// last four bytes, its last member's size modulo 2³².
func gzipSize(data []byte) (int, bool) {
	if len(data) < 18 { // a header of 10 bytes and a trailer of 8
		return 0, false
	}
	t := data[len(data)-4:]
	return int(uint32(t[0]) | uint32(t[1])<<8 | uint32(t[2])<<16 | uint32(t[3])<<24), true
}

// Size returns the size of data once decompressed, as far as can be told
// before decompressing it, from 1 to MaxSize: its length, or when it is
// gzip-compressed the size its trailer gives. A gzip stream of several
// members (rare) decompresses to more than its trailer says: Parse with
// this size as its max refuses it (IsTooLarge), and a caller that reserved
// memory for this size checks it again with MaxSize.
func Size(data []byte) int {
	n := len(data)
	if Gzipped(data) {
		n, _ = gzipSize(data)
	}
	return min(max(n, 1), MaxSize)
}

// AllocBound is the most bytes Parse or ParseGeoJSON allocates to check a
// tile of size bytes decompressed (or, if larger, of the size its gzip
// trailer gives, up to their max: the buffer it is read into is sized
// from the trailer): the decompressed copy of a gzip-
// compressed tile, the names reported (never more bytes than the tile
// holds), the walk's buffers of a byte per key and value, and a constant
// for the gzip reader (its window and tables) and the report's structures
// (at most MaxLayers layers and MaxKeys keys, with a GeoJSON tile's set of
// the keys met: 10,000 new GeoJSON keys take 2.3 MB). FuzzParseMemory
// and TestHostileTiles hold both parsers to it.
func AllocBound(size int) int64 { return 3*int64(size) + 4<<20 }

// IsTooLarge reports whether err refused a tile for its size.
func IsTooLarge(err error) bool {
	e, ok := errors.AsType[*Error](err)
	return ok && e.tooLarge
}

// IsInvalid reports whether err says a body is not a vector tile.
func IsInvalid(err error) bool {
	_, ok := errors.AsType[*Error](err)
	return ok
}
