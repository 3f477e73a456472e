package accesslog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"tilecache/internal/tilestore"
)

// Page identifies a tile page: the tiles (X<<shift … (X+1)<<shift − 1,
// likewise Y) at level Z of a tile set, shift being the mapper's
// PageShift (the disk quota's page geometry, quota.PageShift), rows counted from the bottom as in keys.
// The tile set is named as the quota names it, by the layer's name rather
// than its store id. Page is comparable, so it can key maps.
type Page struct {
	Layer        string // layer name, e.g. "topp:states"
	GridSetID    string
	FormatID     string // format short name, e.g. "png"
	ParametersID string
	Z            int
	X, Y         int64
}

// Outcome is what became of a log line: kept as a tile read, or why not.
type Outcome uint8

// Outcomes, in the order they are decided.
const (
	Kept          Outcome = iota // a read of a tile of a known layer
	Malformed                    // the line could not be parsed
	NotRead                      // not a GET or HEAD of an object
	NotSuccessful                // status neither 2xx nor 304
	NotTile                      // key or path is not a tile key
	UnknownLayer                 // a tile key of a layer id the resolver does not know
)

// String returns the outcome's name.
func (o Outcome) String() string {
	switch o {
	case Kept:
		return "kept"
	case Malformed:
		return "malformed"
	case NotRead:
		return "not a read"
	case NotSuccessful:
		return "not successful"
	case NotTile:
		return "not a tile key"
	case UnknownLayer:
		return "unknown layer"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// MapperConfig says where tiles are and how URL paths lead to them.
//
// An S3 log names the key itself. A CDN or proxy log names a URL path,
// and the key is found from it by one rule:
//
//	key = OriginPath + (path without PathPrefix)
//
// after the path is percent-decoded once (as the bucket decodes it). For
// example, with key prefix "tiles":
//
//   - CloudFront serves the bucket's root (no origin path): a viewer reads
//     "/tiles/topp:states/…"; PathPrefix "/" and OriginPath "" (the zero
//     values) give the key "tiles/topp:states/…".
//   - CloudFront's origin path is the key prefix, "/tiles": a viewer reads
//     "/topp:states/…"; OriginPath "/tiles" gives "tiles/topp:states/…".
//     CloudFront adds the origin path in front of the whole viewer path,
//     so PathPrefix stays "/".
//   - A proxy maps "/cache/" to the bucket's root: PathPrefix "/cache".
type MapperConfig struct {
	// Prefix is the tile store's key prefix ("" for none), as the store is
	// configured: keys are "[prefix/]layerId/gridSetId/formatId/
	// parametersId/z/x/y.ext".
	Prefix string
	// PathPrefix is the start of URL paths that is not part of the key:
	// paths not starting with it are not tiles. Slashes are added at both
	// ends as needed; "" means "/".
	PathPrefix string
	// OriginPath is put in front of what remains of a URL path to make the
	// key: CloudFront's origin path. Slashes around it do not matter.
	OriginPath string
	// LayerName resolves a layer's store id (the first segment of its
	// keys after the prefix) to its name; ok is false for a layer it does
	// not know, whose reads are dropped. Ingest calls it once per tile
	// set of a log (for its first 4,096 sets), not per line. It must not
	// be nil.
	LayerName func(layerID string) (name string, ok bool)
	// EdgePath, when set, maps the paths the CDN's edge rewrites (WMTS,
	// XYZ and OGC API – Tiles, rows from the top: see edgepath.Map) to
	// the key's path, so that their reads count; ok false is not a tile.
	// Only paths starting with one of EdgePrefixes go through it.
	EdgePath func(path string) (key string, ok bool)
	// EdgePrefixes are the first segments of those paths ("/wmts/", …).
	EdgePrefixes []string
	// EdgeQuery, when set, maps a request the edge answers by its query
	// (the OGC key-value-pair bindings: WMTS KVP GetTile, WMS-C GetMap;
	// see edgepath.OWSTile) to the stored key's path, percent-encoded as
	// a URL path is; ok false leaves the request to the other rules. It
	// is called for the paths of lines that have a query.
	EdgeQuery func(path, rawQuery string) (key string, ok bool)
	// PageShift is the size of the pages reads are counted in: 1<<PageShift
	// tiles on each side. The disk quota owns that geometry (pass
	// quota.PageShift); 1 to 30.
	PageShift int
}

// Mapper maps the records of a log to the tile pages they read. It is
// immutable and safe for concurrent use.
type Mapper struct {
	prefix     []byte // "prefix/" or empty
	pathPrefix []byte // "/…/"
	originPath []byte // "origin/" or empty
	layerName  func(string) (string, bool)
	edgePath   func(string) (string, bool)
	edgePrefix [][]byte
	edgeQuery  func(string, string) (string, bool)
	pageShift  int
}

// NewMapper returns a mapper configured by cfg.
func NewMapper(cfg MapperConfig) (*Mapper, error) {
	if cfg.LayerName == nil {
		return nil, errors.New("new log mapper: LayerName is nil")
	}
	if cfg.PageShift < 1 || cfg.PageShift > 30 {
		return nil, fmt.Errorf("new log mapper: PageShift %d is not 1 to 30 (give quota.PageShift)", cfg.PageShift)
	}
	m := &Mapper{layerName: cfg.LayerName, edgePath: cfg.EdgePath, edgeQuery: cfg.EdgeQuery, pageShift: cfg.PageShift}
	if cfg.EdgePath != nil {
		for _, p := range cfg.EdgePrefixes {
			m.edgePrefix = append(m.edgePrefix, []byte(p))
		}
	}
	if p := strings.TrimSuffix(cfg.Prefix, "/"); p != "" {
		m.prefix = []byte(p + "/")
	}
	pp := strings.Trim(cfg.PathPrefix, "/")
	if pp == "" {
		m.pathPrefix = []byte("/")
	} else {
		m.pathPrefix = []byte("/" + pp + "/")
	}
	if op := strings.Trim(cfg.OriginPath, "/"); op != "" {
		m.originPath = []byte(op + "/")
	}
	return m, nil
}

// Map returns the page a record read, or why it does not count: a
// method other than GET and HEAD, a status other than 2xx and 304, a key
// or path that is not a tile's, or a layer LayerName does not know. It
// resolves the layer each time; Ingest caches that.
func (m *Mapper) Map(rec *Record) (Page, Outcome) {
	s := mapState{m: m}
	return s.mapRecord(rec)
}

// maxCachedSets bounds a mapState's cache of tile sets, so that a log
// naming many directories cannot grow it without bound.
const maxCachedSets = 4096

// mapState is one log's mapping: scratch buffers and a cache of the tile
// sets met (their directory in the key → their names), so that most lines
// map without allocating.
type mapState struct {
	m       *Mapper
	buf     []byte
	keyBuf  []byte
	edgeBuf []byte
	sets    map[string]setEntry
}

type setEntry struct {
	page  Page // the set's names; Z, X, Y unset
	known bool
}

func (s *mapState) mapRecord(rec *Record) (Page, Outcome) {
	if !isRead(rec.Method) {
		return Page{}, NotRead
	}
	if !(rec.Status >= 200 && rec.Status <= 299 || rec.Status == 304) {
		return Page{}, NotSuccessful
	}
	key, ok := s.key(rec)
	if !ok {
		return Page{}, NotTile
	}
	dir, tail, ok := splitDir(key)
	if !ok {
		return Page{}, NotTile
	}
	z, x, y, ok := parseTile(tail)
	if !ok {
		return Page{}, NotTile
	}
	e, ok := s.sets[string(dir)] // does not allocate
	if !ok {
		e = s.resolve(dir)
	}
	if !e.known {
		return Page{}, UnknownLayer
	}
	p := e.page
	p.Z, p.X, p.Y = int(z), x>>s.m.pageShift, y>>s.m.pageShift
	return p, Kept
}

func isRead(method []byte) bool {
	return string(method) == "GET" || string(method) == "HEAD"
}

// key returns the record's object key: its key or path percent-decoded
// once, and for a path the rule of MapperConfig applied; the key prefix
// is removed.
func (s *mapState) key(rec *Record) ([]byte, bool) {
	key := rec.Key
	if len(key) == 0 {
		return nil, false
	}
	if bytes.IndexByte(key, '%') >= 0 {
		var ok bool
		if s.buf, ok = unescapeInto(s.buf, key); !ok {
			return nil, false
		}
		key = s.buf
	}
	mapped := false
	if rec.Path && len(rec.Query) > 0 && s.m.edgeQuery != nil {
		if k, ok := s.m.edgeQuery(string(key), string(rec.Query)); ok {
			// The key's path is percent-encoded: decoded once, as the
			// bucket decodes the path the edge rewrote the request to.
			if s.edgeBuf, ok = unescapeInto(s.edgeBuf, []byte(k)); !ok {
				return nil, false
			}
			key, mapped = s.edgeBuf, true
		}
	}
	if rec.Path && !mapped && s.m.edgePath != nil {
		for _, p := range s.m.edgePrefix {
			if bytes.HasPrefix(key, p) {
				mapped, ok := s.m.edgePath(string(key))
				if !ok {
					return nil, false
				}
				s.edgeBuf = append(s.edgeBuf[:0], mapped...)
				key = s.edgeBuf
				break
			}
		}
	}
	if rec.Path {
		rest, ok := bytes.CutPrefix(key, s.m.pathPrefix)
		if !ok {
			return nil, false
		}
		key = rest
		if len(s.m.originPath) > 0 {
			s.keyBuf = append(append(s.keyBuf[:0], s.m.originPath...), rest...)
			key = s.keyBuf
		}
	}
	return bytes.CutPrefix(key, s.m.prefix)
}

// splitDir splits "layerId/gridSetId/formatId/parametersId/rest" into the
// tile set's directory (without its last slash) and the rest; each id
// must be non-empty.
func splitDir(key []byte) (dir, rest []byte, ok bool) {
	end := 0
	for i := range 4 {
		j := bytes.IndexByte(key[end:], '/')
		if j <= 0 {
			return nil, nil, false
		}
		end += j
		if i < 3 {
			end++
		}
	}
	return key[:end], key[end+1:], true
}

// parseTile parses "z/x/y.ext": three canonical non-negative decimal
// numbers (digits only, no leading zero unless it is "0") and a non-empty
// extension without "/", as the tile store writes keys.
func parseTile(b []byte) (z, x, y int64, ok bool) {
	i := bytes.IndexByte(b, '/')
	if i < 0 {
		return 0, 0, 0, false
	}
	zb, b := b[:i], b[i+1:]
	if i = bytes.IndexByte(b, '/'); i < 0 {
		return 0, 0, 0, false
	}
	xb, b := b[:i], b[i+1:]
	if i = bytes.IndexByte(b, '.'); i < 0 {
		return 0, 0, 0, false
	}
	yb, ext := b[:i], b[i+1:]
	if len(ext) == 0 || bytes.IndexByte(ext, '/') >= 0 {
		return 0, 0, 0, false
	}
	z, okz := tilestore.ParseCanonical(zb)
	x, okx := tilestore.ParseCanonical(xb)
	y, oky := tilestore.ParseCanonical(yb)
	if !okz || !okx || !oky || int64(int(z)) != z {
		return 0, 0, 0, false
	}
	return z, x, y, true
}

// resolve names the tile set of directory dir and caches the answer while
// the cache has room.
func (s *mapState) resolve(dir []byte) setEntry {
	parts := strings.SplitN(string(dir), "/", 4)
	var e setEntry
	if name, ok := s.m.layerName(parts[0]); ok {
		e = setEntry{page: Page{Layer: name, GridSetID: parts[1], FormatID: parts[2], ParametersID: parts[3]}, known: true}
	}
	if s.sets == nil {
		s.sets = map[string]setEntry{}
	}
	if len(s.sets) < maxCachedSets {
		s.sets[string(dir)] = e
	}
	return e
}
