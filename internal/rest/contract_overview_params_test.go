package rest_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"tilecache/internal/app/apptest"
)

// TestOverviewParameters: the overview lists each layer's parameter
// filters as the layer file defines them.
func TestOverviewParameters(t *testing.T) {
	extra := `
  - name: num:world
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    parameterFilters:
      - {key: elevation, type: float, default: "0", values: ["0", "12.5"], threshold: 0.5}
      - {key: TIME, type: integer, default: "2020", values: ["2020", "2021"]}
    source: {type: testpattern}
`
	a := apptest.Start(t, apptest.Options{Layers: apptest.Layers + extra})
	res := a.Do(t, "GET", "/rest/overview.json", "")
	wantOK(t, res, ctJSON)
	type param struct {
		Key       string   `json:"key"`
		Kind      string   `json:"kind"`
		Default   string   `json:"default"`
		Values    []string `json:"values"`
		Regex     string   `json:"regex"`
		Threshold float64  `json:"threshold"`
	}
	var o struct {
		Layers []struct {
			Name       string  `json:"name"`
			Parameters []param `json:"parameters"`
		} `json:"layers"`
	}
	if err := json.Unmarshal([]byte(res.Body), &o); err != nil {
		t.Fatal(err)
	}
	want := map[string][]param{
		"topp:states": {
			{Key: "STYLES", Kind: "list", Values: []string{"pophatch", "polygon"}},
			{Key: "CQL_FILTER", Kind: "regex", Regex: "[A-Za-z0-9_ <>=.']*"},
		},
		"num:world": {
			{Key: "ELEVATION", Kind: "float", Default: "0", Values: []string{"0", "12.5"}, Threshold: 0.5},
			{Key: "TIME", Kind: "integer", Default: "2020", Values: []string{"2020", "2021"}, Threshold: 1},
		},
		"demo:world": {},
	}
	seen := 0
	for _, l := range o.Layers {
		w, ok := want[l.Name]
		if !ok {
			continue
		}
		seen++
		if l.Parameters == nil || !reflect.DeepEqual(l.Parameters, w) {
			t.Errorf("%s: parameters %+v, want %+v", l.Name, l.Parameters, w)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d layers", seen, len(want))
	}
}
