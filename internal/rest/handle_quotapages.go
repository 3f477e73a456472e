package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// Bounds of GET /rest/diskquota/pages' limit parameter.
const (
	defaultPagesLimit = 1000
	maxPagesLimit     = 10000
)

// pagesAnswer is the JSON answer of GET /rest/diskquota/pages/{layer}.json.
// PageCount is set when the answer holds every page of the level,
// LayerPageCount when every page of the layer was ranked.
type pagesAnswer struct {
	Layer          string       `json:"layer"`
	GridSet        string       `json:"gridSet"`
	Format         string       `json:"format"`
	Parameters     string       `json:"parameters"`
	Zoom           int          `json:"zoom"`
	Policy         string       `json:"policy"`
	QuotaScope     string       `json:"quotaScope"`
	Enabled        bool         `json:"enabled"`
	PageSize       int          `json:"pageSize"`
	PageCount      *int         `json:"pageCount,omitempty"`
	LayerPageCount *int         `json:"layerPageCount,omitempty"`
	RankedPages    int          `json:"rankedPages"`
	Truncated      bool         `json:"truncated"`
	Next           string       `json:"next,omitempty"`
	Pages          []pageAnswer `json:"pages"`
}

type pageAnswer struct {
	X          int64      `json:"x"`
	Y          int64      `json:"y"`
	TileRange  [4]int64   `json:"tileRange"`
	Bounds     [4]float64 `json:"bounds"`
	Tiles      int64      `json:"tiles"`
	Bytes      int64      `json:"bytes"`
	Hits       int64      `json:"hits"`
	Created    *string    `json:"created"`
	LastAccess *string    `json:"lastAccess"`
	Frequency  float64    `json:"frequency"`
	Rank       int        `json:"rank,omitempty"` // 0: not among the pages ranked
}

// quotaPages answers the pages of layer's tile set (gridSet, format,
// parameters) at level zoom: at most limit of them, read by the level's
// key prefix in page id order (after the page named by after), listed
// lowest rank first. A page's rank is its place in the order the clean-up
// would expire the layer's pages under the policy that applies to it,
// counted among the layer's first limit pages in that order (read in
// that order): a call reads about twice limit pages, however many the
// layer and the level hold.
func (q quotaResource) pages(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if q.pagesOf == nil {
			writeText(w, http.StatusNotFound, "Disk usage is not counted by this server")
			return nil
		}
		l, ok := q.layers.Layer(name)
		if !ok {
			return apperr.New(apperr.NotFound, "Unknown layer %s", apperr.Show(name))
		}
		query := r.URL.Query()
		if query.Has("tileSets") {
			// The layer's usage by tile set (handle_quotapages_sets.go).
			return q.tileSets(w, r, l)
		}
		pq, err := pagesQuery(l, query)
		if err != nil {
			return err
		}
		cfg, err := q.config.QuotaConfig(r.Context())
		if err != nil {
			return err
		}
		policy, scope := cfg.GlobalPolicy, "global"
		if i := slices.IndexFunc(cfg.LayerQuotas, func(lq quota.LayerQuota) bool { return lq.Layer == l.Name }); i >= 0 {
			policy, scope = cfg.LayerQuotas[i].Policy, "layer"
		}
		set, z, limit := pq.set, pq.z, pq.limit
		pages, more, err := levelPages(r.Context(), q.pagesOf, set, z, pq.after, limit)
		if err != nil {
			return err
		}
		ans := pagesAnswer{Layer: l.Name, GridSet: set.GridSetID, Format: set.FormatID, Parameters: set.ParametersID, Zoom: z,
			Policy: policy, QuotaScope: scope, Enabled: cfg.Enabled, PageSize: 1 << quota.PageShift, Truncated: more,
			Pages: []pageAnswer{}}
		if more {
			last := pages[len(pages)-1].Key
			ans.Next = strconv.FormatInt(last.X, 10) + "," + strconv.FormatInt(last.Y, 10)
		} else if pq.after == "" {
			n := len(pages)
			ans.PageCount = &n
		}
		ranks, ranked, whole, err := rankPages(r.Context(), q.pagesOf, l.Name, policy, pages, limit)
		if err != nil {
			return err
		}
		ans.RankedPages = ranked
		if whole {
			ans.LayerPageCount = &ranked
		}
		// Lowest rank first: the expiration order, which the ranks follow.
		keys := make(map[quota.PageKey]string, len(pages))
		for _, p := range pages {
			keys[p.Key] = quota.OrderKey(p, policy)
		}
		slices.SortFunc(pages, func(a, b quota.Page) int { return strings.Compare(keys[a.Key], keys[b.Key]) })
		levelRange := pq.sub.GridSet.GridRange(z)
		for _, p := range pages {
			ans.Pages = append(ans.Pages, pageOf(p, ranks[p.Key], pq.sub.GridSet, levelRange))
		}
		body, err := json.Marshal(ans)
		if err != nil {
			return apperr.Wrap(apperr.Internal, err, "encode the pages")
		}
		writeBody(w, "application/json", body)
		return nil
	}
}

