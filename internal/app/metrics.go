package app

import (
	"context"

	"tilecache/internal/metrics"
)

// Each program (and log ingester) owns a metrics registry: its exporters
// (Prometheus while Run runs, EMF in a function) receive what its
// requests, workers and invocations record, and nothing another program in
// the same process records. The registry travels in the context: Run's,
// each invocation's and each request's (withMetrics).

// metricsContext returns ctx carrying the program's registry.
func (p *Program) metricsContext(ctx context.Context) context.Context {
	return metrics.NewContext(ctx, p.Metrics)
}
