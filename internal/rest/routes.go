package rest

// The routes of the interface (listed in server.go), served through an
// http.ServeMux on method-and-path patterns. ServeMux wildcards are whole
// path segments, so a route's last segment "{layer}.json" is registered
// as "{layer}" and its suffix is checked here (endpoint.pick), with the
// name decoded as the route says. The contract's 404 and 405 answers are
// this file's (refuse), not the mux's: the mux would add HEAD to Allow,
// write its own bodies and redirect unclean paths.

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// A target is what the last segment of a request's path names: the name
// (decoded by the route's rule; "" for a route without a wildcard), the
// name as sent, and the format its suffix asks for.
type target struct {
	name, raw string
	format    format
}

// route is one method of one path of the interface: its pattern ("GET
// /rest/seed/{layer}.json"), its row in the authorization table
// (access.go), how the wildcard segment decodes to a name (nil for a path
// without a wildcard), and the handler of a target.
type route struct {
	pattern string
	kind    routeKind
	decode  func(raw string) (string, bool)
	serve   func(target) handlerFunc
}

// fixed serves a route whose handler needs nothing of the path.
func fixed(fn handlerFunc) func(target) handlerFunc {
	return func(target) handlerFunc { return fn }
}

// formatted serves a route whose handler needs the path's format.
func formatted(fn func(format) handlerFunc) func(target) handlerFunc {
	return func(t target) handlerFunc { return fn(t.format) }
}

// named serves a route whose handler needs the name and the format.
func named(fn func(string, format) handlerFunc) func(target) handlerFunc {
	return func(t target) handlerFunc { return fn(t.name, t.format) }
}

// fileSegment decodes a layer or grid set name that is also one file
// name: a layer segment without a slash or backslash once decoded
// ("a%2F..%2Fb" is not one).
func fileSegment(raw string) (string, bool) {
	name, ok := layerSegment(raw)
	return name, ok && !strings.ContainsAny(name, "/\\")
}

// pathSegment decodes a name by percent-decoding alone (an account,
// schedule or token id: "+" is itself).
func pathSegment(raw string) (string, bool) {
	name, err := url.PathUnescape(raw)
	return name, err == nil && name != ""
}

// endpoint is what the mux serves for one method and path pattern: the
// routes whose patterns differ only by the suffix of their last segment,
// by suffix (formatNone for none), each with its permission.
type endpoint struct {
	rt *router
	// literal is the path as the request must spell it: the whole path of
	// a pattern without a wildcard, else the part before the wildcard
	// segment. The mux matches literal segments percent-decoded
	// ("/rest/l%61yers" is /rest/layers), the contract does not.
	literal   string
	wildcard  bool
	bySuffix  map[format]*route
	permitted map[format]permission
}

// muxPattern is a route's pattern as the mux takes it, and the format its
// last segment ends with: "GET /rest/seed/{layer}.json" is "GET
// /rest/seed/{layer}" and JSON; literal is the path (without a wildcard)
// or the part before the wildcard ("/rest/seed/"), and wildcard says which;
// ok is false for a pattern this package cannot serve (a wildcard before
// the last segment).
func muxPattern(pattern string) (mux string, f format, literal string, wildcard, ok bool) {
	method, p, _ := strings.Cut(pattern, " ")
	dir, last := path.Split(p)
	if method == "" || strings.Contains(dir, "{") {
		return "", formatNone, "", false, false
	}
	name, f := splitSuffix(last)
	if !strings.HasPrefix(last, "{") {
		return pattern, f, p, false, !strings.Contains(last, "{")
	}
	return method + " " + dir + name, f, dir, true, strings.HasSuffix(name, "}") && strings.Count(name, "{") == 1
}

