package gwc

import (
	"tilecache/internal/apperr"
)

// An export request (POST /rest/export/{layer}.json|.xml, this project's
// own) is a seed request's fields under the root exportRequest, with one
// more: archive, the kind of archive to write ("pmtiles", "mbtiles" or
// "gpkg"; its meaning is the engine's). type and threadCount are no
// export's: an export reads what is stored, in one lane. publish (true or
// false, default false) writes the tile set's served PMTiles archive.

// ExportRequest is a decoded export request.
type ExportRequest struct {
	SeedRequest
	Archive string
	// Publish asks for the tile set's served PMTiles archive
	// (archives/…), not a private one.
	Publish bool
}

// DecodeExportRequestJSON decodes a JSON export request: an object with
// the single key exportRequest. Errors are apperr.Invalid.
func DecodeExportRequestJSON(body []byte) (ExportRequest, error) {
	doc, err := parseJSON(body, "a JSON object with the single key exportRequest")
	if err != nil {
		return ExportRequest{}, err
	}
	root, err := jsonRoot(doc, "exportRequest")
	if err != nil {
		return ExportRequest{}, err
	}
	return decodeExportRequest(root)
}

// DecodeExportRequestXML decodes an XML export request whose root
// element is exportRequest. Errors are apperr.Invalid.
func DecodeExportRequestXML(body []byte) (ExportRequest, error) {
	doc, err := parseXML(body, "an exportRequest document")
	if err != nil {
		return ExportRequest{}, err
	}
	root, err := xmlRoot(doc, "exportRequest")
	if err != nil {
		return ExportRequest{}, err
	}
	return decodeExportRequest(root)
}

func decodeExportRequest(root *node) (ExportRequest, error) {
	fields, err := elems(root, "exportRequest")
	if err != nil {
		return ExportRequest{}, err
	}
	var out ExportRequest
	rest := *root
	rest.children = nil
	seen := false
	for _, f := range fields {
		switch f.name {
		case "archive":
			if seen {
				return ExportRequest{}, apperr.Invalidf("Duplicate field: archive")
			}
			seen = true
			if out.Archive, err = trimmedText(f, f.name); err != nil {
				return ExportRequest{}, err
			}
			f.used = true
		case "publish":
			v, err := trimmedText(f, f.name)
			if err != nil {
				return ExportRequest{}, err
			}
			switch v {
			case "true":
				out.Publish = true
			case "false":
			default:
				return ExportRequest{}, apperr.Invalidf("publish is true or false, not %s", apperr.Show(v))
			}
			f.used = true
		case "type", "threadCount", "tileFailureRetryCount", "tileFailureRetryWaitTime", "totalFailuresBeforeAborting":
			return ExportRequest{}, apperr.Invalidf("%s is a seed request's field, not an export's (an export reads the stored tiles in one task)", f.name)
		default:
			rest.children = append(rest.children, f)
		}
	}
	if !seen || out.Archive == "" {
		return ExportRequest{}, apperr.Invalidf("archive is required: pmtiles, mbtiles or gpkg")
	}
	rest.kind = elemNode
	if out.SeedRequest, err = decodeSeedRequest(&rest); err != nil {
		return ExportRequest{}, err
	}
	return out, nil
}