// levelPages reads up to limit pages of level z of set after the page
// after, by key prefix; more says the level has more. It reads at most
// limit+1 pages (plus the empty ones a store keeps).
func levelPages(ctx context.Context, store PageReader, set tilestore.SetName, z int, after string, limit int) (pages []quota.Page, more bool, err error) {
	for len(pages) <= limit {
		ps, next, err := store.LevelPages(ctx, set, z, after, limit+1-len(pages))
		if err != nil {
			return nil, false, err
		}
		pages = append(pages, ps...)
		if next == "" {
			break
		}
		after = next
	}
	if len(pages) > limit {
		return pages[:limit], true, nil
	}
	return pages, false, nil
}

// rankPages reads the layer's first limit pages in the expiration order
// of policy and returns the rank (1 = expires first) of each of pages
// among them, how many it read, and whether that was every page of the
// layer. A store that keeps no order (quota.ErrUnordered) ranks none.
func rankPages(ctx context.Context, store PageReader, layer, policy string, pages []quota.Page, limit int) (map[quota.PageKey]int, int, bool, error) {
	listed := make(map[quota.PageKey]bool, len(pages))
	for _, p := range pages {
		listed[p.Key] = true
	}
	ranks := make(map[quota.PageKey]int, len(pages))
	read, cursor := 0, ""
	for read < limit {
		ps, next, err := store.PagesInOrder(ctx, layer, policy, cursor, limit-read)
		if errors.Is(err, quota.ErrUnordered) {
			return map[quota.PageKey]int{}, 0, false, nil
		}
		if err != nil {
			return nil, 0, false, err
		}
		for _, p := range ps[:min(len(ps), limit-read)] {
			read++
			if listed[p.Key] {
				ranks[p.Key] = read
			}
		}
		if next == "" {
			return ranks, read, true, nil
		}
		cursor = next
	}
	// A store may not know that the limit-th page was the last.
	ps, next, err := store.PagesInOrder(ctx, layer, policy, cursor, 1)
	if err != nil {
		return nil, 0, false, err
	}
	return ranks, read, len(ps) == 0 && next == "", nil
}

// pageOf is one page's line: its tile range clipped to the level's tiles
// and the extent they cover.
func pageOf(p quota.Page, rank int, gs *grid.GridSet, level grid.TileRange) pageAnswer {
	minX, minY, maxX, maxY := p.Key.TileRange()
	tr := grid.TileRange{Z: p.Key.Z, MinX: max(minX, level.MinX), MinY: max(minY, level.MinY), MaxX: min(maxX, level.MaxX), MaxY: min(maxY, level.MaxY)}
	if tr.Count() == 0 {
		// A page past the level's tiles (a grid set changed since): its
		// own range.
		tr = grid.TileRange{Z: p.Key.Z, MinX: minX, MinY: minY, MaxX: maxX, MaxY: maxY}
	}
	e := gs.RangeExtent(tr)
	return pageAnswer{X: p.Key.X, Y: p.Key.Y, TileRange: [4]int64{tr.MinX, tr.MinY, tr.MaxX, tr.MaxY},
		Bounds: [4]float64{e.MinX, e.MinY, e.MaxX, e.MaxY}, Tiles: p.Tiles, Bytes: p.Bytes, Hits: p.Hits,
		Created: timeOrNull(p.Created), LastAccess: timeOrNull(p.LastAccess), Frequency: p.Frequency(), Rank: rank}
}

