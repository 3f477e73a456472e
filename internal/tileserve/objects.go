package tileserve

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/httperr"
	"tilecache/internal/layer"
	"tilecache/internal/onmiss"
	"tilecache/internal/tilestore"
)

// Objects serves the tile store's objects the way the CDN in front of the
// bucket does, so the local program and a deployment answer the same
// URLs:
//
//	GET /{key without the key prefix}   e.g. /demo:world/EPSG:4326/png/default/3/5/2.png
//	GET /                               the object index.html (the demo map page, tilestore.IndexObject)
//	GET /archives/…                     a tile archive (a PMTiles), with Range requests (see serveArchive)
//
// An object is answered with its stored Content-Type and Cache-Control and
// with CORS headers allowing any origin; a missing one is a 404 text/plain.
// A GET of a tile of a configured layer counts as an access of its page
// (the disk quota's LRU/LFU statistics), as through Tiles. HEAD is
// answered like GET without counting; OPTIONS answers a CORS preflight.
type Objects struct {
	tiles  TileReader
	prefix string
	layers *layer.Catalogue // live: a layer changed at run time is served as it is now
	rec    AccessRecorder
	log    *slog.Logger
	misses MissRenderer
}

// RenderMisses makes the handler render missing tiles through mr: the
// key of a tile of a layer that renders on miss (with the default
// parameters, or parameters a seed recorded in the bucket) is rendered as
// through Tiles. This is the tile function behind the CDN's failover.
func (h *Objects) RenderMisses(mr MissRenderer) *Objects { h.misses = mr; return h }

// NewObjects returns the object handler; keys carry prefix (the configured
// key prefix), and rec, if not nil, counts accesses of tiles.
func NewObjects(layers *layer.Catalogue, tiles TileReader, prefix string, rec AccessRecorder, log *slog.Logger) *Objects {
	return &Objects{tiles: tiles, prefix: strings.Trim(prefix, "/"), layers: layers, rec: rec, log: log}
}

// cors sets the headers the CDN's response headers policy sets.
func cors(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "ETag, Content-Length, Content-Type")
}

