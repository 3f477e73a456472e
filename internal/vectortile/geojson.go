package vectortile

import (
	"bytes"
	"encoding/json"
	"errors"
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

// geoJSONCollection is what ParseGeoJSON decodes of a tile.
type geoJSONCollection struct {
	Type     *string `json:"type"`
	Features *[]struct {
		Type     string `json:"type"`
		Geometry *struct {
			Type string `json:"type"`
		} `json:"geometry"`
		Properties json.RawMessage `json:"properties"`
	} `json:"features"`
}

// ParseGeoJSON checks that data (gzip-compressed or not) is a GeoJSON
// FeatureCollection of at most max bytes decompressed (max ≤ 0: MaxSize),
// nested at most MaxGeoJSONDepth deep, whose features are Features, and
// returns what it holds as one layer (named ""): its features, counted by
// geometry type, and the keys of their properties (in the order first
// met). An empty body is a valid tile without features.
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
	var fc geoJSONCollection
	if err := json.Unmarshal(data, &fc); err != nil {
		return Tile{}, invalidGeoJSON("%v", err)
	}
	if fc.Type == nil || *fc.Type != "FeatureCollection" || fc.Features == nil {
		return Tile{}, invalidGeoJSON("not a FeatureCollection with features")
	}
	l := Layer{Features: len(*fc.Features)}
	seen := map[string]bool{}
	for i, f := range *fc.Features {
		if f.Type != "Feature" {
			return Tile{}, invalidGeoJSON("feature %d has type %q", i, f.Type)
		}
		if f.Geometry != nil {
			switch f.Geometry.Type {
			case "Point", "MultiPoint":
				l.Geometry[1]++
			case "LineString", "MultiLineString":
				l.Geometry[2]++
			case "Polygon", "MultiPolygon":
				l.Geometry[3]++
			default:
				l.Geometry[0]++
			}
		}
		if len(f.Properties) > 0 && f.Properties[0] == '{' {
			var props map[string]json.RawMessage
			if err := json.Unmarshal(f.Properties, &props); err != nil {
				return Tile{}, invalidGeoJSON("feature %d properties: %v", i, err)
			}
			for k, v := range props {
				if !seen[k] {
					seen[k] = true
					l.Keys = append(l.Keys, k)
					l.KeyTypes = append(l.KeyTypes, jsonType(v))
				}
			}
		}
	}
	if l.Features > 0 {
		t.Layers = []Layer{l}
	}
	return t, nil
}

// jsonType is TileJSON's field type of a JSON value.
func jsonType(v json.RawMessage) string {
	switch {
	case len(v) == 0:
		return ""
	case v[0] == '"':
		return "String"
	case v[0] == 't' || v[0] == 'f':
		return "Boolean"
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		return "Number"
	}
	return ""
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
