package seed_test

import (
	"encoding/json"
	"testing"

	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/seed"
)

// TestPlannerNeedsNoEngine: a planner over the catalogue alone (no task
// store, queue or tile store) prepares and estimates a request; its
// estimate is the one the engine's planner gives while no lane has run,
// and its counts are those of the plan Submit would record.
func TestPlannerNeedsNoEngine(t *testing.T) {
	cat, err := layer.Parse([]byte(layers), "test")
	if err != nil {
		t.Fatal(err)
	}
	alone := seed.NewPlanner(cat, nil, nil, seed.PlannerOptions{}, nil)
	ofEngine := seed.New(cat, nil, nil, nil, nil, seed.Options{}, nil).Planner
	for _, typ := range []string{"seed", "reseed", "truncate"} {
		r := gwc.SeedRequest{Layer: "topp:states", ZoomStart: ptr(3), ZoomStop: ptr(6), ThreadCount: ptr(3), Type: typ}
		p, err := alone.Prepare(r)
		if err != nil {
			t.Fatalf("%s: prepare: %v", typ, err)
		}
		var laneTiles int64
		for _, ln := range p.Lanes {
			laneTiles += ln.Tiles
		}
		est, err := alone.Estimate(t.Context(), r)
		if err != nil {
			t.Fatalf("%s: estimate: %v", typ, err)
		}
		if est.Tasks != len(p.Lanes) || est.Tiles != laneTiles || est.Tiles != p.Job.Tiles || est.Metatiles != p.Job.Metatiles {
			t.Errorf("%s: estimate of %d tasks, %d tiles, %d metatiles; the plan has %d lanes of %d tiles, a job of %d tiles and %d metatiles",
				typ, est.Tasks, est.Tiles, est.Metatiles, len(p.Lanes), laneTiles, p.Job.Tiles, p.Job.Metatiles)
		}
		if est.TilesPerSecond != 0 || est.CostUSD["lambda"] != 0 {
			t.Errorf("%s: a render rate (%v tiles/s) with no lane run", typ, est.TilesPerSecond)
		}
		engEst, err := ofEngine.Estimate(t.Context(), r)
		if err != nil {
			t.Fatalf("%s: the engine's planner: %v", typ, err)
		}
		a, _ := json.Marshal(est)
		b, _ := json.Marshal(engEst)
		if string(a) != string(b) {
			t.Errorf("%s: estimates differ:\nplanner alone   %s\nengine's planner %s", typ, a, b)
		}
	}
}
