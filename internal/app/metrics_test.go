package app_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// scrape GETs /metrics and returns every sample as "name{k=v,…}" → value
// (histograms as name_count and name_sum).
func scrape(t *testing.T, a *apptest.App) map[string]float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, a.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(apptest.User, apptest.Password)
	res, err := http.DefaultClient.Do(req)
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

// TestMetricsEndpoint: /metrics (Prometheus text format, an
// administrator's credentials) counts what a seed did: its tiles stored, its metatiles rendered, the
// lag of its lane messages.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{})
	before := scrape(t, a)
	rows := seedReq(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":2,"threadCount":2}}`)
	waitFinished(t, a, ids(rows), 30*time.Second)
	var after map[string]float64
	testenv.Eventually(t, 5*time.Second, "the seed's metrics", func() bool {
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

// TestEstimateMatchesSeed: the dry run's tile counts (in all and per
// level) equal what the same request then processes, for several requests;
// a refused request is refused alike; with a measured rate and stored
// tiles the estimate gives a time and bytes.
func TestEstimateMatchesSeed(t *testing.T) {
	t.Parallel()
	a := apptest.Start(t, apptest.Options{SeedThreads: 4})
	for _, c := range []struct{ layer, body string }{
		{"demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":4,"threadCount":3}}`},
		{"demo:world", `{"seedRequest":{"gridSetId":"EPSG:900913","zoomStart":2,"zoomStop":6,"threadCount":4,"bounds":{"coords":{"double":[-1000000,-2000000,3000000,4000000]}}}}`},
		{"topp:states", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":3,"zoomStop":7,"format":"image/png","threadCount":2}}`},
		{"demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":1,"zoomStop":3,"type":"truncate"}}`},
	} {
		res := a.Do(t, "POST", "/rest/estimate/"+c.layer+".json", c.body, "Content-Type", "application/json")
		if res.Status != 200 || res.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("estimate %s: %d %s", c.body, res.Status, res.Body)
		}
		var est struct {
			Tiles, Metatiles, S3Puts, DynamoDBWrites int64
			Tasks                                    int
			Levels                                   []struct {
				Zoom             int
				Tiles, Metatiles int64
			}
			CostUSD map[string]float64
		}
		if err := json.Unmarshal([]byte(res.Body), &est); err != nil {
			t.Fatal(err)
		}
		var levelTiles int64
		for _, l := range est.Levels {
			levelTiles += l.Tiles
		}
		rows := seedReq(t, a, c.layer, c.body)
		done := waitFinished(t, a, ids(rows), 60*time.Second)
		var processed int64
		for _, tk := range done {
			processed += tk.Done
		}
		if est.Tiles != sumTotals(rows) || est.Tiles != processed || levelTiles != est.Tiles || est.Tasks != len(rows) {
			t.Errorf("%s: estimate %d tiles (levels %d) in %d tasks; the seed had %d tasks of %d tiles and processed %d",
				c.body, est.Tiles, levelTiles, est.Tasks, len(rows), sumTotals(rows), processed)
		}
		if est.DynamoDBWrites <= 0 || est.CostUSD["total"] <= 0 {
			t.Errorf("%s: estimate without costs: %s", c.body, res.Body)
		}
	}
	// Now the layer has a measured rate and stored tiles.
	res := a.Do(t, "POST", "/rest/estimate/demo:world.json", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":5,"zoomStop":6}}`, "Content-Type", "application/json")
	var est struct {
		Seconds, TilesPerSecond float64
		Bytes, AvgTileBytes     int64
	}
	if err := json.Unmarshal([]byte(res.Body), &est); err != nil || est.Seconds <= 0 || est.TilesPerSecond <= 0 || est.Bytes <= 0 {
		t.Errorf("estimate after seeding: %s (%v); want a time and bytes", res.Body, err)
	}
	// Refused like a seed request, and nothing else is accepted there.
	if res := a.Do(t, "POST", "/rest/estimate/demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"tileFailureRetryCount":1000}}`, "Content-Type", "application/json"); res.Status != 400 || !strings.Contains(res.Body, "tileFailureRetryCount") {
		t.Errorf("estimate of a bad request: %d %s, want 400", res.Status, res.Body)
	}
	if res := a.Do(t, "POST", "/rest/estimate/nosuch.json", `{"seedRequest":{"zoomStart":0,"zoomStop":1}}`, "Content-Type", "application/json"); res.Status != 400 || !strings.Contains(res.Body, "nosuch") {
		t.Errorf("estimate of an unknown layer: %d %s, want 400 naming it", res.Status, res.Body)
	}
	if res := a.Do(t, "GET", "/rest/estimate/demo:world.json", ""); res.Status != 405 {
		t.Errorf("GET estimate: %d, want 405", res.Status)
	}
}
