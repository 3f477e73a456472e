// Package rest serves tilecache's administration interface: GeoWebCache's
// /rest seed, mass-truncate and disk-quota endpoints, as specified by the
// REST contract, plus the read-only disk usage report and the schedules of
// saved seed requests (handle_schedules.go). One http.Handler serves the
// whole contract; it does not know whether net/http or a Lambda adapter
// drives it. Tiles serves stored tiles to clients, outside the
// administration interface.
//
// Errors: handlers return errors classified by apperr, and every failure
// this package answers (the administration interface's, a tile's, an
// object's, a missing tile's render) takes its status from one table, in
// this file: causeStatus, then kindStatus. Client mistakes are answered 4xx
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
	"tilecache/internal/onmiss"
	"tilecache/internal/quota"
	"tilecache/internal/source/upstream"
)

// MaxBody is the largest request body accepted (contract §1).
const MaxBody = 1 << 20

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
	// Reads, if set, takes POST /rest/diskquota/access.json: reads of
	// tiles counted from access logs (404 otherwise).
	Reads ReadRecorder
	// Pages, if set, answers GET /rest/diskquota/pages/{layer}.json (404
	// otherwise).
	Pages PageReader
	// Recent, if set, gives GET /rest/overview.json the task counts and
	// the last finished tasks (none otherwise).
	Recent RecentTasks
	// Failures, if set, answers GET /rest/failures.json with why tasks
	// failed (404 otherwise; handle_failures.go).
	Failures FailureLister
	// Upstream is where the upstreams of layers changed through the
	// interface may be: a layer whose WMS URL is an address it refuses
	// is a 400. The zero value allows only the public Internet.
	Upstream upstream.AddressPolicy
	// AccountCost is the bcrypt cost of the passwords set through
	// /rest/accounts (0: bcrypt's default).
	AccountCost int
}

// Handler is the REST interface. Authentication is a separate middleware
// (package auth) wrapped around it.
type Handler struct {
	svc  Services
	opts Options
	log  *slog.Logger
}

// New returns the handler.
func New(svc Services, opts Options, log *slog.Logger) *Handler {
	return &Handler{svc: svc, opts: opts, log: log}
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
	if !h.authorize(w, r, rt.kind) {
		return
	}
	if err := fn(w, r); err != nil {
		h.writeError(w, r, err)
	}
}

// The error table: every failure this package answers takes its status
// from here. causeStatus comes first: errors answered with a status and a
// fixed reason of their own whatever their kind (a failed render of a
// missing tile; the reason is the error's text, never the upstream's
// words, and the engine logged the failure where it was made). Every other
// error is answered by its kind, through kindStatus; a kind missing there
// is a 500.
var (
	causeStatus = []struct {
		err    error
		status int
	}{
		{onmiss.ErrUpstreamTimeout, http.StatusGatewayTimeout},
		{onmiss.ErrUpstreamNoImage, http.StatusBadGateway},
		{onmiss.ErrUpstreamError, http.StatusBadGateway},
		{onmiss.ErrBusy, http.StatusServiceUnavailable},
	}
	kindStatus = map[apperr.Kind]int{
		apperr.Invalid:      http.StatusBadRequest,
		apperr.NotFound:     http.StatusNotFound,
		apperr.Conflict:     http.StatusConflict,
		apperr.Precondition: http.StatusPreconditionFailed,
		apperr.TooLarge:     http.StatusRequestEntityTooLarge,
		apperr.Unsupported:  http.StatusUnsupportedMediaType,
		apperr.Unavailable:  http.StatusServiceUnavailable,
		apperr.Internal:     http.StatusInternalServerError,
	}
)

// failing words the failures of one kind of operation.
type failing struct {
	// serverSide: the client cannot have caused the failure (a render, a
	// read of the tile store), so every kind but Unavailable is answered
	// as Internal.
	serverSide  bool
	internal    string // the line answered for an Internal error
	unavailable string // the line answered for an Unavailable error; "" for the error's own message
}

// The operations whose failures are answered.
var (
	// failedRequest: a request the client may have got wrong (a handler of
	// the administration interface, a tile's parameters).
	failedRequest = failing{internal: "Internal server error; see the server log"}
	// failedRender: a render of a missing tile.
	failedRender = failing{serverSide: true, internal: "The tile could not be rendered",
		unavailable: "The tile could not be rendered now; retry shortly"}
	// failedStoreRead: a read of the tile store.
	failedStoreRead = failing{serverSide: true, internal: "The tile store could not be read",
		unavailable: "The tile store could not be read"}
)

// answer looks err up in the error table: the status, the one line the
// client is told, and whether err is to be logged where it is answered
// (an Internal or Unavailable error; not a cause).
func (f failing) answer(err error) (status int, msg string, logIt bool) {
	for _, c := range causeStatus {
		if errors.Is(err, c.err) {
			return c.status, c.err.Error(), false
		}
	}
	kind := apperr.KindOf(err)
	if f.serverSide && kind != apperr.Unavailable {
		kind = apperr.Internal
	}
	status, ok := kindStatus[kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	switch {
	case kind == apperr.Internal:
		return status, f.internal, true
	case kind == apperr.Unavailable && f.unavailable != "":
		return status, f.unavailable, true
	}
	return status, apperr.Message(err), kind == apperr.Unavailable
}

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client went away
	}
	status, msg, logIt := failedRequest.answer(err)
	if logIt {
		h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
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
