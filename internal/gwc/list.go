package gwc

import (
	"fmt"
	"strings"
)

// EncodeLayerList returns GeoWebCache's answer to GET /rest/layers: each
// name with an Atom link to {baseURL}/rest/layers/{name}.xml. baseURL is
// the service's root (http://host/geowebcache), without /rest.
func EncodeLayerList(names []string, baseURL string) []byte {
	return encodeList("layers", "layer", names, baseURL)
}

// EncodeGridSetList returns GeoWebCache's answer to GET /rest/gridsets,
// linking to {baseURL}/rest/gridsets/{name}.xml.
func EncodeGridSetList(names []string, baseURL string) []byte {
	return encodeList("gridSets", "gridSet", names, baseURL)
}

// encodeList writes the list as GeoWebCache (XStream) does; an empty list
// is a single empty element.
func encodeList(root, item string, names []string, baseURL string) []byte {
	w := &writer{}
	if len(names) == 0 {
		w.empty(root)
		return w.b.Bytes()
	}
	base := strings.TrimRight(baseURL, "/") + "/rest/" + strings.ToLower(root) + "/"
	w.open(root)
	for _, n := range names {
		w.open(item)
		w.leaf("name", n)
		w.empty("atom:link", "xmlns:atom", "http://www.w3.org/2005/Atom", "rel", "alternate",
			"href", base+escapePathSegment(n)+".xml", "type", "text/xml")
		w.close(item)
	}
	w.close(root)
	return w.b.Bytes()
}

// escapePathSegment percent-encodes a name as GeoWebCache's links do
// (Spring's URI encoding of a path): letters, digits, -._~, the
// sub-delimiters !$&'()*,;= and : and @ stay; every other byte of the
// UTF-8 text becomes %XX. So topp:states stays topp:states and a space is
// %20. A '+' becomes %2B: the REST paths read '+' as a space, as
// GeoWebCache's layer paths do. (The layers page of GeoWebCache's
// documentation shows an older form, topp%3Astates and img+states.)
func escapePathSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~!$&'()*,;=:@", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}
