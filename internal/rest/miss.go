package rest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
	"tilecache/internal/seed"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
)

// MissRenderer renders a tile a client asked for and the store lacks
// (seed.Engine does, for layers that render on miss).
type MissRenderer interface {
	RenderMiss(ctx context.Context, m seed.Miss) (seed.Rendered, error)
}

// answerMiss answers a GET of a missing tile: rendered when the layer
// renders on miss (200, counted as an access like a stored tile), 404 when
// it does not or the tile is blank, 502/504 with a one-line reason and
// Cache-Control: no-store when the upstream failed (nothing was stored).
func answerMiss(w http.ResponseWriter, r *http.Request, mr MissRenderer, m seed.Miss, setID string, rec AccessRecorder, log *slog.Logger) {
	if mr == nil || r.Method != http.MethodGet {
		writeText(w, http.StatusNotFound, "Tile not found: "+r.URL.Path)
		return
	}
	rd, err := mr.RenderMiss(r.Context(), m)
	switch {
	case err == nil:
		id, _, _ := tilestore.Format(m.Format)
		recordAccess(rec, quota.TileSet{Layer: m.Layer, GridSetID: m.GridSetID, FormatID: id, ParametersID: setID}, m.Z, m.X, m.Y)
		writeObject(w, r, rd.Data, rd.Meta, source.ContentType(m.Format))
	case apperr.Is(err, apperr.NotFound):
		writeText(w, http.StatusNotFound, "Tile not found: "+r.URL.Path)
	case apperr.Is(err, apperr.Unavailable) && r.Context().Err() == nil:
		status := http.StatusBadGateway
		if errors.Is(err, seed.ErrUpstreamTimeout) {
			status = http.StatusGatewayTimeout
		}
		w.Header().Set("Cache-Control", "no-store")
		writeText(w, status, apperr.Message(err))
	default:
		if r.Context().Err() != nil {
			return
		}
		log.Error("render a missing tile", "path", r.URL.Path, "err", err)
		w.Header().Set("Cache-Control", "no-store")
		writeText(w, http.StatusInternalServerError, "The tile could not be rendered")
	}
}
