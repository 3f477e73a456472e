package rest

import (
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/area"
	"tilecache/internal/gwc"
)

// TileListType is the Content-Type of a seed request whose body is a list
// of tiles, one "z/x/y" per line as tile-expiry tools write them, its
// other fields in the query string. It is not a type a page on another
// site can post without the server's consent (CORS), like the JSON and
// XML forms.
const TileListType = "text/x-tile-list"

// MaxTileListBody bounds a tile list's body, and the list unzipped when
// the body is gzipped (past it: 413): the list is read line by line,
// never held whole, and keeps one key per distinct metatile (the limits
// on its lines and metatiles are area.ReadTileList's). 256 MiB holds the
// most lines a list may have (area.DefaultMaxLines) at 64 bytes each.
const MaxTileListBody = 256 << 20

// tileListQuery lists the query parameters of a tile list request.
var tileListQuery = []string{"type", "gridSetId", "format", "zoomStart", "zoomStop", "threadCount",
	"xyz", "parentsTo", "childrenTo", "tileFailureRetryCount", "tileFailureRetryWaitTime", "totalFailuresBeforeAborting"}

// postSeed answers POST /rest/seed/{layer}.json|.xml: a seed request, or
// one given as a tile list.
func (ts tasksResource) postSeed(name string, f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if mediaType(r.Header.Get("Content-Type")) == TileListType {
			return ts.seedTileList(name, f)(w, r)
		}
		return ts.seed(name, f)(w, r)
	}
}

// seedTileList answers a seed request given as a tile list: a reseed or
// truncate (or seed) of exactly the metatiles holding the listed tiles,
// answered like a seed request in format f.
func (ts tasksResource) seedTileList(name string, f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		req, err := ts.readTileListRequest(w, r, name)
		if err != nil {
			return err
		}
		tasks, err := ts.tasks.Submit(r.Context(), req)
		if err != nil {
			return err
		}
		noteTasks(r.Context(), name, tasks)
		writeTasks(w, f, tasks)
		return nil
	}
}

// readTileListRequest reads a seed request given as a tile list: its
// fields from the query, its tiles from the body.
func (ts tasksResource) readTileListRequest(w http.ResponseWriter, r *http.Request, name string) (gwc.SeedRequest, error) {
	if ts.planner == nil {
		return gwc.SeedRequest{}, apperr.New(apperr.Unsupported, "this server does not take tile lists")
	}
	q := r.URL.Query()
	for k := range q {
		known := false
		for _, p := range tileListQuery {
			known = known || k == p
		}
		if !known {
			return gwc.SeedRequest{}, apperr.Invalidf("Unknown query parameter %s of a tile list request; known: %s", apperr.Show(k), strings.Join(tileListQuery, ", "))
		}
	}
	req := gwc.SeedRequest{Layer: name, Type: q.Get("type"), Format: q.Get("format")}
	if q.Has("gridSetId") {
		req.GridSetID, req.HasGridSetID = q.Get("gridSetId"), true
	}
	ints := []struct {
		name string
		to   **int
	}{{"zoomStart", &req.ZoomStart}, {"zoomStop", &req.ZoomStop}, {"threadCount", &req.ThreadCount},
		{"tileFailureRetryCount", &req.RetryCount}, {"tileFailureRetryWaitTime", &req.RetryWaitMS},
		{"totalFailuresBeforeAborting", &req.MaxFailures}}
	for _, p := range ints {
		if !q.Has(p.name) {
			continue
		}
		v, err := strconv.Atoi(q.Get(p.name))
		if err != nil {
			return gwc.SeedRequest{}, apperr.Invalidf("Invalid value for %s: expected an integer, got %s", p.name, apperr.Show(q.Get(p.name)))
		}
		*p.to = &v
	}
	o := area.ListOptions{ParentsTo: -1, ChildrenTo: -1}
	for _, p := range []struct {
		name string
		to   *int
	}{{"parentsTo", &o.ParentsTo}, {"childrenTo", &o.ChildrenTo}} {
		if !q.Has(p.name) {
			continue
		}
		v, err := strconv.Atoi(q.Get(p.name))
		if err != nil || v < 0 {
			return gwc.SeedRequest{}, apperr.Invalidf("Invalid value for %s: expected a zoom level, got %s", p.name, apperr.Show(q.Get(p.name)))
		}
		*p.to = v
	}
	if q.Has("xyz") {
		v, err := strconv.ParseBool(q.Get("xyz"))
		if err != nil {
			return gwc.SeedRequest{}, apperr.Invalidf("Invalid value for xyz: expected true or false, got %s", apperr.Show(q.Get("xyz")))
		}
		o.XYZ = v
	}
	if _, ok := ts.layers.Layer(name); !ok {
		return gwc.SeedRequest{}, apperr.Invalidf("Unknown layer: %s", name)
	}
	body := io.Reader(http.MaxBytesReader(w, r.Body, MaxTileListBody))
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return gwc.SeedRequest{}, bodyError(err, "the gzip tile list")
		}
		defer zr.Close()
		body = &limitedReader{r: zr, left: MaxTileListBody}
	default:
		return gwc.SeedRequest{}, apperr.New(apperr.Unsupported, "Unsupported Content-Encoding %s: send the tile list as it is or gzip", apperr.Show(enc))
	}
	list, err := ts.planner.ReadTileList(req, body, o)
	if err != nil {
		return gwc.SeedRequest{}, bodyError(err, "the tile list")
	}
	req.TileList = list
	return req, nil
}

// errListTooLarge is a decompressed tile list past MaxTileListBody.
var errListTooLarge = errors.New("tile list too large")

// limitedReader fails, rather than ends, past its limit.
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errListTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// bodyError classifies an error reading a tile list body: too large, not
// readable (a 400 naming what), or the reader's own (already classified).
func bodyError(err error, what string) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok || errors.Is(err, errListTooLarge) {
		return apperr.New(apperr.TooLarge, "Request body too large: a tile list is at most %d MiB (gzip it: the limit holds for the list unzipped too)", MaxTileListBody>>20)
	}
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, io.ErrUnexpectedEOF) {
		return apperr.Wrap(apperr.Invalid, err, "Could not read %s: %v", what, err)
	}
	return err
}
