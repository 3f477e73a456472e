// Package metrics defines tilecache's metrics once and exports them two
// ways: in Prometheus text format at /metrics for `tilecache serve`
// (Prometheus, the official client library), and as CloudWatch Embedded
// Metric Format log lines written at the end of each Lambda invocation
// (EMF).
//
// Code that counts calls a metric's Add or Observe with its context; the
// exporters installed in the Registry that context carries (NewContext)
// receive the value. Each program owns its registry, so two programs in one
// process (tests) count apart. With no registry in the context, or none
// installed in it, recording costs a lookup and a branch.
package metrics

import (
	"context"
	"sync"
	"sync/atomic"
)

// Kind is how a metric accumulates.
type Kind int

const (
	// Counter adds up (Add).
	Counter Kind = iota
	// Distribution records each value (Observe): a Prometheus histogram,
	// an EMF list of values (CloudWatch computes percentiles).
	Distribution
)

// Metric is one metric's definition.
type Metric struct {
	Name    string   // Prometheus name, e.g. tilecache_tiles_stored_total
	EMFName string   // CloudWatch name, e.g. TilesStored
	Unit    string   // CloudWatch unit: Count, Seconds, Bytes
	Help    string   // one line
	Kind    Kind     //
	Labels  []string // label names; also the EMF dimensions
	Buckets []float64
}

// Every metric tilecache records.
var (
	TilesStored = &Metric{Name: "tilecache_tiles_stored_total", EMFName: "TilesStored", Unit: "Count", Kind: Counter,
		Help: "Tiles written to the tile store by seeds, reseeds and renders on miss.", Labels: []string{"layer"}}
	TilesSkipped = &Metric{Name: "tilecache_tiles_skipped_total", EMFName: "TilesSkipped", Unit: "Count", Kind: Counter,
		Help: "Tiles a seed did not render because they were stored already, or blank tiles the layer does not store.", Labels: []string{"layer"}}
	TilesUnchanged = &Metric{Name: "tilecache_tiles_unchanged_total", EMFName: "TilesUnchanged", Unit: "Count", Kind: Counter,
		Help: "Tiles a reseed (or a render on miss) rendered exactly as they were stored, and so did not store again.", Labels: []string{"layer"}}
	TilesFailed = &Metric{Name: "tilecache_tiles_failed_total", EMFName: "TilesFailed", Unit: "Count", Kind: Counter,
		Help: "Tiles of metatiles that failed after their retries (tile failures).", Labels: []string{"layer"}}
	TilesDeleted = &Metric{Name: "tilecache_tiles_deleted_total", EMFName: "TilesDeleted", Unit: "Count", Kind: Counter,
		Help: "Tile positions deleted by truncate lanes.", Labels: []string{"layer"}}
	MetatilesRendered = &Metric{Name: "tilecache_metatiles_rendered_total", EMFName: "MetatilesRendered", Unit: "Count", Kind: Counter,
		Help: "Metatiles rendered by the layer's source (seeding and render on miss).", Labels: []string{"layer", "by"}}
	UpstreamSeconds = &Metric{Name: "tilecache_upstream_request_seconds", EMFName: "UpstreamLatency", Unit: "Seconds", Kind: Distribution,
		Help: "Duration of each request to a layer's upstream (WMS or tile service), answer read.", Labels: []string{"layer"},
		Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}}
	UpstreamErrors = &Metric{Name: "tilecache_upstream_errors_total", EMFName: "UpstreamErrors", Unit: "Count", Kind: Counter,
		Help: "Requests to a layer's upstream that failed (connection, timeout, HTTP error, exception, refused answer).", Labels: []string{"layer"}}
	StoreErrors = &Metric{Name: "tilecache_store_errors_total", EMFName: "StoreErrors", Unit: "Count", Kind: Counter,
		Help: "Tile store (S3 or directory) requests that failed.", Labels: []string{"op"}}
	LaneLag = &Metric{Name: "tilecache_lane_lag_seconds", EMFName: "LaneLag", Unit: "Seconds", Kind: Distribution,
		Help: "Time a lane message waited in the queue before a worker took it.", Labels: nil,
		Buckets: []float64{0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900}}
	Misses = &Metric{Name: "tilecache_misses_total", EMFName: "Misses", Unit: "Count", Kind: Counter,
		Help: "Renders on miss by how they were answered (rendered, stored, remembered_blank, remembered_failure, failed, busy).", Labels: []string{"layer", "outcome"}}
	CleanUps = &Metric{Name: "tilecache_quota_cleanups_total", EMFName: "QuotaCleanUps", Unit: "Count", Kind: Counter,
		Help: "Disk-quota clean-ups by outcome (done, over_quota, failed).", Labels: []string{"outcome"}}
	CleanUpTiles = &Metric{Name: "tilecache_quota_cleanup_tiles_total", EMFName: "QuotaCleanUpTiles", Unit: "Count", Kind: Counter,
		Help: "Tiles deleted by disk-quota clean-ups.", Labels: nil}
	AWSThrottled = &Metric{Name: "tilecache_throttled_total", EMFName: "AwsThrottled", Unit: "Count", Kind: Counter,
		Help:   "Attempts of requests to AWS answered with throttling (S3 503 SlowDown, DynamoDB ProvisionedThroughputExceeded or ThrottlingException, SQS RequestThrottled, HTTP 429, …), retried or not, by service (s3, dynamodb, sqs, cloudfront).",
		Labels: []string{"service"}}
	AccessLogReads = &Metric{Name: "tilecache_access_log_reads_total", EMFName: "AccessLogReads", Unit: "Count", Kind: Counter,
		Help:   "Successful reads (GET or HEAD answered 2xx or 304) in the access logs ingested, by outcome: kept (a tile's, counted in the disk quota), not_tile (no tile's key or edge path), unknown_layer.",
		Labels: []string{"outcome"}}
	AccessLogsNoneKept = &Metric{Name: "tilecache_access_logs_none_kept_total", EMFName: "AccessLogsNoneKept", Unit: "Count", Kind: Counter,
		Help: "Access-log objects holding successful reads of which none was a tile's (a wrong origin path or path prefix leaves every read uncounted).", Labels: nil}
	AWSRetries = &Metric{Name: "tilecache_aws_retries_total", EMFName: "AwsRetries", Unit: "Count", Kind: Counter,
		Help:   "Attempts of requests to AWS made again after a failed attempt (the clients' retries), by service (s3, dynamodb, sqs, cloudfront).",
		Labels: []string{"service"}}
)

