package tileserve

import (
	"net/http"
	"net/url"
	"strings"

	"tilecache/internal/layer"
	"tilecache/internal/tiletoken"
)

// PrivateTiles guards the private layers' tiles under /tiles/{layer
// name}/… (see tiletoken.Guard).
func PrivateTiles(layers *layer.Catalogue, keys *tiletoken.Keyring, next http.Handler) http.Handler {
	return tiletoken.Guard{Keys: keys, LayerOf: func(r *http.Request) (string, bool, bool) {
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/tiles/")
		if !ok {
			return "", false, false
		}
		first, _, _ := strings.Cut(rest, "/")
		name, err := url.PathUnescape(first)
		if err != nil {
			return "", false, false
		}
		l, ok := layers.Layer(name)
		if !ok {
			return "", false, false
		}
		return l.ID, l.Private, true
	}}.Wrap(next)
}

// PrivateObjects guards the private layers' objects by key path (see
// tiletoken.Guard): the keys under a layer's id (its tiles, their
// TileJSON and TMS documents, its WMTS capabilities) and its OGC API
// collection's documents (ogcapi/collections/{id}.json and under
// ogcapi/collections/{id}/). The edge paths reach it mapped to their keys.
func PrivateObjects(layers *layer.Catalogue, keys *tiletoken.Keyring, next http.Handler) http.Handler {
	return tiletoken.Guard{Keys: keys, LayerOf: func(r *http.Request) (string, bool, bool) {
		id := ObjectLayer(r.URL.Path)
		if id == "" {
			return "", false, false
		}
		l, ok := layers.ByID(id)
		if !ok {
			return "", false, false
		}
		return l.ID, l.Private, true
	}}.Wrap(next)
}

// ObjectLayer returns the id of the layer an object's path (without the
// key prefix, percent-decoded) belongs to if it were a layer's: its first
// segment, or the collection's of an OGC API collection document; "" for
// the root.
func ObjectLayer(p string) string {
	seg := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 4)
	if len(seg) >= 3 && seg[0] == "ogcapi" && seg[1] == "collections" {
		if len(seg) == 3 {
			return strings.TrimSuffix(seg[2], ".json")
		}
		return seg[2]
	}
	return seg[0]
}
