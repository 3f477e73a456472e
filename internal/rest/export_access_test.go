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
// list); ok is false for no route or a route whose kind has no row.
func RoutedMethods(path string) (pattern string, methods map[string]string, ok bool) {
	type stubEditor struct{ LayerEditor }
	type stubFailures struct{ FailureLister }
	h := New(Services{Editor: stubEditor{}}, Options{Failures: stubFailures{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	rt, found := h.route(httptest.NewRequest("GET", path, nil))
	if !found || rt.kind < 0 || rt.kind >= numKinds || access[rt.kind].path == "" {
		return "", nil, false
	}
	methods = map[string]string{}
	for m := range rt.methods {
		methods[m] = ""
		if p, listed := access[rt.kind].methods[m]; listed {
			methods[m] = p.need.String()
		}
	}
	return access[rt.kind].path, methods, true
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
