package app_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tilecache/internal/app/apptest"
)

// scrape GETs /metrics and returns every sample as "name{k=v,…}" → value
// (histograms as name_count and name_sum).
func scrape(t *testing.T, a *apptest.App) map[string]float64 {
	t.Helper()
	res, err := http.Get(a.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[name+"_count{"+strings.Join(ls, ",")+"}"] = float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum{"+strings.Join(ls, ",")+"}"] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// TestMetricsEndpoint: /metrics (Prometheus text format, no credentials)
// counts what a seed did: its tiles stored, its metatiles rendered, the
// lag of its lane messages.
func TestMetricsEndpoint(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	before := scrape(t, a)
	rows := seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"threadCount":2}}`)
	waitFinished(t, a, ids(rows), 30*time.Second)
	var after map[string]float64
	waitFor(t, 5*time.Second, "the seed's metrics", func() bool {
		after = scrape(t, a)
		return after[`tilecache_tiles_stored_total{layer=demo:world}`]-before[`tilecache_tiles_stored_total{layer=demo:world}`] >= 42
	})
	delta := func(k string) float64 { return after[k] - before[k] }
	if d := delta(`tilecache_tiles_stored_total{layer=demo:world}`); d != 42 {
		t.Errorf("tiles stored grew by %v, want the 42 tiles of EPSG:4326 z0-2", d)
	}
	if d := delta(`tilecache_metatiles_rendered_total{by=seed,layer=demo:world}`); d != 4 {
		t.Errorf("metatiles rendered grew by %v, want 4 (4×4 metatiles: 1 at z0, 1 at z1, 2 at z2)", d)
	}
	if d := delta(`tilecache_lane_lag_seconds_count{}`); d < 2 {
		t.Errorf("lane lag observed %v times, want one per lane message (≥ 2)", d)
	}
	if _, ok := after[`process_resident_memory_bytes{}`]; !ok {
		t.Errorf("the process collector is missing")
	}
}
