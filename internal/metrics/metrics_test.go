package metrics_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
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
	defer metrics.Install(prom)()
	defer metrics.Install(emf)()

	metrics.TilesStored.Add(16, "roads")
	metrics.TilesStored.Add(4, "roads")
	metrics.TilesStored.Add(2, "rivers")
	metrics.TilesStored.Add(1, "too", "many") // wrong label count: dropped
	metrics.UpstreamSeconds.Observe(0.2, "roads")
	metrics.UpstreamSeconds.Observe(0.4, "roads")
	metrics.LaneLag.Observe(3)

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
