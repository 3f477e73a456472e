package vectortile

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// GeoJSON is the media type of GeoJSON tiles, as GeoWebCache names it
// (short name geojson, extension geojson).
const GeoJSON = "application/json;type=geojson"

// MaxGeoJSONDepth is the deepest nesting of arrays and objects a GeoJSON
// tile may have. A MultiPolygon's coordinates are four arrays deep inside
// a feature inside the collection (seven in all); GeometryCollections and
// nested properties leave room up to 32. The nesting is checked before
// the body is decoded, so a hostile body of brackets costs one pass.
const MaxGeoJSONDepth = 32

// emptyFeatureCollection is the tile without features: what an empty
// answer stands for when it is stored.
var emptyFeatureCollection = []byte(`{"type":"FeatureCollection","features":[]}`)

// EmptyGeoJSON returns a GeoJSON tile without features.
func EmptyGeoJSON() []byte { return bytes.Clone(emptyFeatureCollection) }

// ParseGeoJSON checks that data (gzip-compressed or not) is a GeoJSON
// FeatureCollection of at most max bytes decompressed (max ≤ 0: MaxSize),
// nested at most MaxGeoJSONDepth deep, whose features are Features, of at
// most MaxFeatures features and MaxKeys distinct property keys of at most
// MaxNameLength bytes, and returns what it holds as one layer (named ""):
// its features, counted by geometry type, and the keys of their
// properties (in the order first met, each with the type of the first
// value that has one). An empty body is a valid tile without features.
//
// The body is checked as JSON (json.Valid, which builds nothing) and then
// walked in place: nothing is kept of a feature but its count, and of its
// properties but the keys not met before, so what ParseGeoJSON allocates
// is at most AllocBound of the decompressed size whatever the tile holds.
// Members are matched by their exact names, as GeoJSON spells them.
func ParseGeoJSON(data []byte, max int) (Tile, error) {
	if max <= 0 {
		max = MaxSize
	}
	data, gz, err := gunzip(data, max)
	if err != nil {
		return Tile{}, geoJSONError(err)
	}
	t := Tile{Gzip: gz}
	if len(bytes.TrimSpace(data)) == 0 {
		return t, nil
	}
	if err := checkDepth(data, MaxGeoJSONDepth); err != nil {
		return Tile{}, err
	}
	if !json.Valid(data) {
		// Unmarshal checks the whole body before decoding anything, so it
		// stops at the syntax error, which it describes.
		err := json.Unmarshal(data, &struct{}{})
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return Tile{}, invalidGeoJSON("%v", err)
	}
	w := jsonWalker{data: data}
	l, err := w.collection()
	if err != nil {
		return Tile{}, err
	}
	if l.Features > 0 {
		t.Layers = []Layer{l}
	}
	return t, nil
}

// jsonWalker walks a valid JSON document in place.
type jsonWalker struct {
	data []byte
	i    int
	buf  []byte // a key with its escapes decoded
}

// collection walks the FeatureCollection.
func (w *jsonWalker) collection() (Layer, error) {
	var (
		l           Layer
		isFC        bool
		hasFeatures bool
		seen        map[string]int // key → its index in l.Keys
	)
	if w.peek() != '{' {
		return l, invalidGeoJSON("not a FeatureCollection with features")
	}
	err := w.object(func(key string) error {
		switch key {
		case "type":
			typ, ok := w.str()
			if !ok {
				return invalidGeoJSON("the collection's type is not a string")
			}
			isFC = string(typ) == "FeatureCollection"
		case "features":
			switch w.peek() {
			case 'n':
				w.skip()
				return nil
			case '[':
			default:
				return invalidGeoJSON("features is not an array")
			}
			if hasFeatures {
				return invalidGeoJSON("features given twice")
			}
			hasFeatures = true
			return w.array(func(i int) error {
				if i >= MaxFeatures {
					w.skip() // counted, not checked: the tile is refused
					l.Features++
					return nil
				}
				if err := w.feature(i, &l, &seen); err != nil {
					return err
				}
				l.Features++
				return nil
			})
		default:
			w.skip()
		}
		return nil
	})
	if err != nil {
		return Layer{}, err
	}
	if !isFC || !hasFeatures {
		return Layer{}, invalidGeoJSON("not a FeatureCollection with features")
	}
	if l.Features > MaxFeatures {
		return Layer{}, invalidGeoJSON("%d features, more than the %d a tile may have", l.Features, MaxFeatures)
	}
	return l, nil
}

