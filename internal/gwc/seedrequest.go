package gwc

import (
	"strconv"
	"strings"

	"tilecache/internal/apperr"
)

// The seed request body (contract §4.1, §4.2) decodes into SeedRequest,
// the engine's one request type. The decoders only decode: requiredness
// (zoomStart, zoomStop), ranges, defaults and the meaning of type, format
// and grid set are the engine's. The layer is the path's (the body's name
// is checked for its type and otherwise ignored, as the contract says), and
// filterUpdate is checked and ignored. Pointer fields are nil when the field
// is absent; a gridSetId present but empty, and bounds that are not four
// finite numbers with minx < maxx and miny < maxy, are refused here.

// DecodeSeedRequestXML decodes an XML seed request whose root element is
// seedRequest. Errors are apperr.Invalid.
func DecodeSeedRequestXML(body []byte) (SeedRequest, error) {
	doc, err := parseXML(body, "a seedRequest document")
	if err != nil {
		return SeedRequest{}, err
	}
	root, err := xmlRoot(doc, "seedRequest")
	if err != nil {
		return SeedRequest{}, err
	}
	return decodeSeedRequest(root)
}

// DecodeSeedRequestJSON decodes a JSON seed request: an object with the
// single key seedRequest. Errors are apperr.Invalid.
func DecodeSeedRequestJSON(body []byte) (SeedRequest, error) {
	doc, err := parseJSON(body, "a JSON object with the single key seedRequest")
	if err != nil {
		return SeedRequest{}, err
	}
	root, err := jsonRoot(doc, "seedRequest")
	if err != nil {
		return SeedRequest{}, err
	}
	return decodeSeedRequest(root)
}

// DecodeScheduledSeedRequest decodes the request a schedule of layer keeps
// (body: a JSON seed request), as POST /rest/seed/{layer}.json decodes its
// body: what a schedule's creation checks and what its runs submit.
func DecodeScheduledSeedRequest(layer string, body []byte) (SeedRequest, error) {
	req, err := DecodeSeedRequestJSON(body)
	if err != nil {
		return SeedRequest{}, err
	}
	req.Layer = layer
	return req, nil
}

func decodeSeedRequest(root *node) (SeedRequest, error) {
	fields, err := elems(root, "seedRequest")
	if err != nil {
		return SeedRequest{}, err
	}
	var r SeedRequest
	seen := fieldSet{}
	var all *Geometry
	var buffer *float64
	for _, f := range fields {
		if err := seen.add(f.name); err != nil {
			return SeedRequest{}, err
		}
		switch f.name {
		case "name":
			_, err = trimmedText(f, f.name)
		case "gridSetId":
			r.GridSetID, err = trimmedText(f, f.name)
			if err == nil && r.GridSetID == "" {
				err = apperr.Invalidf("gridSetId must not be empty")
			}
			r.HasGridSetID = true
		case "srs":
			r.SRS, err = decodeSRS(f)
		case "bounds":
			r.Bounds, err = decodeBounds(f)
		case "zoomStart":
			r.ZoomStart, err = parseInt(f, f.name)
		case "zoomStop":
			r.ZoomStop, err = parseInt(f, f.name)
		case "format":
			r.Format, err = trimmedText(f, f.name)
		case "type":
			r.Type, err = trimmedText(f, f.name)
		case "threadCount":
			r.ThreadCount, err = parseInt(f, f.name)
		case "parameters":
			r.Parameters, err = decodeParameters(f)
		case "tileFailureRetryCount":
			r.RetryCount, err = parseInt(f, f.name)
		case "tileFailureRetryWaitTime":
			r.RetryWaitMS, err = parseInt(f, f.name)
		case "totalFailuresBeforeAborting":
			r.MaxFailures, err = parseInt(f, f.name)
		case "filterUpdate":
			_, err = parseBool(f, f.name)
		case "geometry":
			all = &Geometry{}
			all.Text, err = geometryText(f)
		case "buffer":
			buffer, err = parseFloatPtr(f, f.name)
		case "geometries":
			r.Geometries, err = decodeGeometries(f)
		default:
			err = unknownField(f.name)
		}
		if err != nil {
			return SeedRequest{}, err
		}
	}
	if buffer != nil && all == nil {
		return SeedRequest{}, apperr.Invalidf("buffer is given without a geometry")
	}
	if all != nil {
		if buffer != nil {
			all.Buffer = *buffer
		}
		r.Geometries = append([]Geometry{*all}, r.Geometries...)
	}
	return r, nil
}

// geometryText returns a geometry field's text: a string (WKT, or GeoJSON
// in a string or XML text) or, in JSON, a GeoJSON object as written.
func geometryText(n *node) (string, error) {
	if n.kind == elemNode && n.json {
		return string(n.raw), nil
	}
	s, err := text(n, "geometry", "GeoJSON or WKT")
	if err == nil && strings.TrimSpace(s) == "" {
		err = apperr.Invalidf("geometry must not be empty")
	}
	return s, err
}

