package tileserve

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"tilecache/internal/httperr"
	"tilecache/internal/layer"
	"tilecache/internal/onmiss"
	"tilecache/internal/quota"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
)

// TileReader reads stored tiles.
type TileReader interface {
	Get(ctx context.Context, key string) (data []byte, meta tilestore.Meta, found bool, err error)
}

// AccessRecorder counts client reads of tiles (quota.Recorder does).
type AccessRecorder interface {
	Record(ctx context.Context, page quota.PageKey, at time.Time)
}

// Tiles serves stored tiles to clients, without authentication, like a
// tile service:
//
//	GET /tiles/{layer}/{gridSetId}/{formatId}/{z}/{x}/{y}.{ext}[?PARAM=value…]
//
// z/x/y are those of the tile's storage key (y counts rows from the
// bottom), formatId the format's short name (png, jpeg, png8, …) and ext
// its extension. Query parameters are normalised through the layer's
// parameter filters as in a seed request: unknown names are ignored and a
// value a filter does not allow is a 400. A stored tile is answered with
// its stored Content-Type and Cache-Control. A missing one is rendered when
// the layer renders on miss at that level (see answerMiss), else (and for
// an unknown layer, grid set or format) it is a 404 text/plain. Every tile answered to a GET counts as an access of its page
// (the disk quota's LRU/LFU statistics). HEAD is answered like GET without
// counting.
type Tiles struct {
	layers *layer.Catalogue
	tiles  TileReader
	prefix string
	rec    AccessRecorder
	log    *slog.Logger
	misses MissRenderer
}

// NewTiles returns the tile handler; keys carry prefix (the configured key
// prefix), and rec, if not nil, counts accesses.
func NewTiles(layers *layer.Catalogue, tiles TileReader, prefix string, rec AccessRecorder, log *slog.Logger) *Tiles {
	return &Tiles{layers: layers, tiles: tiles, prefix: prefix, rec: rec, log: log}
}

// RenderMisses makes the handler render missing tiles through mr.
func (h *Tiles) RenderMisses(mr MissRenderer) *Tiles { h.misses = mr; return h }

// tileRequest is a parsed tile path.
type tileRequest struct {
	layer  *layer.Layer
	grid   string
	format string // MIME type
	z      int
	x, y   int64
}

