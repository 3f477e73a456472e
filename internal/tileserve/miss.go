package tileserve

import (
	"context"
	"log/slog"
	"net/http"

	"tilecache/internal/apperr"
	"tilecache/internal/httperr"
	"tilecache/internal/onmiss"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
)

// MissRenderer renders a tile a client asked for and the store lacks
// (onmiss.Renderer does, for layers that render on miss).
type MissRenderer interface {
	RenderMiss(ctx context.Context, m onmiss.Miss) (onmiss.Rendered, error)
}

// answerMiss answers a GET of a missing tile, m of the tile set named set:
// rendered when the layer renders on miss (200, counted as an access like
// a stored tile), 404 when it does not or the tile is blank (now or as
// remembered), 502/504 with a fixed one-line reason (never the upstream's
// words, host or URL) when the upstream failed, 503 with Retry-After when
// no render slot freed in time (statuses and reasons from the error table,
// see httperr.Render). Every failure is answered Cache-Control: no-store
// (nothing was stored).
func answerMiss(w http.ResponseWriter, r *http.Request, mr MissRenderer, m onmiss.Miss, set tilestore.SetName, rec AccessRecorder, log *slog.Logger) {
	if onlyIfCached(r) {
		answerNotCached(w, r)
		return
	}
	if mr == nil || r.Method != http.MethodGet {
		httperr.WriteText(w, http.StatusNotFound, "Tile not found: "+r.URL.Path)
		return
	}
	rd, err := mr.RenderMiss(r.Context(), m)
	if err == nil {
		recordAccess(r.Context(), rec, set, m.Z, m.X, m.Y)
		writeObject(w, r, rd.Data, rd.Meta, source.ContentType(m.Format))
		return
	}
	if apperr.Is(err, apperr.NotFound) {
		httperr.WriteText(w, http.StatusNotFound, "Tile not found: "+r.URL.Path)
		return
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	w.Header().Set("Cache-Control", "no-store")
	status, msg, logIt := httperr.Render.Answer(err)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	if logIt {
		log.Error("render a missing tile", "path", r.URL.Path, "err", err) // the engine logged upstream failures
	}
	httperr.WriteText(w, status, msg)
}