// pick is the route of a request the mux matched to e, and its target; ok
// is false when the path's last segment has no route here (another
// ending, or a name that does not decode).
func (e *endpoint) pick(r *http.Request) (*route, target, bool) {
	esc := r.URL.EscapedPath()
	last, ok := strings.CutPrefix(esc, e.literal)
	if !ok || (!e.wildcard && last != "") {
		return nil, target{}, false
	}
	if !e.wildcard {
		last = path.Base(esc)
	}
	raw, f := splitSuffix(last)
	rt, ok := e.bySuffix[f]
	if !ok {
		return nil, target{}, false
	}
	t := target{raw: raw, format: f}
	if e.wildcard {
		if t.name, ok = rt.decode(raw); !ok {
			return nil, target{}, false
		}
	}
	return rt, t, true
}

// ServeHTTP serves a request the mux matched to e: authorized by the
// route's row of the table, then its handler.
func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, t, ok := e.pick(r)
	if !ok {
		e.rt.refuse(w, r)
		return
	}
	if !authorize(w, r, e.permitted[t.format], layerOf(rt.kind, t.name)) {
		return
	}
	if err := rt.serve(t)(w, r); err != nil {
		e.rt.fail(w, r, err)
	}
}

// router serves the routes of the interface: a request's method and path
// matched by a mux to an endpoint, else the contract's 404 or 405.
type router struct {
	mux *http.ServeMux
	// fail answers the error a route's handler returns.
	fail func(w http.ResponseWriter, r *http.Request, err error)
}

// newRouter registers routes, each with its permission from the
// authorization table: a route whose method its row does not list is an
// error, never served.
func newRouter(routes []route, fail func(http.ResponseWriter, *http.Request, error)) (*router, error) {
	rr := &router{mux: http.NewServeMux(), fail: fail}
	endpoints := map[string]*endpoint{}
	for i := range routes {
		rt := &routes[i]
		pattern, f, literal, wildcard, ok := muxPattern(rt.pattern)
		if !ok || wildcard != (rt.decode != nil) {
			return nil, fmt.Errorf("route %s: a wildcard may only be the whole last segment (and a suffix), with a rule to decode it", rt.pattern)
		}
		method, _, _ := strings.Cut(pattern, " ")
		perm, listed := permissionOf(rt.kind, method)
		if !listed {
			return nil, fmt.Errorf("route %s: its row (kind %d) of the authorization table does not list %s", rt.pattern, rt.kind, method)
		}
		e := endpoints[pattern]
		if e == nil {
			e = &endpoint{rt: rr, literal: literal, wildcard: wildcard, bySuffix: map[format]*route{}, permitted: map[format]permission{}}
			endpoints[pattern] = e
			rr.mux.Handle(pattern, e)
		}
		if _, dup := e.bySuffix[f]; dup {
			return nil, fmt.Errorf("route %s: listed twice", rt.pattern)
		}
		e.bySuffix[f], e.permitted[f] = rt, perm
	}
	return rr, nil
}

// ServeHTTP serves the route of r's method and path, or refuses it.
func (rr *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e, ok := rr.endpointOf(r); ok {
		e.ServeHTTP(w, r)
		return
	}
	rr.refuse(w, r)
}

// matrixMethods are the methods of the contract's matrix, in the order an
// Allow header lists them.
var matrixMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}

// endpointOf is the endpoint the mux matches r's method and path to. HEAD
// is no method of the contract (the mux would take it for GET), and the
// mux's own answers (404, 405, the redirect of an unclean path) are no
// endpoint.
func (rr *router) endpointOf(r *http.Request) (*endpoint, bool) {
	if r.Method == http.MethodHead {
		return nil, false
	}
	hd, _ := rr.mux.Handler(r)
	e, ok := hd.(*endpoint)
	return e, ok
}

// lookup is the route r's method and path name, if any.
func (rr *router) lookup(r *http.Request) (*route, target, bool) {
	e, ok := rr.endpointOf(r)
	if !ok {
		return nil, target{}, false
	}
	return e.pick(r)
}

// refuse answers a request no route serves: 405 with the methods the
// routes of its path answer (contract §3), or 404 when none does.
func (rr *router) refuse(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range matrixMethods {
		probe := new(http.Request)
		*probe = *r
		probe.Method = m
		if _, _, ok := rr.lookup(probe); ok {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		writeText(w, http.StatusNotFound, "Not found: "+r.URL.Path)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeText(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed on "+r.URL.Path)
}
