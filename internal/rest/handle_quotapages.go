package rest

import (
	"context"
	"encoding/json"
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

// PageReader reads the disk quota's usage pages (the usage store does).
type PageReader interface {
	// Pages returns a layer's pages that hold tiles or bytes, in page id order.
	Pages(ctx context.Context, layer string) ([]quota.Page, error)
}

// Bounds of GET /rest/diskquota/pages' limit parameter.
const (
	defaultPagesLimit = 1000
	maxPagesLimit     = 10000
)

// pagesAnswer is the JSON answer of GET /rest/diskquota/pages/{layer}.json.
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
	PageCount      int          `json:"pageCount"`
	LayerPageCount int          `json:"layerPageCount"`
	Truncated      bool         `json:"truncated"`
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
	Rank       int        `json:"rank"`
}

// quotaPagesRoute is GET /rest/diskquota/pages/{layer}.json, an extension
// of this project (GeoWebCache has no such path): the disk quota's usage
// pages of one tile set at one level, for a coverage map.
func (h *Handler) quotaPagesRoute(path string) (route, bool) {
	raw, ok := strings.CutPrefix(path, "/rest/diskquota/pages/")
	if !ok || strings.Contains(raw, "/") {
		return route{}, false
	}
	raw, f := splitSuffix(raw)
	name, ok := layerSegment(raw)
	if !ok || f != formatJSON {
		return route{}, false
	}
	return route{map[string]handlerFunc{http.MethodGet: h.quotaPages(name)}}, true
}

// quotaPages answers the pages of layer's tile set (gridSet, format,
// parameters) at level zoom, ranked in the order the clean-up would expire
// the layer's pages under the policy that applies to it, at most limit of
// them, lowest rank first.
func (h *Handler) quotaPages(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if h.opts.Pages == nil {
			writeText(w, http.StatusNotFound, "Disk usage is not counted by this server")
			return nil
		}
		l, ok := h.svc.Layers.Layer(name)
		if !ok {
			return apperr.New(apperr.NotFound, "Unknown layer %s", apperr.Show(name))
		}
		q := r.URL.Query()
		set, sub, z, limit, err := pagesQuery(l, q)
		if err != nil {
			return err
		}
		cfg, err := h.svc.Quota.QuotaConfig(r.Context())
		if err != nil {
			return err
		}
		policy, scope := cfg.GlobalPolicy, "global"
		if i := slices.IndexFunc(cfg.LayerQuotas, func(lq quota.LayerQuota) bool { return lq.Layer == l.Name }); i >= 0 {
			policy, scope = cfg.LayerQuotas[i].Policy, "layer"
		}
		all, err := h.opts.Pages.Pages(r.Context(), l.Name)
		if err != nil {
			return err
		}
		quota.Order(all, policy)
		ans := pagesAnswer{Layer: l.Name, GridSet: set.GridSetID, Format: set.FormatID, Parameters: set.ParametersID, Zoom: z,
			Policy: policy, QuotaScope: scope, Enabled: cfg.Enabled, PageSize: 1 << quota.PageShift, LayerPageCount: len(all),
			Pages: []pageAnswer{}}
		levelRange := sub.GridSet.GridRange(z)
		for i, p := range all {
			if p.Key.Set != set || p.Key.Z != z {
				continue
			}
			ans.PageCount++
			if len(ans.Pages) == limit {
				ans.Truncated = true
				continue
			}
			ans.Pages = append(ans.Pages, pageOf(p, i+1, sub.GridSet, levelRange))
		}
		body, err := json.Marshal(ans)
		if err != nil {
			return apperr.Wrap(apperr.Internal, err, "encode the pages")
		}
		writeBody(w, "application/json", body)
		return nil
	}
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

// pagesQuery reads the tile set, level and limit of a pages request.
func pagesQuery(l *layer.Layer, q map[string][]string) (set tilestore.SetName, sub *grid.Subset, z, limit int, err error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return strings.TrimSpace(v[0])
		}
		return ""
	}
	gs := get("gridSet")
	if gs == "" {
		return set, nil, 0, 0, apperr.Invalidf("gridSet is required: one of layer %s's grid sets (%s)", l.Name, strings.Join(subsetIDs(l), ", "))
	}
	sub, ok := l.Subset(gs)
	if !ok {
		return set, nil, 0, 0, apperr.Invalidf("gridSet %s is not a grid set of layer %s (%s)", apperr.Show(gs), l.Name, strings.Join(subsetIDs(l), ", "))
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
		return set, nil, 0, 0, apperr.Invalidf("format %s is not a format of layer %s (%s)", apperr.Show(f), l.Name, strings.Join(l.Formats, ", "))
	}
	params := get("parameters")
	switch {
	case params == "" || params == tilestore.DefaultParametersID:
		params = tilestore.DefaultParametersID
	case len(l.Filters) == 0:
		return set, nil, 0, 0, apperr.Invalidf("parameters %s: layer %s has no parameters, its only parameters id is %s", apperr.Show(params), l.Name, tilestore.DefaultParametersID)
	case !parametersIDPattern.MatchString(params):
		return set, nil, 0, 0, apperr.Invalidf("parameters %s is neither %s nor 40 lower-case hexadecimal digits", apperr.Show(params), tilestore.DefaultParametersID)
	}
	zs := get("zoom")
	z, err = strconv.Atoi(zs)
	if err != nil || z < 0 || z >= sub.GridSet.Levels() {
		return set, nil, 0, 0, apperr.Invalidf("zoom %s is not a level of grid set %s (0 to %d)", apperr.Show(zs), gs, sub.GridSet.Levels()-1)
	}
	limit = defaultPagesLimit
	if ls := get("limit"); ls != "" {
		limit, err = strconv.Atoi(ls)
		if err != nil || limit < 1 || limit > maxPagesLimit {
			return set, nil, 0, 0, apperr.Invalidf("limit %s must be a whole number from 1 to %d", apperr.Show(ls), maxPagesLimit)
		}
	}
	return tilestore.SetName{Layer: l.Name, GridSetID: gs, FormatID: formatID, ParametersID: params}, sub, z, limit, nil
}

// subsetIDs lists the layer's grid sets.
func subsetIDs(l *layer.Layer) []string {
	out := make([]string, 0, len(l.Subsets))
	for _, s := range l.Subsets {
		out = append(out, s.GridSet.ID)
	}
	return out
}