func timeOrNull(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// pagesRequest is what a pages request asks for.
type pagesRequest struct {
	set   tilestore.SetName
	sub   *grid.Subset
	z     int
	limit int
	after string // the id of the page to list after, "" for the first
}

// pagesQuery reads the tile set, level, limit and start of a pages
// request.
func pagesQuery(l *layer.Layer, q map[string][]string) (pagesRequest, error) {
	var none pagesRequest
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	gs := get("gridSet")
	if gs == "" {
		return none, apperr.Invalidf("gridSet is required: one of layer %s's grid sets (%s)", l.Name, strings.Join(subsetIDs(l), ", "))
	}
	sub, ok := l.Subset(gs)
	if !ok {
		return none, apperr.Invalidf("gridSet %s is not a grid set of layer %s (%s)", apperr.Show(gs), l.Name, strings.Join(subsetIDs(l), ", "))
	}
	f := get("format")
	formatID := ""
	for _, mime := range l.Formats {
		if id, _, ok := tilestore.Format(mime); ok && (mime == f || id == f) {
			formatID = id
			break
		}
	}
	if formatID == "" {
		return none, apperr.Invalidf("format %s is not a format of layer %s (%s)", apperr.Show(f), l.Name, strings.Join(l.Formats, ", "))
	}
	params := get("parameters")
	switch {
	case params == "" || params == tilestore.DefaultParametersID:
		params = tilestore.DefaultParametersID
	case len(l.Filters) == 0:
		return none, apperr.Invalidf("parameters %s: layer %s has no parameters, its only parameters id is %s", apperr.Show(params), l.Name, tilestore.DefaultParametersID)
	case !parametersIDPattern.MatchString(params):
		return none, apperr.Invalidf("parameters %s is neither %s nor 40 lower-case hexadecimal digits", apperr.Show(params), tilestore.DefaultParametersID)
	}
	zs := get("zoom")
	z, err := strconv.Atoi(zs)
	if err != nil || z < 0 || z >= sub.GridSet.Levels() {
		return none, apperr.Invalidf("zoom %s is not a level of grid set %s (0 to %d)", apperr.Show(zs), gs, sub.GridSet.Levels()-1)
	}
	limit := defaultPagesLimit
	if ls := get("limit"); ls != "" {
		limit, err = strconv.Atoi(ls)
		if err != nil || limit < 1 || limit > maxPagesLimit {
			return none, apperr.Invalidf("limit %s must be a whole number from 1 to %d", apperr.Show(ls), maxPagesLimit)
		}
	}
	set := tilestore.SetName{Layer: l.Name, GridSetID: gs, FormatID: formatID, ParametersID: params}
	var after string
	if as := get("after"); as != "" {
		xs, ys, _ := strings.Cut(as, ",")
		x, errX := strconv.ParseInt(xs, 10, 64)
		y, errY := strconv.ParseInt(ys, 10, 64)
		if errX != nil || errY != nil || x < 0 || y < 0 {
			return none, apperr.Invalidf("after %s is not a page: the next of an answer, the page's x,y", apperr.Show(as))
		}
		after = quota.PageKey{Set: set, Z: z, X: x, Y: y}.ID()
	}
	return pagesRequest{set: set, sub: sub, z: z, limit: limit, after: after}, nil
}

// subsetIDs lists the layer's grid sets.
func subsetIDs(l *layer.Layer) []string {
	out := make([]string, 0, len(l.Subsets))
	for _, s := range l.Subsets {
		out = append(out, s.GridSet.ID)
	}
	return out
}
