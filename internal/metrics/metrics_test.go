package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tilecache/internal/metrics"
)

// TestExportersAgree records the same values through both exporters and
// reads them back the way their consumers do: a Prometheus text parser
// over a scrape of the handler, and JSON decoding of the EMF lines.
func TestExportersAgree(t *testing.T) {
	prom := metrics.NewPrometheus()
	emf := metrics.NewEMF("tilecache", map[string]string{"Function": "worker"})
	var reg metrics.Registry
	defer reg.Install(prom)()
	defer reg.Install(emf)()
	ctx := metrics.NewContext(t.Context(), &reg)

	metrics.TilesStored.Add(ctx, 16, "roads")
	metrics.TilesStored.Add(ctx, 4, "roads")
	metrics.TilesStored.Add(ctx, 2, "rivers")
	metrics.TilesStored.Add(ctx, 1, "too", "many") // wrong label count: dropped
	metrics.UpstreamSeconds.Observe(ctx, 0.2, "roads")
	metrics.UpstreamSeconds.Observe(ctx, 0.4, "roads")
	metrics.LaneLag.Observe(ctx, 3)

	// Prometheus.
	rec := httptest.NewRecorder()
	prom.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse the scrape: %v\n%s", err, rec.Body.String())
	}
	stored := map[string]float64{}
	for _, m := range families["tilecache_tiles_stored_total"].GetMetric() {
		stored[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	if stored["roads"] != 20 || stored["rivers"] != 2 || len(stored) != 2 {
		t.Errorf("scraped tiles stored %v, want roads 20, rivers 2", stored)
	}
	h := families["tilecache_upstream_request_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() < 0.599 || h.GetSampleSum() > 0.601 {
		t.Errorf("scraped upstream histogram: %d samples, sum %v; want 2, 0.6", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, m := range metrics.All {
		if families[m.Name] == nil && m.Labels == nil && m.Kind == metrics.Counter {
			t.Errorf("%s is not declared in the scrape", m.Name)
		}
	}
	if families["go_goroutines"] == nil || families["process_resident_memory_bytes"] == nil {
		t.Errorf("the Go runtime and process collectors are missing")
	}

	// EMF.
	var buf bytes.Buffer
	at := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	if err := emf.Flush(&buf, at); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	got := map[string]map[string]any{}
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("EMF line is not JSON: %v: %s", err, l)
		}
		aws := rec["_aws"].(map[string]any)
		if aws["Timestamp"] != float64(at.UnixMilli()) {
			t.Errorf("Timestamp %v, want %d", aws["Timestamp"], at.UnixMilli())
		}
		cwm := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
		name := cwm["Metrics"].([]any)[0].(map[string]any)["Name"].(string)
		if cwm["Namespace"] != "tilecache" || rec["Function"] != "worker" {
			t.Errorf("%s: namespace %v, function %v", name, cwm["Namespace"], rec["Function"])
		}
		for _, d := range cwm["Dimensions"].([]any)[0].([]any) { // every dimension has its value on the line
			if _, ok := rec[d.(string)]; !ok {
				t.Errorf("%s: dimension %s has no value: %s", name, d, l)
			}
		}
		key := name
		if layer, ok := rec["layer"].(string); ok {
			key += "/" + layer
		}
		got[key] = rec
	}
	if len(lines) != 4 {
		t.Errorf("got %d EMF lines, want 4 (stored × 2 layers, upstream latency, lane lag):\n%s", len(lines), buf.String())
	}
	if got["TilesStored/roads"]["TilesStored"] != 20.0 || got["TilesStored/rivers"]["TilesStored"] != 2.0 {
		t.Errorf("EMF tiles stored: %v", got)
	}
	if v, _ := got["UpstreamLatency/roads"]["UpstreamLatency"].([]any); len(v) != 2 || v[0] != 0.2 || v[1] != 0.4 {
		t.Errorf("EMF upstream latency values: %v, want [0.2 0.4]", got["UpstreamLatency/roads"])
	}
	if got["LaneLag"]["LaneLag"] == nil {
		t.Errorf("EMF lane lag missing")
	}
	// Flushed: the next invocation starts empty.
	buf.Reset()
	emf.Flush(&buf, at)
	if buf.Len() != 0 {
		t.Errorf("a second Flush wrote %q, want nothing", buf.String())
	}
}

// counts is an exporter summing a counter's values by label values.
type counts struct {
	mu  sync.Mutex
	sum map[string]float64
}

func (c *counts) Record(m *metrics.Metric, v float64, labels []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sum[m.Name+"/"+strings.Join(labels, ",")] += v
}

func (c *counts) get(key string) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sum[key]
}

// TestRegistriesApart: what is recorded reaches only the registry its
// context carries (two programs in one process count apart), contexts made
// from it included; without a registry, or after its exporter is removed,
// nothing is recorded.
func TestRegistriesApart(t *testing.T) {
	var regA, regB metrics.Registry
	a, b := &counts{sum: map[string]float64{}}, &counts{sum: map[string]float64{}}
	removeA := regA.Install(a)
	defer regB.Install(b)()
	ctxA := metrics.NewContext(t.Context(), &regA)
	ctxB := metrics.NewContext(t.Context(), &regB)
	child, cancel := context.WithCancel(ctxA)
	defer cancel()

	metrics.TilesStored.Add(ctxA, 3, "roads")
	metrics.TilesStored.Add(child, 2, "roads")
	metrics.TilesStored.Add(ctxB, 7, "roads")
	metrics.TilesStored.Add(t.Context(), 100, "roads") // no registry: dropped
	if got := a.get("tilecache_tiles_stored_total/roads"); got != 5 {
		t.Errorf("registry A counted %v, want 5 (its context and a child of it)", got)
	}
	if got := b.get("tilecache_tiles_stored_total/roads"); got != 7 {
		t.Errorf("registry B counted %v, want 7", got)
	}
	if metrics.FromContext(ctxB) != &regB || metrics.FromContext(t.Context()) != nil {
		t.Errorf("FromContext does not return the registry the context carries")
	}
	removeA()
	metrics.TilesStored.Add(ctxA, 1, "roads")
	if got := a.get("tilecache_tiles_stored_total/roads"); got != 5 {
		t.Errorf("a removed exporter still counts: %v, want 5", got)
	}
}
