package rest

import (
	"log/slog"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/auth"
)

// everyRoute is a handler with every optional route: a configuration
// store (the layer and grid set writes) and a failure store.
func everyRoute() *Handler {
	type stubEditor struct{ LayerEditor }
	type stubFailures struct{ FailureLister }
	return New(Services{Editor: stubEditor{}}, Options{Failures: stubFailures{}}, slog.New(slog.DiscardHandler))
}

// expand lists the paths a row's pattern of the authorization table
// names: "/rest/seed/{layer}.{json,xml}" is "/rest/seed/{layer}.json" and
// "/rest/seed/{layer}.xml", "/rest/layers[.xml]" is "/rest/layers" and
// "/rest/layers.xml".
func expand(pattern string) []string {
	if m := regexp.MustCompile(`\.\{([a-z,]+)\}$`).FindStringSubmatchIndex(pattern); m != nil {
		var out []string
		for _, ext := range strings.Split(pattern[m[2]:m[3]], ",") {
			out = append(out, pattern[:m[0]]+"."+ext)
		}
		return out
	}
	if base, ok := strings.CutSuffix(pattern, "[.xml]"); ok {
		return []string{base, base + ".xml"}
	}
	return []string{pattern}
}

// TestEveryRouteHasItsRow: every registered route's method is listed in
// its row of the authorization table, and its path is one the row names;
// every row is some route's.
func TestEveryRouteHasItsRow(t *testing.T) {
	h := everyRoute()
	seen := map[routeKind]bool{}
	for _, rt := range h.routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		if _, listed := permissionOf(rt.kind, method); !listed {
			t.Errorf("%s: the row %s does not list %s", rt.pattern, access[rt.kind].path, method)
		}
		if !slices.Contains(expand(access[rt.kind].path), path) {
			t.Errorf("%s: registered in the row %s, which names %v", rt.pattern, access[rt.kind].path, expand(access[rt.kind].path))
		}
		seen[rt.kind] = true
	}
	for k := range numKinds {
		if !seen[k] {
			t.Errorf("the row %s is no route's", access[k].path)
		}
	}
}

