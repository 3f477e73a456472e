package rest

import (
	"net/http"
	"net/url"
	"strings"
)

// route is one resource of the contract's method matrix (§3): its kind
// (the row of the authorization table, access.go) and its methods.
type route struct {
	kind    routeKind
	methods map[string]handlerFunc
}

// allow lists the route's methods for an Allow header, in matrix order.
func (rt route) allow() string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if _, ok := rt.methods[m]; ok {
			out = append(out, m)
		}
	}
	return strings.Join(out, ", ")
}

// format is a path suffix: the wire format of a request or response body.
type format int

const (
	formatNone format = iota
	formatJSON
	formatXML
)

// splitSuffix splits "name.json" / "name.xml" into name and format.
func splitSuffix(s string) (string, format) {
	switch {
	case strings.HasSuffix(s, ".json"):
		return strings.TrimSuffix(s, ".json"), formatJSON
	case strings.HasSuffix(s, ".xml"):
		return strings.TrimSuffix(s, ".xml"), formatXML
	}
	return s, formatNone
}

// layerSegment decodes a layer path segment: "+" is a space (GeoWebCache
// behaviour), then percent-decoding.
func layerSegment(raw string) (string, bool) {
	name, err := url.PathUnescape(strings.ReplaceAll(raw, "+", "%20"))
	return name, err == nil && name != ""
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
		return route{kindOverview, map[string]handlerFunc{http.MethodGet: h.overview}}, true
	case "/rest/failures.json":
		// An extension of this project: why tasks failed
		// (handle_failures.go).
		if h.opts.Failures == nil {
			return route{}, false
		}
		return route{kindFailures, map[string]handlerFunc{http.MethodGet: h.failures}}, true
	case "/rest/whoami.json":
		// An extension of this project: the request's account, role and
		// what it may do (handle_whoami.go).
		return route{kindWhoAmI, map[string]handlerFunc{http.MethodGet: h.whoAmI}}, true
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
