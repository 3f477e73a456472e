package rest_test

// Extensions of this project for a console: GET /rest/seed.json?requests=1
// (the task list folded by request, with what each asked and who asked,
// finished ones kept after they leave the status list) and GET
// /rest/diskquota/pages/{layer}.json?tileSets=1 (a layer's usage by tile
// set and level).

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

type requestsDoc struct {
	KeptSeconds int64 `json:"keptSeconds"`
	Requests    []struct {
		Job         int64             `json:"job"`
		Layer       string            `json:"layer"`
		Type        string            `json:"type"`
		GridSet     string            `json:"gridSet"`
		Format      string            `json:"format"`
		Parameters  map[string]string `json:"parameters"`
		ZoomStart   *int              `json:"zoomStart"`
		ZoomStop    *int              `json:"zoomStop"`
		Bounds      *[4]float64       `json:"bounds"`
		Extent      *[4]float64       `json:"extent"`
		SubmittedBy string            `json:"submittedBy"`
		Created     string            `json:"created"`
		Finished    *string           `json:"finished"`
		Status      string            `json:"status"`
		Done        int64             `json:"done"`
		Total       int64             `json:"total"`
		Lanes       int               `json:"lanes"`
		Tasks       []struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
			Killed bool   `json:"killed"`
			Done   int64  `json:"done"`
			Total  int64  `json:"total"`
		} `json:"tasks"`
	} `json:"requests"`
}

func getRequests(t testing.TB, a *apptest.App) requestsDoc {
	t.Helper()
	res := a.Do(t, "GET", "/rest/seed.json?requests=1", "")
	wantOK(t, res, ctJSON)
	var d requestsDoc
	if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
		t.Fatalf("requests %q: %v", res.Body, err)
	}
	return d
}

func TestSeedRequestsFolded(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 4})
	done := seedJSON(t, a, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"threadCount":2,"bounds":{"coords":{"double":[-90,-45,90,45]}}}}`)
	// The demo request ends before the kill of everything, which would
	// otherwise catch it running.
	testenv.Eventually(t, 20*time.Second, "the demo request to end", func() bool {
		for _, id := range ids(done) {
			if tk, err := a.Local.Tasks.Get(t.Context(), id); err != nil || tk.Status.Active() {
				return false
			}
		}
		return true
	})
	killed := seedJSON(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8,"threadCount":2}}`)
	killAll(t, a)
	// Gone from GeoWebCache's list (contract §5.4), still listed folded.
	testenv.Eventually(t, 12*time.Second, "the finished tasks to leave the status list", func() bool { return len(list(t, a, "/rest/seed.json")) == 0 })
	d := getRequests(t, a)
	if d.KeptSeconds != 3600 || len(d.Requests) != 2 {
		t.Fatalf("got %+v, want the two requests, finished ones asked for an hour back", d)
	}
	k, r := d.Requests[0], d.Requests[1] // newest first
	if r.Job != done[0][3] || r.Layer != "demo:world" || r.Type != "SEED" || r.GridSet != "EPSG:4326" || r.Format != "image/png" ||
		r.ZoomStart == nil || *r.ZoomStart != 0 || r.ZoomStop == nil || *r.ZoomStop != 2 || r.Status != "DONE" || r.Finished == nil {
		t.Errorf("the demo request: %+v", r)
	}
	if r.Bounds == nil || r.Bounds[0] < -90.0001 || r.Bounds[2] > 90.0001 || r.Extent == nil || *r.Extent != [4]float64{-180, -90, 180, 90} {
		t.Errorf("the demo request's bounds %v in extent %v: want within the asked box, in EPSG:4326's extent", r.Bounds, r.Extent)
	}
	if !strings.Contains(r.SubmittedBy, apptest.User) {
		t.Errorf("submitted by %q, want the account %s", r.SubmittedBy, apptest.User)
	}
	if c, err := time.Parse(time.RFC3339Nano, r.Created); err != nil || time.Since(c) > time.Minute {
		t.Errorf("created %q: want a time of the last minute", r.Created)
	}
	if r.Lanes != 2 || len(r.Tasks) != 2 || r.Tasks[0].ID != done[0][3] || r.Tasks[1].ID != done[1][3] || r.Done != r.Total || r.Total != sumTotals(done) {
		t.Errorf("the demo request's lanes %+v (done %d of %d), want tasks %v, all done", r.Tasks, r.Done, r.Total, ids(done))
	}
	if k.Job != killed[0][3] || k.Status != "KILLED" || len(k.Tasks) != 2 || !k.Tasks[0].Killed || !k.Tasks[1].Killed {
		t.Errorf("the killed request: %+v", k)
	}
	var sum int64
	for _, l := range k.Tasks {
		tk, err := a.Local.Tasks.Get(t.Context(), l.ID)
		if err != nil || tk.Done != l.Done {
			t.Errorf("killed lane %d: %d done listed, the store says %d (%v)", l.ID, l.Done, tk.Done, err)
		}
		sum += l.Done
	}
	if k.Done != sum {
		t.Errorf("killed request done %d, its lanes sum %d", k.Done, sum)
	}

	// The layer's usage by tile set: what the demo request stored.
	testenv.Eventually(t, 10*time.Second, "the usage to count the demo tiles", func() bool {
		res := a.Do(t, "GET", "/rest/diskquota/pages/demo:world.json?tileSets=1", "")
		wantOK(t, res, ctJSON)
		var s struct {
			Layer    string `json:"layer"`
			TileSets []struct {
				GridSet, Format, FormatID, Parameters string
				Tiles, Bytes                          int64
				Levels                                []struct{ Zoom int }
			} `json:"tileSets"`
		}
		if err := json.Unmarshal([]byte(res.Body), &s); err != nil {
			t.Fatalf("tile sets %q: %v", res.Body, err)
		}
		keys := a.TileKeys(t, "demo:world/")
		if len(s.TileSets) != 1 || int64(len(keys)) != s.TileSets[0].Tiles {
			return false
		}
		ts := s.TileSets[0]
		var zs []int
		for _, l := range ts.Levels {
			zs = append(zs, l.Zoom)
		}
		if ts.GridSet != "EPSG:4326" || ts.Format != "image/png" || ts.FormatID != "png" || ts.Parameters != "default" || ts.Bytes <= 0 || !slices.Equal(zs, []int{0, 1, 2}) {
			t.Fatalf("tile set %+v: want EPSG:4326 png default, levels 0 to 2", ts)
		}
		return true
	})
	res := a.Do(t, "GET", "/rest/diskquota/pages/nosuch.json?tileSets=1", "")
	if res.Status != 404 {
		t.Errorf("tile sets of an unknown layer: %d %s", res.Status, res.Body)
	}
}
