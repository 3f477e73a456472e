package tileserve

import (
	"context"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"tilecache/internal/edgepath"
	"tilecache/internal/grid"
	"tilecache/internal/httperr"
	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
)

// FeatureInfoSource is a layer's source that answers GetFeatureInfo (the
// WMS source does: wms.Source.FeatureInfo).
type FeatureInfoSource interface {
	FeatureInfo(ctx context.Context, g *grid.GridSet, z int, x, y int64, params map[string]string, i, j int, infoFormat string) ([]byte, string, error)
}

// FeatureInfo answers GetFeatureInfo requests (WMTS KVP and WMS) of a
// stored tile's pixel, which the OGC bindings pass to the origin under
// edgepath.FeatureInfoPrefix, and the WMTS RESTful FeatureInfo resource
// (edgepath.FeatureInfoPath; see edgepath.ParseFeatureInfo), and passes
// everything else to next. The request goes to the layer's WMS upstream
// as a GetFeatureInfo of the tile's own GetMap box, only for a layer whose
// file says `featureInfo: true`, never for a private one. It is bounded as
// a render on miss is: the upstream client's address policy (the SSRF
// guard), timeout, retries and concurrency cap, at most
// wms.MaxFeatureInfo bytes, at most Queue requests of the process at once
// (more are 503 at once) and Timeout each; a failure is answered with a
// fixed reason from the error table (never the upstream's words, host or
// URL, so never its credentials).
type FeatureInfo struct {
	layers   *layer.Catalogue
	values   func() map[string]string
	sourceOf func(*layer.Layer) (source.Source, error)
	next     http.Handler
	slots    chan struct{}
	timeout  time.Duration
	log      *slog.Logger
}

// NewFeatureInfo returns the handler; values is what the edge's store
// holds for the catalogue (edgepath.Live.Values), sourceOf a layer's
// source, queue and timeout the bounds of render on miss (defaults 64 and
// 20 s when zero).
func NewFeatureInfo(layers *layer.Catalogue, values func() map[string]string, sourceOf func(*layer.Layer) (source.Source, error),
	queue int, timeout time.Duration, log *slog.Logger, next http.Handler) *FeatureInfo {
	if queue <= 0 {
		queue = 64
	}
	if timeout <= 0 {
		timeout = 20 * time.Second
	}
	return &FeatureInfo{layers: layers, values: values, sourceOf: sourceOf, next: next, slots: make(chan struct{}, queue), timeout: timeout, log: log}
}

// ServeHTTP implements http.Handler.
func (h *FeatureInfo) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	if !edgepath.IsFeatureInfo(p) {
		h.next.ServeHTTP(w, r)
		return
	}
	cors(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	values := h.values()
	fi, exc, ok := edgepath.ParseFeatureInfo(p, func(k string) (string, bool) { v, ok := values[k]; return v, ok })
	if !ok {
		writeAnswer(w, exc)
		return
	}
	refuse := func(code, text string) {
		if fi.WMS {
			writeAnswer(w, edgepath.ServiceException(code, text))
			return
		}
		writeAnswer(w, edgepath.OWSException(501, "OperationNotSupported", "Request", text))
	}
	l, found := h.layers.ByID(fi.Layer)
	if !found || l.Private || !l.FeatureInfo {
		refuse("OperationNotSupported", "GetFeatureInfo is not offered for layer "+fi.Layer)
		return
	}
	src, err := h.sourceOf(l)
	fis, isFI := src.(FeatureInfoSource)
	sub, hasGrid := l.Subset(fi.GridSet)
	if err != nil || !isFI || !hasGrid {
		refuse("OperationNotSupported", "GetFeatureInfo is not offered for layer "+fi.Layer+" (its source is not a WMS)")
		return
	}
	// A parameters id does not tell its values: the default parameters
	// only.
	if fi.Style != tilestore.DefaultParametersID {
		refuse("StyleNotDefined", "GetFeatureInfo is offered for the default style only")
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		httperr.WriteText(w, http.StatusServiceUnavailable, "Service unavailable: too many feature info requests at once")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout)
	defer cancel()
	body, ct, err := fis.FeatureInfo(ctx, sub.GridSet, fi.Z, fi.X, fi.Y, map[string]string{}, fi.I, fi.J, fi.InfoFormat)
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away
		}
		status, msg, logIt := httperr.Render.Answer(err)
		if logIt {
			h.log.Error("feature info", "layer", l.Name, "err", err)
		}
		httperr.WriteText(w, status, msg)
		return
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", ObjectPolicy)
	w.Write(body)
}

// writeAnswer writes an OGC exception OWS answered.
func writeAnswer(w http.ResponseWriter, a edgepath.Answer) {
	w.Header().Set("Content-Type", a.ContentType)
	w.WriteHeader(a.Status)
	io.WriteString(w, a.Body)
}