// feature walks feature i, counting its geometry in l and adding its
// property keys not in seen to l.
func (w *jsonWalker) feature(i int, l *Layer, seen *map[string]int) error {
	if w.peek() != '{' {
		return invalidGeoJSON("feature %d is not an object", i)
	}
	typ, isFeature, geometry := "", false, -1
	err := w.object(func(key string) error {
		switch key {
		case "type":
			t, ok := w.str()
			if !ok {
				return invalidGeoJSON("feature %d has a type that is not a string", i)
			}
			if isFeature = string(t) == "Feature"; !isFeature {
				typ = string(t[:min(len(t), 64)]) // for the message
			}
		case "geometry":
			switch w.peek() {
			case 'n':
				w.skip()
				geometry = -1
				return nil
			case '{':
			default:
				return invalidGeoJSON("feature %d has a geometry that is not an object", i)
			}
			geometry = 0
			return w.object(func(key string) error {
				if key != "type" {
					w.skip()
					return nil
				}
				t, ok := w.str()
				if !ok {
					return invalidGeoJSON("feature %d has a geometry type that is not a string", i)
				}
				switch string(t) {
				case "Point", "MultiPoint":
					geometry = 1
				case "LineString", "MultiLineString":
					geometry = 2
				case "Polygon", "MultiPolygon":
					geometry = 3
				default:
					geometry = 0
				}
				return nil
			})
		case "properties":
			if w.peek() != '{' {
				w.skip() // null, or not an object: no keys
				return nil
			}
			return w.properties(i, l, seen)
		default:
			w.skip()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !isFeature {
		return invalidGeoJSON("feature %d has type %q", i, typ)
	}
	if geometry >= 0 {
		l.Geometry[geometry]++
	}
	return nil
}

// properties walks the properties of feature i, adding the keys not in
// seen to l.
func (w *jsonWalker) properties(i int, l *Layer, seen *map[string]int) error {
	return w.objectRaw(func(raw []byte, escaped bool) error {
		if len(raw) > MaxNameLength {
			return invalidGeoJSON("feature %d has a property key of %d bytes, more than the %d a key may have", i, len(raw), MaxNameLength)
		}
		typ := jsonType(w.data[w.i])
		w.skip()
		if *seen == nil {
			*seen = make(map[string]int)
		}
		if escaped {
			w.buf = unquote(w.buf[:0], raw)
			raw = w.buf
		}
		k, ok := (*seen)[string(raw)]
		if !ok {
			k = w.addKey(l, seen, string(raw))
		}
		if k < 0 {
			return invalidGeoJSON("more than the %d property keys a tile may have", MaxKeys)
		}
		if l.KeyTypes[k] == "" {
			l.KeyTypes[k] = typ
		}
		return nil
	})
}

// addKey adds key to l and seen and returns its index, or -1 when l has
// MaxKeys keys already.
func (*jsonWalker) addKey(l *Layer, seen *map[string]int, key string) int {
	if len(l.Keys) >= MaxKeys {
		return -1
	}
	(*seen)[key] = len(l.Keys)
	l.Keys = append(l.Keys, key)
	l.KeyTypes = append(l.KeyTypes, "")
	return len(l.Keys) - 1
}

// jsonType is TileJSON's field type of a JSON value starting with c.
func jsonType(c byte) string {
	switch {
	case c == '"':
		return "String"
	case c == 't' || c == 'f':
		return "Boolean"
	case c == '-' || (c >= '0' && c <= '9'):
		return "Number"
	}
	return ""
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// peek skips white space and returns the next byte (0 at the end).
func (w *jsonWalker) peek() byte {
	for w.i < len(w.data) && isSpace(w.data[w.i]) {
		w.i++
	}
	if w.i == len(w.data) {
		return 0
	}
	return w.data[w.i]
}

// rawString reads the string at w.i: its bytes between the quotes, and
// whether they hold an escape.
func (w *jsonWalker) rawString() ([]byte, bool) {
	start, escaped := w.i+1, false
	for w.i++; w.data[w.i] != '"'; w.i++ {
		if w.data[w.i] == '\\' {
			escaped = true
			w.i++
		}
	}
	w.i++
	return w.data[start : w.i-1], escaped
}

// str reads the value at w.i if it is a string: its bytes with escapes
// decoded, valid until the next call (false, and the value skipped, if it
// is not a string).
func (w *jsonWalker) str() ([]byte, bool) {
	if w.peek() != '"' {
		w.skip()
		return nil, false
	}
	raw, escaped := w.rawString()
	if escaped {
		w.buf = unquote(w.buf[:0], raw)
		return w.buf, true
	}
	return raw, true
}

// unquote appends to dst the bytes of a valid JSON string (raw, between
// its quotes) with its escapes decoded, as encoding/json decodes them (an
// unpaired surrogate becomes U+FFFD).
func unquote(dst, raw []byte) []byte {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(raw[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					r2 = hex4(raw[i+3 : i+7])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // " \\ /
			dst = append(dst, raw[i])
		}
	}
	return dst
}

// hex4 decodes four hexadecimal digits.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// skip skips the value at w.i.
func (w *jsonWalker) skip() {
	switch w.peek() {
	case '"':
		w.rawString()
	case '{', '[':
		depth := 0
		for ; ; w.i++ {
			switch w.data[w.i] {
			case '"':
				w.rawString()
				w.i--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					w.i++
					return
				}
			}
		}
	default: // a number, true, false or null
		for w.i < len(w.data) && !isSpace(w.data[w.i]) && w.data[w.i] != ',' && w.data[w.i] != '}' && w.data[w.i] != ']' {
			w.i++
		}
	}
}

// objectRaw calls fn for each member of the object at w.i with its key's
// bytes and whether they hold an escape; fn reads or skips the value.
func (w *jsonWalker) objectRaw(fn func(raw []byte, escaped bool) error) error {
	w.peek()
	w.i++ // {
	for {
		switch w.peek() {
		case '}':
			w.i++
			return nil
		case ',':
			w.i++
			w.peek()
		}
		raw, escaped := w.rawString()
		w.peek()
		w.i++ // :
		w.peek()
		if err := fn(raw, escaped); err != nil {
			return err
		}
	}
}

// object calls fn for each member of the object at w.i with its key when
// it is one of the few names the walk looks for (else ""); fn reads or
// skips the value.
func (w *jsonWalker) object(fn func(key string) error) error {
	return w.objectRaw(func(raw []byte, escaped bool) error {
		if escaped && len(raw) <= 64 { // "properties" in \uXXXX escapes is 60 bytes
			w.buf = unquote(w.buf[:0], raw)
			raw = w.buf
		}
		key := ""
		switch string(raw) {
		case "type":
			key = "type"
		case "features":
			key = "features"
		case "geometry":
			key = "geometry"
		case "properties":
			key = "properties"
		}
		return fn(key)
	})
}

// array calls fn for each element of the array at w.i with its index;
// fn reads or skips the element.
func (w *jsonWalker) array(fn func(i int) error) error {
	w.peek()
	w.i++ // [
	for i := 0; ; i++ {
		switch w.peek() {
		case ']':
			w.i++
			return nil
		case ',':
			w.i++
			w.peek()
		}
		if err := fn(i); err != nil {
			return err
		}
	}
}

// checkDepth fails when arrays and objects in data (JSON) nest deeper
// than max, outside strings.
func checkDepth(data []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > max {
				return invalidGeoJSON("nested deeper than %d", max)
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return nil
}

func invalidGeoJSON(format string, args ...any) error {
	e := invalid(format, args...).(*Error)
	e.What = "GeoJSON FeatureCollection"
	return e
}

// geoJSONError names GeoJSON in an error of gunzip.
func geoJSONError(err error) error {
	if e, ok := errors.AsType[*Error](err); ok {
		return &Error{Msg: e.Msg, What: "GeoJSON FeatureCollection"}
	}
	return err
}
