// Package rest serves tilecache's administration interface: GeoWebCache's
// /rest seed, mass-truncate and disk-quota endpoints, as specified by the
// REST contract, plus the read-only disk usage report. One http.Handler
// serves the whole contract; it does not know whether net/http or a Lambda
// adapter drives it. Tiles serves stored tiles to clients, outside the
// administration interface.
//
// Errors: handlers return errors classified by apperr; errorStatus is the
// single table from kind to HTTP status. Client mistakes are answered 4xx
// with a one-line text/plain message; internal errors are logged with
// detail and answered with a generic message.
package rest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
	"tilecache/internal/seed"
)

// MaxBody is the largest request body accepted (contract §1).
const MaxBody = 1 << 20

// QuotaConfigStore persists the disk-quota configuration.
type QuotaConfigStore interface {
	// QuotaConfig returns the stored configuration, or quota.Default() if
	// none was ever stored.
	QuotaConfig(ctx context.Context) (quota.Config, error)
	// UpdateQuotaConfig atomically replaces the configuration with
	// fn(current); an error from fn changes nothing and is returned.
	UpdateQuotaConfig(ctx context.Context, fn func(quota.Config) (quota.Config, error)) (quota.Config, error)
}

// Options configure the handler.
type Options struct {
	// BasePath is the mount prefix in front of /rest, e.g. "/gwc", used to
	// build absolute URLs. Empty when mounted at the root.
	BasePath string
	// OnQuotaChange, if set, is called with every newly stored
	// configuration so the clean-up schedule can be rebuilt at once.
	OnQuotaChange func(quota.Config)
	// Usage, if set, answers GET /rest/diskquota/usage (404 otherwise).
	Usage UsageReporter
}

// Handler is the REST interface. Authentication is a separate middleware
// (package auth) wrapped around it.
type Handler struct {
	engine *seed.Engine
	quota  QuotaConfigStore
	opts   Options
	log    *slog.Logger
}

// New returns the handler.
func New(engine *seed.Engine, q QuotaConfigStore, opts Options, log *slog.Logger) *Handler {
	return &Handler{engine: engine, quota: q, opts: opts, log: log}
}

// handlerFunc is a handler that returns its error to be answered in one place.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := h.route(r)
	if !ok {
		writeText(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	fn, ok := rt.methods[r.Method]
	if !ok {
		w.Header().Set("Allow", rt.allow())
		writeText(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed on "+r.URL.Path)
		return
	}
	if err := fn(w, r); err != nil {
		h.writeError(w, r, err)
	}
}

// errorStatus is the single mapping from error kind to HTTP status.
func errorStatus(k apperr.Kind) int {
	switch k {
	case apperr.Invalid:
		return http.StatusBadRequest
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.TooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.Unsupported:
		return http.StatusUnsupportedMediaType
	case apperr.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	kind := apperr.KindOf(err)
	status := errorStatus(kind)
	msg := apperr.Message(err)
	switch {
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the client went away
	case kind == apperr.Internal || kind == apperr.Unavailable:
		h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		if kind == apperr.Internal {
			msg = "Internal server error; see the server log"
		}
	}
	writeText(w, status, msg)
}

// writeText writes a one-line text/plain answer.
func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}

func writeBody(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// readBody reads a request body of at most MaxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tooLarge := apperr.New(apperr.TooLarge, "Request body too large: the limit is 1 MiB")
	if r.ContentLength > MaxBody {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge
		}
		return nil, apperr.Wrap(apperr.Invalid, err, "Could not read the request body")
	}
	return body, nil
}

// mediaType returns the lower-case media type of a Content-Type header,
// without parameters.
func mediaType(header string) string {
	mt, _, _ := strings.Cut(header, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}
