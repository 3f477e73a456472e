package rest

// GET /rest/diskquota/pages/{layer}.json?tileSets=1, an extension of this
// project: a layer's counted usage summed per tile set (grid set, format,
// parameters) and level, from its quota pages, for a console's layers
// page (what is stored where, and the deepest level holding tiles).

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// layerPages reads every page of a layer (quota.PageStore does).
type layerPages interface {
	Pages(ctx context.Context, layer string) ([]quota.Page, error)
}

type tileSetsAnswer struct {
	Layer    string          `json:"layer"`
	TileSets []tileSetAnswer `json:"tileSets"`
}

type tileSetAnswer struct {
	GridSet string `json:"gridSet"`
	// Format is the MIME type (FormatID the short name of the keys).
	Format     string        `json:"format"`
	FormatID   string        `json:"formatId"`
	Parameters string        `json:"parameters"`
	Tiles      int64         `json:"tiles"`
	Bytes      int64         `json:"bytes"`
	Levels     []levelAnswer `json:"levels"`
}

type levelAnswer struct {
	Zoom  int   `json:"zoom"`
	Tiles int64 `json:"tiles"`
	Bytes int64 `json:"bytes"`
}

// tileSets answers the tile-set summary of layer l: every page of the
// layer is read once.
func (q quotaResource) tileSets(w http.ResponseWriter, r *http.Request, l *layer.Layer) error {
	lp, ok := q.pagesOf.(layerPages)
	if !ok {
		writeText(w, http.StatusNotFound, "This server cannot sum a layer's usage by tile set")
		return nil
	}
	pages, err := lp.Pages(r.Context(), l.Name)
	if err != nil {
		return err
	}
	mimes := map[string]string{}
	for _, m := range l.Formats {
		if id, _, ok := tilestore.Format(m); ok {
			mimes[id] = m
		}
	}
	sets := map[tilestore.SetName]*tileSetAnswer{}
	levels := map[tilestore.SetName]map[int]*levelAnswer{}
	for _, p := range pages {
		if p.Tiles == 0 && p.Bytes == 0 {
			continue
		}
		s := sets[p.Key.Set]
		if s == nil {
			s = &tileSetAnswer{GridSet: p.Key.Set.GridSetID, Format: mimes[p.Key.Set.FormatID], FormatID: p.Key.Set.FormatID, Parameters: p.Key.Set.ParametersID}
			sets[p.Key.Set], levels[p.Key.Set] = s, map[int]*levelAnswer{}
		}
		s.Tiles += p.Tiles
		s.Bytes += p.Bytes
		lv := levels[p.Key.Set][p.Key.Z]
		if lv == nil {
			lv = &levelAnswer{Zoom: p.Key.Z}
			levels[p.Key.Set][p.Key.Z] = lv
		}
		lv.Tiles += p.Tiles
		lv.Bytes += p.Bytes
	}
	ans := tileSetsAnswer{Layer: l.Name, TileSets: []tileSetAnswer{}}
	for k, s := range sets {
		for _, lv := range levels[k] {
			s.Levels = append(s.Levels, *lv)
		}
		slices.SortFunc(s.Levels, func(a, b levelAnswer) int { return cmp.Compare(a.Zoom, b.Zoom) })
		ans.TileSets = append(ans.TileSets, *s)
	}
	slices.SortFunc(ans.TileSets, func(a, b tileSetAnswer) int {
		return cmp.Or(cmp.Compare(a.GridSet, b.GridSet), cmp.Compare(a.FormatID, b.FormatID), cmp.Compare(a.Parameters, b.Parameters))
	})
	body, err := json.Marshal(ans)
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "encode the tile sets")
	}
	writeBody(w, "application/json", body)
	return nil
}