// All lists every metric, for exporters that declare them up front.
var All = []*Metric{TilesStored, TilesSkipped, TilesUnchanged, TilesFailed, TilesDeleted, MetatilesRendered, UpstreamSeconds, UpstreamErrors,
	StoreErrors, LaneLag, Misses, CleanUps, CleanUpTiles, AWSThrottled, AWSRetries, AccessLogReads, AccessLogsNoneKept}

// Exporter receives recorded values.
type Exporter interface {
	Record(m *Metric, v float64, labels []string)
}

// Registry is the set of exporters one program records to. The zero value
// records nothing until an exporter is installed.
type Registry struct {
	mu        sync.Mutex
	exporters atomic.Pointer[[]Exporter]
}

// Install adds an exporter to the registry; the returned function removes
// it.
func (r *Registry) Install(e Exporter) (remove func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var next []Exporter
	if cur := r.exporters.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, e)
	r.exporters.Store(&next)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		var next []Exporter
		for _, x := range *r.exporters.Load() {
			if x != e {
				next = append(next, x)
			}
		}
		r.exporters.Store(&next)
	}
}

func (r *Registry) record(m *Metric, v float64, labels []string) {
	if r == nil {
		return
	}
	es := r.exporters.Load()
	if es == nil {
		return
	}
	for _, e := range *es {
		e.Record(m, v, labels)
	}
}

type registryKey struct{}

// NewContext returns ctx carrying r: what is recorded with the returned
// context (and contexts made from it) reaches r's exporters.
func NewContext(ctx context.Context, r *Registry) context.Context {
	return context.WithValue(ctx, registryKey{}, r)
}

// FromContext returns the registry ctx carries, or nil.
func FromContext(ctx context.Context) *Registry {
	r, _ := ctx.Value(registryKey{}).(*Registry)
	return r
}

// Add adds v to a counter of the registry ctx carries; labels are the
// values of m.Labels, in order.
func (m *Metric) Add(ctx context.Context, v float64, labels ...string) {
	if v != 0 {
		FromContext(ctx).record(m, v, labels)
	}
}

// Observe records one value of a distribution in the registry ctx carries.
func (m *Metric) Observe(ctx context.Context, v float64, labels ...string) {
	FromContext(ctx).record(m, v, labels)
}