// decodeGeometries reads the per-zoom geometries: a JSON array of
// objects, or XML zoomGeometry elements, each with zoomStart, zoomStop,
// geometry and optionally buffer.
func decodeGeometries(n *node) ([]Geometry, error) {
	var list []*node
	if n.kind == arrayNode {
		list = items(n)
	} else {
		fields, err := elems(n, "geometries")
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			if f.name != "zoomGeometry" {
				return nil, unknownField(f.name)
			}
			list = append(list, items(f)...)
		}
	}
	out := make([]Geometry, 0, len(list))
	for _, e := range list {
		fields, err := elems(e, "geometries entry")
		if err != nil {
			return nil, err
		}
		var g Geometry
		seen := fieldSet{}
		for _, f := range fields {
			if err := seen.add(f.name); err != nil {
				return nil, err
			}
			switch f.name {
			case "zoomStart":
				g.ZoomStart, err = parseInt(f, "geometries zoomStart")
			case "zoomStop":
				g.ZoomStop, err = parseInt(f, "geometries zoomStop")
			case "geometry":
				g.Text, err = geometryText(f)
			case "buffer":
				g.Buffer, err = parseFloat(f, "geometries buffer")
			default:
				err = unknownField(f.name)
			}
			if err != nil {
				return nil, err
			}
		}
		switch {
		case g.Text == "":
			return nil, apperr.Invalidf("geometries entry: geometry is required")
		case g.ZoomStart == nil || g.ZoomStop == nil:
			return nil, apperr.Invalidf("geometries entry: zoomStart and zoomStop are required")
		}
		out = append(out, g)
	}
	return out, nil
}

// decodeSRS reads <srs><number>4326</number></srs> / {"number":4326}.
func decodeSRS(n *node) (*int, error) {
	fields, err := elems(n, "srs")
	if err != nil {
		return nil, err
	}
	var code *int
	for _, f := range fields {
		if f.name != "number" {
			return nil, unknownField(f.name)
		}
		if code != nil {
			return nil, apperr.Invalidf("Duplicate field: number")
		}
		if code, err = parseInt(f, "srs"); err != nil {
			return nil, err
		}
	}
	if code == nil {
		return nil, apperr.Invalidf("srs: number is required")
	}
	return code, nil
}

// decodeBounds reads bounds.coords.double, four coordinates.
func decodeBounds(n *node) (*[4]float64, error) {
	fields, err := elems(n, "bounds")
	if err != nil {
		return nil, err
	}
	var coords []*node
	seen := fieldSet{}
	for _, f := range fields {
		if f.name != "coords" {
			return nil, unknownField(f.name)
		}
		if err := seen.add(f.name); err != nil {
			return nil, err
		}
		cs, err := elems(f, "coords")
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.name != "double" {
				return nil, unknownField(c.name)
			}
			coords = append(coords, items(c)...)
		}
	}
	if len(coords) != 4 {
		return nil, apperr.Invalidf("Invalid bounds: expected 4 coordinates (minx, miny, maxx, maxy), got %d", len(coords))
	}
	var b [4]float64
	for i, c := range coords {
		if b[i], err = parseFloat(c, "bounds"); err != nil {
			return nil, err
		}
	}
	if b[0] >= b[2] {
		return nil, apperr.Invalidf("Invalid bounds: minx %s is not less than maxx %s", fmtFloat(b[0]), fmtFloat(b[2]))
	}
	if b[1] >= b[3] {
		return nil, apperr.Invalidf("Invalid bounds: miny %s is not less than maxy %s", fmtFloat(b[1]), fmtFloat(b[3]))
	}
	return &b, nil
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// decodeParameters reads parameters.entry, each entry holding two strings.
func decodeParameters(n *node) ([][2]string, error) {
	fields, err := elems(n, "parameters")
	if err != nil {
		return nil, err
	}
	var params [][2]string
	for _, f := range fields {
		if f.name != "entry" {
			return nil, unknownField(f.name)
		}
		for _, e := range items(f) {
			kv, err := decodeEntry(e)
			if err != nil {
				return nil, err
			}
			params = append(params, kv)
		}
	}
	return params, nil
}

func decodeEntry(e *node) ([2]string, error) {
	fields, err := elems(e, "parameters entry")
	if err != nil {
		return [2]string{}, err
	}
	var strs []*node
	for _, f := range fields {
		if f.name != "string" {
			return [2]string{}, unknownField(f.name)
		}
		strs = append(strs, items(f)...)
	}
	if len(strs) != 2 {
		return [2]string{}, apperr.Invalidf("Invalid parameters entry: expected 2 strings (name, value), got %d", len(strs))
	}
	var kv [2]string
	for i, s := range strs {
		if kv[i], err = text(s, "parameters entry", "a string"); err != nil {
			return [2]string{}, err
		}
	}
	return kv, nil
}

func parseFloatPtr(n *node, field string) (*float64, error) {
	f, err := parseFloat(n, field)
	if err != nil {
		return nil, err
	}
	return &f, nil
}
