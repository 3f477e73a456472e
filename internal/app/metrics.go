package app

import (
	"context"
	"net/http"

	"tilecache/internal/metrics"
)

// Each program (and log ingester) owns a metrics registry: its exporters
// (Prometheus while Run runs, EMF in a function) receive what its
// requests, workers and invocations record, and nothing another program in
// the same process records. The registry travels in the context: Run's,
// each invocation's and each request's (withMetrics).

// withMetrics returns h with reg in each request's context; a request
// whose context carries reg already (the server's base context) is passed
// on as it is.
func withMetrics(reg *metrics.Registry, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if metrics.FromContext(r.Context()) != reg {
			r = r.WithContext(metrics.NewContext(r.Context(), reg))
		}
		h.ServeHTTP(w, r)
	})
}

// metricsContext returns ctx carrying the program's registry.
func (p *Program) metricsContext(ctx context.Context) context.Context {
	return metrics.NewContext(ctx, p.Metrics)
}
