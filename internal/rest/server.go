// Package rest serves tilecache's administration interface: GeoWebCache's
// /rest seed, mass-truncate and disk-quota endpoints, as specified by the
// REST contract, plus the read-only disk usage report and the schedules of
// saved seed requests (handle_schedules.go). One http.Handler serves the
// whole contract; it does not know whether net/http or a Lambda adapter
// drives it. The public tiles and objects, outside the administration
// interface, are package tileserve's.
//
// Errors: handlers return errors classified by apperr, and every failure
// this package answers (the administration interface's, a tile's, an
// object's, a missing tile's render) takes its status from one table,
// package httperr's. Client mistakes are answered 4xx
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
	"tilecache/internal/httperr"
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
	// The extensions' resources, each holding only what it serves from.
	tokens    tokensResource
	accounts  accountsResource
	schedules schedulesResource
	layersRes layersResource
	quota     quotaResource
	tasks     tasksResource
}

// New returns the handler.
func New(svc Services, opts Options, log *slog.Logger) *Handler {
	return &Handler{svc: svc, opts: opts, log: log,
		tokens:    tokensResource{store: svc.Tokens, layers: svc.Layers, basePath: opts.BasePath},
		accounts:  accountsResource{store: svc.Accounts, configured: svc.Configured, tokens: svc.Tokens, cost: opts.AccountCost, basePath: opts.BasePath, log: log},
		schedules: schedulesResource{store: svc.Schedules, planner: svc.Planner, basePath: opts.BasePath, log: log},
		layersRes: layersResource{layers: svc.Layers, editor: svc.Editor, planner: svc.Planner, tasks: svc.Tasks,
			upstream: opts.Upstream, basePath: opts.BasePath, log: log},
		quota: quotaResource{config: svc.Quota, onChange: opts.OnQuotaChange, usage: opts.Usage, reads: opts.Reads,
			pagesOf: opts.Pages, layers: svc.Layers, log: log},
		tasks: tasksResource{tasks: svc.Tasks, planner: svc.Planner, layers: svc.Layers, basePath: opts.BasePath},
	}
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

func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the client went away
	}
	status, msg, logIt := httperr.Request.Answer(err)
	if logIt {
		h.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeText(w, status, msg)
}

// writeText writes a one-line text/plain answer.
func writeText(w http.ResponseWriter, status int, msg string) { httperr.WriteText(w, status, msg) }

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