// TestRouteWithoutRowIsNotServed: a route whose method its row does not
// list, or whose wildcard is not the last segment or has no rule, is
// refused at registration.
func TestRouteWithoutRowIsNotServed(t *testing.T) {
	h := everyRoute()
	for _, rt := range []route{
		{"PUT /rest/seed.json", kindTasks, nil, fixed(h.tasks.listAll)},
		{"GET /rest/seed", kindKillAll, nil, fixed(h.tasks.killAll)},
		{"GET /rest/seed.json", numKinds, nil, fixed(h.tasks.listAll)},
		{"GET /rest/{layer}/seed.json", kindLayerTasks, layerSegment, named(h.tasks.listLayer)},
		{"GET /rest/seed/{layer}.json", kindLayerTasks, nil, named(h.tasks.listLayer)},
		{"GET /rest/seed/x{layer}.json", kindLayerTasks, layerSegment, named(h.tasks.listLayer)},
	} {
		if _, err := newRouter([]route{rt}, nil); err == nil {
			t.Errorf("%s (row %d): registered", rt.pattern, rt.kind)
		}
	}
	if _, err := newRouter(h.routes(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestRefusalsAreTheContracts: the 404 and 405 answers are the
// contract's, where net/http's mux would answer its own: HEAD is no
// method of the contract (the mux adds it to Allow for GET), an unclean
// path is not found (the mux redirects), a path's suffix or its name
// decides whether it has a route before its method does, and a path
// names a route only as the route spells it (the mux matches literal
// segments percent-decoded).
func TestRefusalsAreTheContracts(t *testing.T) {
	bare := New(Services{}, Options{}, slog.New(slog.DiscardHandler))
	for _, tt := range []struct {
		h            *Handler
		method, path string
		status       int
		allow, body  string
	}{
		{bare, "HEAD", "/rest/seed.json", 405, "GET", "Method HEAD not allowed on /rest/seed.json"},
		{bare, "PATCH", "/rest/masstruncate", 405, "GET, POST", "Method PATCH not allowed on /rest/masstruncate"},
		{bare, "PUT", "/rest/seed/unknown.json", 405, "GET, POST", "Method PUT not allowed on /rest/seed/unknown.json"},
		{bare, "GET", "/rest/seed/demo:world", 405, "POST", "Method GET not allowed on /rest/seed/demo:world"},
		{bare, "GET", "/rest/seed/demo:world.png", 405, "POST", "Method GET not allowed on /rest/seed/demo:world.png"},
		{bare, "GET", "/rest//seed.json", 404, "", "Not found: /rest//seed.json"},
		{bare, "GET", "/rest/x/../seed.json", 404, "", "Not found: /rest/x/../seed.json"},
		{bare, "GET", "/rest/seed.json/", 404, "", "Not found: /rest/seed.json/"},
		{bare, "GET", "/rest/seed/", 404, "", "Not found: /rest/seed/"},
		{bare, "POST", "/rest/estimate/demo:world", 404, "", "Not found: /rest/estimate/demo:world"},
		{bare, "GET", "/rest/tokens/abc.xml", 404, "", "Not found: /rest/tokens/abc.xml"},
		{bare, "GET", "/rest/failures.json", 404, "", "Not found: /rest/failures.json"},
		{bare, "PUT", "/rest/layers/demo:world.xml", 405, "GET", "Method PUT not allowed on /rest/layers/demo:world.xml"},
		{bare, "PUT", "/rest/layers/from-capabilities.json", 405, "GET, POST", "Method PUT not allowed on /rest/layers/from-capabilities.json"},
		{bare, "GET", "/rest/layers/demo:world", 404, "", "Not found: /rest/layers/demo:world"},
		{bare, "GET", "/rest/l%61yers", 404, "", "Not found: /rest/layers"},
		{bare, "GET", "/rest/%73eed/demo:world.json", 404, "", "Not found: /rest/seed/demo:world.json"},
		{bare, "POST", "/rest/seed%2Ejson", 404, "", "Not found: /rest/seed.json"},
		{everyRoute(), "POST", "/rest/gridsets/a%2F..%2Fb.xml", 404, "", "Not found: /rest/gridsets/a/../b.xml"},
		{everyRoute(), "POST", "/rest/gridsets/demo.xml", 405, "GET, PUT, DELETE", "Method POST not allowed on /rest/gridsets/demo.xml"},
		{everyRoute(), "PATCH", "/rest/accounts/a+b.json", 405, "GET, PUT, DELETE", "Method PATCH not allowed on /rest/accounts/a+b.json"},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(tt.method, tt.path, nil)
		tt.h.ServeHTTP(rec, req.WithContext(auth.WithPrincipal(req.Context(), auth.Principal{Name: "admin", Role: auth.Admin})))
		if rec.Code != tt.status || rec.Header().Get("Allow") != tt.allow || rec.Body.String() != tt.body+"\n" {
			t.Errorf("%s %s: got %d, Allow %q, %q; want %d, Allow %q, %q", tt.method, tt.path,
				rec.Code, rec.Header().Get("Allow"), rec.Body.String(), tt.status, tt.allow, tt.body+"\n")
		}
	}
}

// TestRoutesGetTheirNames: the name a route's handler gets is the last
// segment without its suffix, decoded by the route's rule ("+" is a space
// in a layer's name, itself in an account's), and the layer a
// layer-limited principal is checked against is that name.
func TestRoutesGetTheirNames(t *testing.T) {
	h := everyRoute()
	for _, tt := range []struct {
		method, path string
		kind         routeKind
		name, layer  string
		f            format
	}{
		{"POST", "/rest/seed/a+b%2Bc.json", kindLayerTasks, "a b+c", "a b+c", formatJSON},
		{"POST", "/rest/seed/a%2Fb.png", kindLayerForm, "a/b.png", "a/b.png", formatNone},
		{"GET", "/rest/seed/topp:states.xml", kindLayerTasks, "topp:states", "topp:states", formatXML},
		{"POST", "/rest/estimate/demo:world.xml", kindEstimate, "demo:world", "demo:world", formatXML},
		{"GET", "/rest/diskquota/pages/demo:world.json", kindQuotaPages, "demo:world", "demo:world", formatJSON},
		{"PUT", "/rest/layers/demo%3Aworld.xml", kindLayer, "demo:world", "demo:world", formatXML},
		{"PUT", "/rest/gridsets/My+Grid.xml", kindGridSet, "My Grid", "", formatXML},
		{"GET", "/rest/accounts/a+b.json", kindAccount, "a+b", "", formatJSON},
		{"DELETE", "/rest/tokens/0123.json", kindToken, "0123", "", formatJSON},
		{"GET", "/rest/diskquota.xml", kindQuota, "", "", formatXML},
		{"POST", "/rest/layers/from-capabilities.json", kindFromCapabilities, "", "", formatJSON},
	} {
		rt, tg, ok := h.router.lookup(httptest.NewRequest(tt.method, tt.path, nil))
		if !ok {
			t.Errorf("%s %s: no route", tt.method, tt.path)
			continue
		}
		if rt.kind != tt.kind || tg.name != tt.name || tg.format != tt.f || layerOf(rt.kind, tg.name) != tt.layer {
			t.Errorf("%s %s: got row %s, name %q, format %d, layer %q; want row %s, name %q, format %d, layer %q", tt.method, tt.path,
				access[rt.kind].path, tg.name, tg.format, layerOf(rt.kind, tg.name), access[tt.kind].path, tt.name, tt.f, tt.layer)
		}
	}
}