// ServeHTTP implements http.Handler for paths /tiles/….
func (h *Tiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cors(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httperr.WriteText(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed on "+r.URL.Path)
		return
	}
	tr, ok := h.parse(r.URL.EscapedPath())
	if !ok {
		httperr.WriteText(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	var pairs [][2]string
	q := r.URL.Query()
	for _, k := range slices.Sorted(maps.Keys(q)) {
		pairs = append(pairs, [2]string{k, q.Get(k)})
	}
	params, err := tr.layer.NormaliseParameters(pairs)
	if err != nil {
		status, msg, logIt := httperr.Request.Answer(err) // Invalid: 400 with the filter's message
		if logIt {
			h.log.Error("read the tile parameters", "path", r.URL.Path, "err", err)
		}
		httperr.WriteText(w, status, msg)
		return
	}
	id, ext, _ := tilestore.Format(tr.format)
	set := tilestore.TileSet{SetName: tilestore.SetName{Layer: tr.layer.Name, GridSetID: tr.grid, FormatID: id,
		ParametersID: tilestore.ParametersID(params)}, Prefix: h.prefix, LayerID: tr.layer.ID, Ext: ext}
	if o, ok := h.tiles.(fileOpener); ok {
		if h.serveFile(w, r, o, set, tr) {
			return
		}
	}
	data, meta, found, err := h.tiles.Get(r.Context(), set.Key(tr.z, tr.x, tr.y))
	if err != nil {
		storeReadFailed(w, r, h.log, err)
		return
	}
	if !found {
		if h.misses != nil && !h.rendersParameters(r.Context(), tr.layer, params, set.ParametersID) {
			httperr.WriteText(w, http.StatusNotFound, "Tile not found: "+r.URL.Path)
			return
		}
		answerMiss(w, r, h.misses, onmiss.Miss{Layer: tr.layer.Name, GridSetID: tr.grid, Format: tr.format, Parameters: params,
			Z: tr.z, X: tr.x, Y: tr.y}, set.SetName, h.rec, h.log)
		return
	}
	if r.Method == http.MethodGet {
		recordAccess(r.Context(), h.rec, set.SetName, tr.z, tr.x, tr.y)
	}
	writeObject(w, r, data, meta, source.ContentType(tr.format))
}

// rendersParameters reports whether a miss with these (normalised)
// parameters may be rendered: each value is its filter's default or one of
// a list filter's values, or a seed recorded the parameters id in the
// bucket (parameters-{id}.properties). A regex filter allows endlessly many
// values, and each would be a tile set of its own, so an anonymous client
// may not make new ones: a value no seed recorded is a 404.
func (h *Tiles) rendersParameters(ctx context.Context, l *layer.Layer, params map[string]string, id string) bool {
	listed := true
	for _, f := range l.Filters {
		if v, ok := params[f.Key]; ok && v != f.Default && f.Regex != nil {
			listed = false
		}
	}
	if listed {
		return true
	}
	_, _, found, err := h.tiles.Get(ctx, tilestore.ParametersKey(h.prefix, l.ID, id))
	return err == nil && found
}

// fileOpener is a tile store that can hand out an open file (the local
// file store): a hit is then copied by the kernel, not read into memory.
type fileOpener interface {
	Open(ctx context.Context, key string) (*os.File, int64, tilestore.Meta, bool, error)
}

// serveFile answers a stored tile from an open file; false when the tile
// is missing or could not be opened (the caller's path answers those).
func (h *Tiles) serveFile(w http.ResponseWriter, r *http.Request, o fileOpener, set tilestore.TileSet, tr tileRequest) bool {
	f, size, meta, found, err := o.Open(r.Context(), set.Key(tr.z, tr.x, tr.y))
	if err != nil || !found {
		return false
	}
	defer f.Close()
	if r.Method == http.MethodGet {
		recordAccess(r.Context(), h.rec, set.SetName, tr.z, tr.x, tr.y)
	}
	objectHeaders(w, meta, source.ContentType(tr.format), size)
	if r.Method == http.MethodGet {
		io.Copy(w, f) // sendfile where the connection allows
	}
	return true
}

// parse reads /tiles/{layer}/{gridSetId}/{formatId}/{z}/{x}/{y}.{ext};
// ok is false for anything that cannot name a tile of a configured layer.
func (h *Tiles) parse(path string) (tileRequest, bool) {
	rest, ok := strings.CutPrefix(path, "/tiles/")
	if !ok {
		return tileRequest{}, false
	}
	seg := strings.Split(rest, "/")
	if len(seg) != 6 {
		return tileRequest{}, false
	}
	for i := range 3 {
		s, err := url.PathUnescape(seg[i])
		if err != nil || s == "" {
			return tileRequest{}, false
		}
		seg[i] = s
	}
	l, ok := h.layers.Layer(seg[0])
	if !ok {
		return tileRequest{}, false
	}
	if _, ok := l.Subset(seg[1]); !ok {
		return tileRequest{}, false
	}
	z, x, y, ext, ok := tilePosition(seg[3], seg[4], seg[5])
	if !ok {
		return tileRequest{}, false
	}
	tr := tileRequest{layer: l, grid: seg[1]}
	if tr.format, ok = layerFormat(l, seg[2], ext); !ok {
		return tileRequest{}, false
	}
	tr.z, tr.x, tr.y = z, x, y
	return tr, true
}

// tilePosition reads the "z", "x" and "y.ext" segments of a tile path or
// key; ok is false unless all three are non-negative integers written
// canonically (as strconv.Itoa writes them: no sign, no leading zero, no
// space), so that one tile has one path and one cache key.
func tilePosition(zs, xs, file string) (z int, x, y int64, ext string, ok bool) {
	name, ext, ok := strings.Cut(file, ".")
	if !ok || len(zs) > 2 {
		return 0, 0, 0, "", false
	}
	zv, okz := tilestore.ParseCanonical(zs)
	x, okx := tilestore.ParseCanonical(xs)
	y, oky := tilestore.ParseCanonical(name)
	if !okz || !okx || !oky {
		return 0, 0, 0, "", false
	}
	return int(zv), x, y, ext, true
}

// layerFormat returns the layer's format (MIME type) whose short name is
// id and whose extension is ext.
func layerFormat(l *layer.Layer, id, ext string) (string, bool) {
	for _, f := range l.Formats {
		if fid, fext, _ := tilestore.Format(f); fid == id && fext == ext {
			return f, true
		}
	}
	return "", false
}

// recordAccess counts a client's read of tile z/x/y of a tile set for the
// disk quota's LRU/LFU statistics; rec may be nil.
func recordAccess(ctx context.Context, rec AccessRecorder, set tilestore.SetName, z int, x, y int64) {
	if rec != nil {
		rec.Record(ctx, quota.PageOf(set, z, x, y), time.Now())
	}
}
