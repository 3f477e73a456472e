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
	// router serves the routes (routes.go).
	router *router
}

// New returns the handler.
func New(svc Services, opts Options, log *slog.Logger) *Handler {
	h := &Handler{svc: svc, opts: opts, log: log,
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
	router, err := newRouter(h.routes(), h.writeError)
	if err != nil {
		panic("rest: " + err.Error()) // the route list and the table disagree: a mistake of this package
	}
	h.router = router
	return h
}

// ServeHTTP implements http.Handler: the route of the request's method
// and path (routes.go), else the contract's 404 or 405.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.router.ServeHTTP(w, r)
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

// routes lists every route the handler serves, grouped by resource.
func (h *Handler) routes() []route {
	ts, q, lr := h.tasks, h.quota, h.layersRes
	rs := []route{
		// The seed tasks (handle_seed.go, handle_tilelist.go,
		// handle_masstruncate.go).
		{"GET /rest/seed.json", kindTasks, nil, fixed(ts.listAll)},
		{"POST /rest/seed", kindKillAll, nil, fixed(ts.killAll)},
		{"GET /rest/seed/{layer}.json", kindLayerTasks, layerSegment, named(ts.listLayer)},
		{"GET /rest/seed/{layer}.xml", kindLayerTasks, layerSegment, named(ts.listLayer)},
		{"POST /rest/seed/{layer}.json", kindLayerTasks, layerSegment, named(ts.postSeed)},
		{"POST /rest/seed/{layer}.xml", kindLayerTasks, layerSegment, named(ts.postSeed)},
		// Any other ending is part of the layer's name.
		{"POST /rest/seed/{layer}", kindLayerForm, layerSegment, func(t target) handlerFunc { return ts.postLayer(t.name) }},
		// An extension of this project: a dry run of a seed request
		// (GeoWebCache has no such path and answers 404).
		{"POST /rest/estimate/{layer}.json", kindEstimate, layerSegment, named(ts.estimate)},
		{"POST /rest/estimate/{layer}.xml", kindEstimate, layerSegment, named(ts.estimate)},
		// An extension of this project: an export of stored tiles to an
		// archive, run as a task (handle_export.go).
		{"POST /rest/export/{layer}.json", kindExport, layerSegment, named(ts.export)},
		{"POST /rest/export/{layer}.xml", kindExport, layerSegment, named(ts.export)},
		// The archives of the layer's exports, and one downloaded
		// (?archive=; handle_exportfiles.go).
		{"GET /rest/export/{layer}.json", kindExport, layerSegment, named(ts.exports)},
		{"GET /rest/masstruncate", kindMassTruncate, nil, fixed(ts.massTruncateTypes)},
		{"POST /rest/masstruncate", kindMassTruncate, nil, fixed(ts.massTruncate)},

		// The disk quota (handle_diskquota.go, handle_usage.go,
		// handle_quotapages.go, handle_access.go).
		{"GET /rest/diskquota.xml", kindQuota, nil, formatted(q.getConfig)},
		{"GET /rest/diskquota.json", kindQuota, nil, formatted(q.getConfig)},
		{"PUT /rest/diskquota.xml", kindQuota, nil, formatted(q.putConfig)},
		{"PUT /rest/diskquota.json", kindQuota, nil, formatted(q.putConfig)},
		{"GET /rest/diskquota/usage.xml", kindUsage, nil, formatted(q.getUsage)},
		{"GET /rest/diskquota/usage.json", kindUsage, nil, formatted(q.getUsage)},
		// Extensions of this project: the usage pages of a tile set's
		// level, and the tile reads counted from access logs (GeoWebCache
		// has no such paths).
		{"GET /rest/diskquota/pages/{layer}.json", kindQuotaPages, layerSegment, func(t target) handlerFunc { return q.pages(t.name) }},
		{"POST /rest/diskquota/access.json", kindAccessLog, nil, fixed(q.postAccess)},

		// The layers and grid sets (handle_layers.go; the writes, below,
		// only with a configuration store). The JSON documents are refused:
		// XML only.
		{"GET /rest/layers", kindLayers, nil, fixed(lr.listLayers)},
		{"GET /rest/layers.xml", kindLayers, nil, fixed(lr.listLayers)},
		{"DELETE /rest/layers", kindLayers, nil, fixed(deleteWhole("layer"))},
		{"DELETE /rest/layers.xml", kindLayers, nil, fixed(deleteWhole("layer"))},
		{"GET /rest/layers/{layer}.xml", kindLayer, fileSegment, func(t target) handlerFunc { return lr.getLayer(t.name) }},
		{"GET /rest/layers/{layer}.json", kindLayer, fileSegment, refuseJSON("/rest/layers/")},
		// An extension of this project: POST proposes layers from a WMS's
		// capabilities (handle_fromcaps.go); its other methods are a
		// layer's JSON document's, refused.
		{"GET " + fromCapabilitiesPath, kindFromCapabilities, nil, refuseJSON("/rest/layers/")},
		{"POST " + fromCapabilitiesPath, kindFromCapabilities, nil, fixed(lr.fromCapabilities)},
		{"GET /rest/gridsets", kindGridSets, nil, fixed(lr.listGridSets)},
		{"GET /rest/gridsets.xml", kindGridSets, nil, fixed(lr.listGridSets)},
		{"DELETE /rest/gridsets", kindGridSets, nil, fixed(deleteWhole("gridset"))},
		{"DELETE /rest/gridsets.xml", kindGridSets, nil, fixed(deleteWhole("gridset"))},
		{"GET /rest/gridsets/{gridset}.xml", kindGridSet, fileSegment, func(t target) handlerFunc { return lr.getGridSet(t.name) }},
		{"GET /rest/gridsets/{gridset}.json", kindGridSet, fileSegment, refuseJSON("/rest/gridsets/")},

		// Extensions of this project: a console's first page in one answer
		// (handle_overview.go), the request's account, role and what it
		// may do (handle_whoami.go).
		{"GET /rest/overview.json", kindOverview, nil, fixed(h.overview.get)},
		{"GET /rest/whoami.json", kindWhoAmI, nil, fixed(whoAmI)},

		// Extensions of this project: the schedules of saved seed requests
		// (handle_schedules.go), the API tokens (handle_tokens.go) and the
		// accounts added at run time (handle_accounts.go).
		{"GET /rest/schedules.json", kindSchedules, nil, fixed(h.schedules.list)},
		{"POST /rest/schedules.json", kindSchedules, nil, fixed(h.schedules.create)},
		{"GET /rest/schedules/{name}.json", kindSchedule, pathSegment, func(t target) handlerFunc { return h.schedules.get(t.name) }},
		{"DELETE /rest/schedules/{name}.json", kindSchedule, pathSegment, func(t target) handlerFunc { return h.schedules.remove(t.name) }},
		{"GET /rest/tokens.json", kindTokens, nil, fixed(h.tokens.list)},
		{"POST /rest/tokens.json", kindTokens, nil, fixed(h.tokens.create)},
		{"DELETE /rest/tokens/{id}.json", kindToken, pathSegment, func(t target) handlerFunc { return h.tokens.revoke(t.name) }},
		{"GET /rest/accounts.json", kindAccounts, nil, fixed(h.accounts.list)},
		{"POST /rest/accounts.json", kindAccounts, nil, fixed(h.accounts.create)},
		{"GET /rest/accounts/{name}.json", kindAccount, pathSegment, func(t target) handlerFunc { return h.accounts.get(t.name) }},
		{"PUT /rest/accounts/{name}.json", kindAccount, pathSegment, func(t target) handlerFunc { return h.accounts.change(t.name) }},
		{"DELETE /rest/accounts/{name}.json", kindAccount, pathSegment, func(t target) handlerFunc { return h.accounts.remove(t.name) }},
	}
	// An extension of this project: an archive imported into a layer as
	// a task (handle_import.go).
	rs = append(rs, route{"POST /rest/import/{layer}.json", kindImport, layerSegment, named(importsResource{imports: h.svc.Imports}.post)})
	if h.failures.failures != nil {
		// An extension of this project: why tasks failed
		// (handle_failures.go); 404 without a failure store.
		rs = append(rs, route{"GET /rest/failures.json", kindFailures, nil, fixed(h.failures.get)})
	}
	if lr.editor != nil {
		// Without a configuration store the layer file is all there is:
		// PUT, POST and DELETE of a layer or grid set answer 405.
		rs = append(rs,
			route{"PUT /rest/layers/{layer}.xml", kindLayer, fileSegment, func(t target) handlerFunc { return lr.putLayer(t.name, true) }},
			route{"POST /rest/layers/{layer}.xml", kindLayer, fileSegment, func(t target) handlerFunc { return lr.putLayer(t.name, false) }},
			route{"DELETE /rest/layers/{layer}.xml", kindLayer, fileSegment, func(t target) handlerFunc { return lr.deleteLayer(t.name) }},
			route{"PUT /rest/layers/{layer}.json", kindLayer, fileSegment, refuseJSON("/rest/layers/")},
			route{"POST /rest/layers/{layer}.json", kindLayer, fileSegment, refuseJSON("/rest/layers/")},
			route{"DELETE /rest/layers/{layer}.json", kindLayer, fileSegment, refuseJSON("/rest/layers/")},
			route{"PUT " + fromCapabilitiesPath, kindFromCapabilities, nil, refuseJSON("/rest/layers/")},
			route{"DELETE " + fromCapabilitiesPath, kindFromCapabilities, nil, refuseJSON("/rest/layers/")},
			route{"PUT /rest/gridsets/{gridset}.xml", kindGridSet, fileSegment, func(t target) handlerFunc { return lr.putGridSet(t.name) }},
			route{"DELETE /rest/gridsets/{gridset}.xml", kindGridSet, fileSegment, func(t target) handlerFunc { return lr.deleteGridSet(t.name) }},
			route{"PUT /rest/gridsets/{gridset}.json", kindGridSet, fileSegment, refuseJSON("/rest/gridsets/")},
			route{"DELETE /rest/gridsets/{gridset}.json", kindGridSet, fileSegment, refuseJSON("/rest/gridsets/")},
		)
	}
	return rs
}
