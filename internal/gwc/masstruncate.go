package gwc

import "tilecache/internal/apperr"

// MassTruncateRequestsXML is the body of GET /rest/masstruncate (contract
// §7.1); href is the absolute URL of the resource and is XML-escaped.
func MassTruncateRequestsXML(href string) []byte {
	return []byte(`<massTruncateRequests href="` + xmlEscape(href) +
		`"> <requestType>truncateLayer</requestType></massTruncateRequests>`)
}

// DecodeMassTruncate decodes a POST /rest/masstruncate body (contract §7.2),
// <truncateLayer><layerName>topp:states</layerName></truncateLayer>, and
// returns the layer name without surrounding whitespace. Errors are
// apperr.Invalid: "layerName is required", "Unknown mass truncate request
// type: truncateAll", malformed XML, a DTD, or an element other than
// layerName ("Unknown field: x").
func DecodeMassTruncate(body []byte) (layerName string, err error) {
	doc, err := parseXML(body, "a truncateLayer document")
	if err != nil {
		return "", err
	}
	if doc.name != "truncateLayer" {
		return "", apperr.Invalidf("Unknown mass truncate request type: %s", apperr.Show(doc.name))
	}
	fields, err := elems(doc, "truncateLayer")
	if err != nil {
		return "", err
	}
	seen := fieldSet{}
	for _, f := range fields {
		if f.name != "layerName" {
			return "", unknownField(f.name)
		}
		if err := seen.add(f.name); err != nil {
			return "", err
		}
		if layerName, err = trimmedText(f, f.name); err != nil {
			return "", err
		}
	}
	if layerName == "" {
		return "", apperr.Invalidf("layerName is required")
	}
	return layerName, nil
}
