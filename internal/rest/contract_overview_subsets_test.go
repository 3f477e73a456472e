package rest_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"tilecache/internal/app/apptest"
)

// TestOverviewSubsets: the overview lists each layer's grid subsets with
// the extent each covers (the grid set's when the layer file gives none)
// and its levels.
func TestOverviewSubsets(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	res := a.Do(t, "GET", "/rest/overview.json", "")
	wantOK(t, res, ctJSON)
	type subset struct {
		GridSet   string     `json:"gridSet"`
		Extent    [4]float64 `json:"extent"`
		ZoomStart int        `json:"zoomStart"`
		ZoomStop  int        `json:"zoomStop"`
	}
	var o struct {
		Layers []struct {
			Name    string   `json:"name"`
			Subsets []subset `json:"subsets"`
		} `json:"layers"`
	}
	if err := json.Unmarshal([]byte(res.Body), &o); err != nil {
		t.Fatal(err)
	}
	const merc = 20037508.34 // the grid set's extent as GeoWebCache defines it
	want := map[string][]subset{
		// topp:states: EPSG:4326 limited to its extent and levels 0-12.
		"topp:states": {
			{GridSet: "EPSG:4326", Extent: [4]float64{-124, 22, -66, 50}, ZoomStart: 0, ZoomStop: 12},
			{GridSet: "EPSG:900913", Extent: [4]float64{-merc, -merc, merc, merc}, ZoomStart: 0, ZoomStop: 30},
		},
		"slow:world": {{GridSet: "EPSG:4326", Extent: [4]float64{-180, -90, 180, 90}, ZoomStart: 0, ZoomStop: 21}},
	}
	for _, l := range o.Layers {
		w, ok := want[l.Name]
		if !ok {
			continue
		}
		delete(want, l.Name)
		if len(l.Subsets) != len(w) {
			t.Errorf("%s: subsets %+v, want %+v", l.Name, l.Subsets, w)
			continue
		}
		for i := range w {
			g, x := l.Subsets[i], w[i]
			for k := range 4 {
				if d := g.Extent[k] - x.Extent[k]; d > 1e-6 || d < -1e-6 {
					t.Errorf("%s: subset %+v, want %+v", l.Name, g, x)
				}
			}
			g.Extent, x.Extent = [4]float64{}, [4]float64{}
			if !reflect.DeepEqual(g, x) {
				t.Errorf("%s: subset %+v, want %+v", l.Name, l.Subsets[i], w[i])
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("layers missing from the overview: %v", want)
	}
}
