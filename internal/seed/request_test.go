package seed_test

import (
	"fmt"
	"math"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/seed"
)

const layers = `
layers:
  - name: topp:states
    gridSubsets:
      - gridSet: EPSG:4326
        extent: [-124, 22, -66, 50]
        zoomStart: 2
        zoomStop: 12
      - gridSet: EPSG:900913
    formats: [image/png, image/jpeg]
    source: {type: testpattern}
`

// planner is a planner of the layers above, with no engine, task store or
// tile store: preparing a request reads the catalogue alone.
func planner(t *testing.T) *seed.Planner {
	t.Helper()
	cat, err := layer.Parse([]byte(layers), "test")
	if err != nil {
		t.Fatal(err)
	}
	return seed.NewPlanner(cat, nil, nil, seed.PlannerOptions{}, nil)
}

func ptr[T any](v T) *T { return &v }

func TestPrepareDefaultsAndClamps(t *testing.T) {
	e := planner(t)
	tests := []struct {
		name                 string
		req                  gwc.SeedRequest
		gridSet, format, typ string
		zoomStart, zoomStop  int
		lanes                int
	}{
		{"defaults", gwc.SeedRequest{ZoomStart: ptr(3), ZoomStop: ptr(4)}, "EPSG:4326", "image/png", "SEED", 3, 4, 1},
		{"below the lowest level is raised", gwc.SeedRequest{ZoomStart: ptr(0), ZoomStop: ptr(3)}, "EPSG:4326", "image/png", "SEED", 2, 3, 1},
		{"above the highest level is reduced", gwc.SeedRequest{ZoomStart: ptr(11), ZoomStop: ptr(40), ThreadCount: ptr(3)}, "EPSG:4326", "image/png", "SEED", 11, 12, 3},
		{"threadCount below 1 is 1", gwc.SeedRequest{ZoomStart: ptr(3), ZoomStop: ptr(3), ThreadCount: ptr(-4)}, "EPSG:4326", "image/png", "SEED", 3, 3, 1},
		{"threadCount above 128 is 128", gwc.SeedRequest{ZoomStart: ptr(3), ZoomStop: ptr(3), ThreadCount: ptr(1000)}, "EPSG:4326", "image/png", "SEED", 3, 3, 128},
		{"truncate is one task", gwc.SeedRequest{ZoomStart: ptr(3), ZoomStop: ptr(3), ThreadCount: ptr(8), Type: "TRUNCATE"}, "EPSG:4326", "image/png", "TRUNCATE", 3, 3, 1},
		{"srs alias picks the mercator grid", gwc.SeedRequest{ZoomStart: ptr(0), ZoomStop: ptr(1), SRS: ptr(3857), Format: "image/jpeg", Type: "reseed"}, "EPSG:900913", "image/jpeg", "RESEED", 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Layer = "topp:states"
			p, err := e.Prepare(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			j := p.Job
			if j.Range().GridSetID != tt.gridSet || j.Range().Format != tt.format || j.Type.String() != tt.typ || j.Range().ZoomStart != tt.zoomStart || j.Range().ZoomStop != tt.zoomStop || len(p.Lanes) != tt.lanes {
				t.Errorf("got %s %s %s z%d-%d with %d lanes, want %s %s %s z%d-%d with %d lanes",
					j.Range().GridSetID, j.Range().Format, j.Type, j.Range().ZoomStart, j.Range().ZoomStop, len(p.Lanes), tt.gridSet, tt.format, tt.typ, tt.zoomStart, tt.zoomStop, tt.lanes)
			}
			var sum int64
			for i, l := range p.Lanes {
				sum += l.Tiles
				if i > 0 && l.Start != p.Lanes[i-1].End {
					t.Errorf("lanes not contiguous: %+v", p.Lanes)
				}
			}
			if sum != j.Tiles || j.Tiles != p.Plan.Tiles() || p.Lanes[len(p.Lanes)-1].End != j.Metatiles {
				t.Errorf("lanes hold %d tiles, job %d, plan %d", sum, j.Tiles, p.Plan.Tiles())
			}
		})
	}
}

func TestPrepareRejects(t *testing.T) {
	e := planner(t)
	tests := []struct {
		name string
		req  gwc.SeedRequest
		want string
	}{
		{"unknown layer", gwc.SeedRequest{Layer: "nope", ZoomStart: ptr(0), ZoomStop: ptr(1)}, "Unknown layer: nope"},
		{"missing zoomStart", gwc.SeedRequest{ZoomStop: ptr(1)}, "zoomStart is required"},
		{"missing zoomStop", gwc.SeedRequest{ZoomStart: ptr(1)}, "zoomStop is required"},
		{"zoomStart above", gwc.SeedRequest{ZoomStart: ptr(25), ZoomStop: ptr(30)}, "zoomStart 25 is above the highest zoom level 12 of grid set EPSG:4326"},
		{"start after stop", gwc.SeedRequest{ZoomStart: ptr(5), ZoomStop: ptr(3)}, "zoomStart 5 is greater than zoomStop 3"},
		{"negative zoom", gwc.SeedRequest{ZoomStart: ptr(-1), ZoomStop: ptr(3)}, "zoomStart -1 is negative"},
		{"unknown grid set", gwc.SeedRequest{GridSetID: "EPSG:1234", HasGridSetID: true, ZoomStart: ptr(0), ZoomStop: ptr(1)}, "Unknown grid set EPSG:1234 for layer topp:states"},
		{"srs without grid set", gwc.SeedRequest{SRS: ptr(3035), ZoomStart: ptr(0), ZoomStop: ptr(1)}, "No grid set of layer topp:states uses EPSG:3035"},
		{"format", gwc.SeedRequest{Format: "image/bogus", ZoomStart: ptr(2), ZoomStop: ptr(3)}, "Unsupported format image/bogus for layer topp:states"},
		{"type", gwc.SeedRequest{Type: "explode", ZoomStart: ptr(0), ZoomStop: ptr(1)}, "Unknown type: explode"},
		{"retry wait", gwc.SeedRequest{RetryWaitMS: ptr(-5), ZoomStart: ptr(2), ZoomStop: ptr(3)}, "tileFailureRetryWaitTime shall not be negative: -5"},
		{"retry wait too long", gwc.SeedRequest{RetryWaitMS: ptr(600_001), ZoomStart: ptr(2), ZoomStop: ptr(3)}, "tileFailureRetryWaitTime 600001 is above 600000 (ms)"},
		{"retry count overflowing", gwc.SeedRequest{RetryCount: ptr(math.MaxInt), ZoomStart: ptr(2), ZoomStop: ptr(3)}, fmt.Sprintf("tileFailureRetryCount %d is above 100", math.MaxInt)},
		{"negative failure budget", gwc.SeedRequest{MaxFailures: ptr(-1), ZoomStart: ptr(2), ZoomStop: ptr(3)}, "totalFailuresBeforeAborting -1 is outside 0 to 1000000000"},
		{"huge failure budget", gwc.SeedRequest{MaxFailures: ptr(math.MaxInt32 * 4), ZoomStart: ptr(2), ZoomStop: ptr(3)}, fmt.Sprintf("totalFailuresBeforeAborting %d is outside 0 to 1000000000", math.MaxInt32*4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.req.Layer == "" {
				tt.req.Layer = "topp:states"
			}
			_, err := e.Prepare(tt.req)
			if !apperr.Is(err, apperr.Invalid) || apperr.Message(err) != tt.want {
				t.Errorf("got %v, want Invalid %q", err, tt.want)
			}
		})
	}
}
