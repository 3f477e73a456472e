package rest

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
)

// RoutedMethods routes a request to path as the handler of a program with
// every optional route (a configuration store, failures) does, and returns
// the pattern of the route's row in the authorization table and its
// methods, with the role each needs ("" for a method the table does not
// list); ok is false for no route, routes of several rows, or a row
// without a pattern.
func RoutedMethods(path string) (pattern string, methods map[string]string, ok bool) {
	type stubEditor struct{ LayerEditor }
	type stubFailures struct{ FailureLister }
	h := New(Services{Editor: stubEditor{}}, Options{Failures: stubFailures{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	kind := routeKind(-1)
	methods = map[string]string{}
	for _, m := range matrixMethods {
		rt, _, found := h.router.lookup(httptest.NewRequest(m, path, nil))
		if !found {
			continue
		}
		if kind >= 0 && rt.kind != kind {
			return "", nil, false
		}
		kind = rt.kind
		methods[m] = ""
		if p, listed := access[rt.kind].methods[m]; listed {
			methods[m] = p.need.String()
		}
	}
	if kind < 0 || kind >= numKinds || access[kind].path == "" {
		return "", nil, false
	}
	return access[kind].path, methods, true
}

// TablePatterns lists the patterns of every kind of route, "" for a kind
// without a row in the table.
func TablePatterns() []string {
	var out []string
	for k := range numKinds {
		out = append(out, access[k].path)
	}
	return slices.Clip(out)
}