// ServeHTTP implements http.Handler.
func (h *Objects) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cors(w.Header())
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "*")
		w.Header().Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "GET, HEAD, OPTIONS")
		httperr.WriteText(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed on "+r.URL.Path)
		return
	}
	rel := strings.TrimPrefix(r.URL.Path, "/")
	if rel == "" {
		rel = tilestore.IndexObject
	}
	if h.malformedTile(rel) {
		httperr.WriteText(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	key := rel
	if h.prefix != "" {
		key = h.prefix + "/" + rel
	}
	if isArchive(rel) {
		h.serveArchive(w, r, rel, key)
		return
	}
	data, meta, found, err := h.tiles.Get(r.Context(), key)
	if apperr.Is(err, apperr.Invalid) {
		found, err = false, nil // not a key the store can hold
	}
	if err != nil {
		storeReadFailed(w, r, h.log, err)
		return
	}
	if !found {
		if h.misses != nil && r.Method == http.MethodGet {
			if m, ok := h.missOf(r.Context(), rel); ok {
				set, _, _, _, _ := h.tileOf(rel) // a tile's key: missOf accepted it
				answerMiss(w, r, h.misses, m, set, h.rec, h.log)
				return
			}
		}
		httperr.WriteText(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	if r.Method == http.MethodGet && h.rec != nil {
		if set, z, x, y, ok := h.tileOf(rel); ok {
			recordAccess(r.Context(), h.rec, set, z, x, y)
		}
	}
	writeObject(w, r, data, meta, "application/octet-stream")
}

// storeReadFailed answers a read of the tile store that failed: 503 when
// the store is unreachable, else 500 (see httperr.StoreRead), logged;
// nothing when the client left.
func storeReadFailed(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	if r.Context().Err() != nil {
		return
	}
	status, msg, _ := httperr.StoreRead.Answer(err)
	log.Error("read the tile store", "path", r.URL.Path, "err", err)
	httperr.WriteText(w, status, msg)
}

// writeObject answers a stored object with its Content-Type (contentType
// when none is stored) and Cache-Control; HEAD gets the headers only.
func writeObject(w http.ResponseWriter, r *http.Request, data []byte, meta tilestore.Meta, contentType string) {
	objectHeaders(w, meta, contentType, int64(len(data)))
	if r.Method == http.MethodGet {
		w.Write(data)
	}
}

// ObjectPolicy is the Content-Security-Policy of every stored object this
// process answers. Here objects share an origin with the console and the
// REST interface, whose Basic credentials the browser holds: a document
// among them (the demo page, or whatever an upstream or a writer of the
// bucket put there) runs sandboxed, in an origin of its own, so its
// scripts reach nothing the console's origin may; the demo page's fetches
// of tiles and documents still pass (they are answered to any origin).
const ObjectPolicy = "sandbox allow-scripts allow-popups allow-downloads"

// objectHeaders writes the status and headers of an object of size bytes:
// its stored Content-Type (contentType when none is stored),
// Cache-Control and Content-Encoding, and nosniff and ObjectPolicy (a
// tile is never read as another type, nor run in the service's origin).
func objectHeaders(w http.ResponseWriter, meta tilestore.Meta, contentType string, size int64) {
	if meta.ContentType != "" {
		contentType = meta.ContentType
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", ObjectPolicy)
	w.Header().Set("Content-Type", contentType)
	if meta.CacheControl != "" {
		w.Header().Set("Cache-Control", meta.CacheControl)
	}
	if meta.ContentEncoding != "" {
		// A gzip-compressed vector tile is served as stored, as the CDN
		// serves it from the bucket: the client decompresses it.
		w.Header().Set("Content-Encoding", meta.ContentEncoding)
	}
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
}

// tileOf reads a tile key "layerId/gridSetId/formatId/parametersId/z/x/y.ext"
// of a configured layer: the name of its tile set and its position; ok is
// false for any other object.
func (h *Objects) tileOf(rel string) (set tilestore.SetName, z int, x, y int64, ok bool) {
	seg := strings.Split(rel, "/")
	if len(seg) != 7 {
		return tilestore.SetName{}, 0, 0, 0, false
	}
	l, ok := h.layers.ByID(seg[0])
	if !ok {
		return tilestore.SetName{}, 0, 0, 0, false
	}
	z, x, y, _, ok = tilePosition(seg[4], seg[5], seg[6])
	return tilestore.SetName{Layer: l.Name, GridSetID: seg[1], FormatID: seg[2], ParametersID: seg[3]}, z, x, y, ok
}

// malformedTile reports whether rel has the shape of a tile key of a
// configured layer ("layerId/gridSetId/formatId/parametersId/z/x/y.ext")
// but a position that is not written canonically (see tilePosition): such
// a path is answered 404 before the store is asked, so that one tile has
// one key (and one CDN cache key).
func (h *Objects) malformedTile(rel string) bool {
	seg := strings.Split(rel, "/")
	if len(seg) != 7 {
		return false
	}
	if _, ok := h.layers.ByID(seg[0]); !ok {
		return false
	}
	_, _, _, _, ok := tilePosition(seg[4], seg[5], seg[6])
	return !ok
}

// missOf resolves the key of a missing object to the tile it names; ok is
// false for anything that is not a tile of a configured layer's grid set
// and format, or whose parameters id is neither the layer's default nor
// one recorded in the bucket by a seed (parameters-{id}.properties).
func (h *Objects) missOf(ctx context.Context, rel string) (onmiss.Miss, bool) {
	seg := strings.Split(rel, "/")
	if len(seg) != 7 {
		return onmiss.Miss{}, false
	}
	l, ok := h.layers.ByID(seg[0])
	if !ok {
		return onmiss.Miss{}, false
	}
	if _, ok := l.Subset(seg[1]); !ok {
		return onmiss.Miss{}, false
	}
	z, x, y, ext, ok := tilePosition(seg[4], seg[5], seg[6])
	if !ok {
		return onmiss.Miss{}, false
	}
	m := onmiss.Miss{Layer: l.Name, GridSetID: seg[1]}
	if m.Format, ok = layerFormat(l, seg[2], ext); !ok {
		return onmiss.Miss{}, false
	}
	m.Z, m.X, m.Y = z, x, y
	var pairs [][2]string
	if seg[3] != tilestore.DefaultParametersID {
		data, _, found, err := h.tiles.Get(ctx, tilestore.ParametersKey(h.prefix, l.ID, seg[3]))
		if err != nil || !found {
			return onmiss.Miss{}, false
		}
		recorded, err := gwc.Unmarshal(data)
		if err != nil {
			return onmiss.Miss{}, false
		}
		for _, k := range slices.Sorted(maps.Keys(recorded)) {
			pairs = append(pairs, [2]string{k, recorded[k]})
		}
	}
	params, err := l.NormaliseParameters(pairs)
	if err != nil || tilestore.ParametersID(params) != seg[3] {
		return onmiss.Miss{}, false
	}
	m.Parameters = params
	return m, true
}
