// Package edgepath maps the tile paths map clients ask a CDN for — WMTS
// RESTful and XYZ, rows counted from the top — to the keys the tiles are
// stored under (rows from the bottom, GeoWebCache's layout). The same
// mapping runs at the edge, as a CloudFront Function (functions/edge),
// and in `tilecache serve`; both pass one table of cases
// (testdata/cases.json).
//
//	/wmts/{layer}/{gridSet}/{format}/{parametersId}/{TileMatrix}/{TileCol}/{TileRow}.{ext}
//	/xyz/{layer}/{gridSet}/{format}/{parametersId}/{z}/{x}/{y}.{ext}
//
// both become /{layer}/{gridSet}/{format}/{parametersId}/{z}/{x}/{rows(z)−1−y}.{ext}.
// A path whose numbers are not written canonically (digits only, no
// leading zero) or lie outside the grid set's level, columns or rows is
// refused, so that it never reaches the store.
package edgepath

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"tilecache/internal/grid"
	"tilecache/internal/layer"
)

// Levels are the columns and rows of each level of a grid set.
type Levels struct {
	Cols, Rows []int64
}

// Table holds the levels of each grid set by id.
type Table map[string]Levels

// NewTable returns the levels of grid sets.
func NewTable(sets []*grid.GridSet) Table {
	t := Table{}
	for _, g := range sets {
		var l Levels
		for z := range g.Levels() {
			c, r := g.Size(z)
			l.Cols, l.Rows = append(l.Cols, c), append(l.Rows, r)
		}
		t[g.ID] = l
	}
	return t
}

// Encode writes a grid set's levels as the edge function reads them from
// its key-value store: "c0,c1,…;r0,r1,…".
func (l Levels) Encode() string {
	join := func(v []int64) string {
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = strconv.FormatInt(n, 10)
		}
		return strings.Join(s, ",")
	}
	return join(l.Cols) + ";" + join(l.Rows)
}

// Decode reads what Encode wrote.
func Decode(s string) (Levels, bool) {
	cols, rows, ok := strings.Cut(s, ";")
	if !ok {
		return Levels{}, false
	}
	split := func(s string) ([]int64, bool) {
		var out []int64
		for _, p := range strings.Split(s, ",") {
			n, err := strconv.ParseInt(p, 10, 64)
			if err != nil || n < 1 {
				return nil, false
			}
			out = append(out, n)
		}
		return out, true
	}
	c, ok1 := split(cols)
	r, ok2 := split(rows)
	if !ok1 || !ok2 || len(c) != len(r) {
		return Levels{}, false
	}
	return Levels{Cols: c, Rows: r}, true
}

// Prefixes are the first segments of the paths Map takes.
var Prefixes = []string{"/wmts/", "/xyz/"}

// Map returns the stored key's path of a WMTS or XYZ tile path; ok is
// false for any other path and for a tile that cannot exist. Segments
// are kept as they are written (percent-encoding included), so that the
// key is the one the store would be asked for by its own path.
func Map(path string, t Table) (key string, ok bool) {
	var rest string
	for _, p := range Prefixes {
		if r, found := strings.CutPrefix(path, p); found {
			rest, ok = r, true
		}
	}
	if !ok {
		return "", false
	}
	seg := strings.Split(rest, "/")
	if len(seg) != 7 {
		return "", false
	}
	for _, s := range seg[:4] {
		if s == "" || s == "." || s == ".." {
			return "", false
		}
	}
	name, ext, found := strings.Cut(seg[6], ".")
	if !found || ext == "" || !canonical(seg[4]) || !canonical(seg[5]) || !canonical(name) {
		return "", false
	}
	levels, known := t[seg[1]]
	if !known {
		return "", false
	}
	z, err1 := strconv.Atoi(seg[4])
	x, err2 := strconv.ParseInt(seg[5], 10, 64)
	y, err3 := strconv.ParseInt(name, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || z >= len(levels.Rows) || x >= levels.Cols[z] || y >= levels.Rows[z] {
		return "", false
	}
	return "/" + strings.Join(seg[:4], "/") + "/" + seg[4] + "/" + seg[5] + "/" +
		strconv.FormatInt(levels.Rows[z]-1-y, 10) + "." + ext, true
}

// canonical reports whether s is a non-negative integer as strconv.Itoa
// writes it, at most 15 digits (exact in a JavaScript number).
func canonical(s string) bool {
	if s == "" || len(s) > 15 || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Handler serves the edge paths as the CDN does: a path Map takes is
// served by next as the stored key's path, one it refuses is a 404, and
// any other path goes to next unchanged.
func Handler(t Table, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		edge := false
		for _, pre := range Prefixes {
			edge = edge || strings.HasPrefix(p, pre)
		}
		if !edge {
			next.ServeHTTP(w, r)
			return
		}
		key, ok := Map(p, t)
		plain, err := url.PathUnescape(key)
		if !ok || err != nil {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Access-Control-Allow-Origin", "*")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "Not found: no such tile\n")
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = plain, key
		next.ServeHTTP(w, r2)
	})
}

// TableOf returns the table of the grid sets of a layer catalogue's
// layers.
func TableOf(c *layer.Catalogue) Table {
	seen := map[string]bool{}
	var sets []*grid.GridSet
	for _, name := range c.Names() {
		l, _ := c.Layer(name)
		for _, s := range l.Subsets {
			if !seen[s.GridSet.ID] {
				seen[s.GridSet.ID] = true
				sets = append(sets, s.GridSet)
			}
		}
	}
	return NewTable(sets)
}
