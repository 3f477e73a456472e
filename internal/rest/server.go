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
	"log/slog"
	"net/http"
	"strings"

	"tilecache/internal/httperr"
	"tilecache/internal/quota"
	"tilecache/internal/source/upstream"
)

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
	overview  overviewResource
	failures  failuresResource
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
		tasks:    newTasksResource(svc, opts),
		overview: overviewResource{layers: svc.Layers, usage: opts.Usage, recent: opts.Recent},
		failures: failuresResource{failures: opts.Failures, layers: svc.Layers},
	}
}

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
	if !authorize(w, r, rt.kind, h.log) {
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

// route finds the resource of a request; every route of the contract is
// listed here.
func (h *Handler) route(r *http.Request) (route, bool) {
	path := r.URL.EscapedPath()
	switch path {
	case "/rest/seed.json":
		return route{kindTasks, map[string]handlerFunc{http.MethodGet: h.tasks.listAll}}, true
	case "/rest/seed":
		return route{kindKillAll, map[string]handlerFunc{http.MethodPost: h.tasks.killAll}}, true
	case "/rest/masstruncate":
		return route{kindMassTruncate, map[string]handlerFunc{http.MethodGet: h.tasks.massTruncateTypes, http.MethodPost: h.tasks.massTruncate}}, true
	case "/rest/diskquota.xml":
		return route{kindQuota, map[string]handlerFunc{http.MethodGet: h.quota.getConfig(formatXML), http.MethodPut: h.quota.putConfig(formatXML)}}, true
	case "/rest/diskquota.json":
		return route{kindQuota, map[string]handlerFunc{http.MethodGet: h.quota.getConfig(formatJSON), http.MethodPut: h.quota.putConfig(formatJSON)}}, true
	case "/rest/diskquota/usage.xml":
		return route{kindUsage, map[string]handlerFunc{http.MethodGet: h.quota.getUsage(formatXML)}}, true
	case "/rest/diskquota/usage.json":
		return route{kindUsage, map[string]handlerFunc{http.MethodGet: h.quota.getUsage(formatJSON)}}, true
	case "/rest/overview.json":
		// An extension of this project: a console's first page in one
		// answer (handle_overview.go).
		return route{kindOverview, map[string]handlerFunc{http.MethodGet: h.overview.get}}, true
	case "/rest/failures.json":
		// An extension of this project: why tasks failed
		// (handle_failures.go).
		if h.failures.failures == nil {
			return route{}, false
		}
		return route{kindFailures, map[string]handlerFunc{http.MethodGet: h.failures.get}}, true
	case "/rest/whoami.json":
		// An extension of this project: the request's account, role and
		// what it may do (handle_whoami.go).
		return route{kindWhoAmI, map[string]handlerFunc{http.MethodGet: whoAmI}}, true
	case "/rest/diskquota/access.json":
		// An extension of this project (GeoWebCache has no such path).
		return route{kindAccessLog, map[string]handlerFunc{http.MethodPost: h.quota.postAccess}}, true
	}
	if rt, ok := h.quota.pagesRoute(path); ok {
		// An extension of this project: the disk quota's usage pages of a
		// tile set's level (handle_quotapages.go).
		return rt, true
	}
	if rt, ok := h.layersRes.route(path); ok {
		// The layers and grid sets, read from the layer file
		// (handle_layers.go).
		if path == fromCapabilitiesPath {
			// An extension of this project: POST proposes layers from a
			// WMS's capabilities (handle_fromcaps.go).
			rt = h.layersRes.withFromCapabilities(rt)
		}
		return rt, true
	}
	if rt, ok := h.tokens.route(path); ok {
		// An extension of this project: the API tokens
		// (handle_tokens.go).
		return rt, true
	}
	if rt, ok := h.accounts.route(path); ok {
		// An extension of this project: the accounts added at run time
		// (handle_accounts.go).
		return rt, true
	}
	if rt, ok := h.schedules.route(path); ok {
		// An extension of this project (handle_schedules.go).
		return rt, true
	}
	if raw, ok := strings.CutPrefix(path, "/rest/estimate/"); ok {
		// An extension of this project: a dry run of a seed request
		// (GeoWebCache has no such path and answers 404).
		raw, f := splitSuffix(raw)
		name, ok := layerSegment(raw)
		if !ok || f == formatNone || strings.Contains(raw, "/") {
			return route{}, false
		}
		return route{kindEstimate, map[string]handlerFunc{http.MethodPost: h.tasks.estimate(name, f)}}, true
	}
	raw, ok := strings.CutPrefix(path, "/rest/seed/")
	if !ok || raw == "" || strings.Contains(raw, "/") {
		return route{}, false
	}
	raw, f := splitSuffix(raw)
	name, ok := layerSegment(raw)
	if !ok {
		return route{}, false
	}
	if f == formatNone {
		return route{kindLayerForm, map[string]handlerFunc{http.MethodPost: h.tasks.postLayer(name)}}, true
	}
	return route{kindLayerTasks, map[string]handlerFunc{http.MethodGet: h.tasks.listLayer(name, f), http.MethodPost: h.tasks.postSeed(name, f)}}, true
}
