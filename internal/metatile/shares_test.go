package metatile_test

import (
	"context"
	"testing"

	"tilecache/internal/layer"
	"tilecache/internal/metatile"
	"tilecache/internal/source"
)

// cappedSource is a source whose upstream takes limit requests at once,
// perLane of them from one lane.
type cappedSource struct{ limit, perLane int }

func (cappedSource) Render(context.Context, source.Request) ([]source.Tile, error) { return nil, nil }

func (c cappedSource) UpstreamCap(metaW, metaH int) (limit, perLane int) { return c.limit, c.perLane }

type plainSource struct{}

func (plainSource) Render(context.Context, source.Request) ([]source.Tile, error) { return nil, nil }

// TestUpstreamShares: the one rule that splits a layer's upstream cap
// between its seed lanes and its renders on miss.
func TestUpstreamShares(t *testing.T) {
	for _, tt := range []struct {
		name              string
		src               source.Source
		onMiss            bool
		lanes, wantMisses int
	}{
		{"no source", nil, true, 0, 0},
		{"no cap", plainSource{}, true, 0, 0},
		{"cap 0", cappedSource{0, 1}, true, 0, 0},
		{"cap 8, seeding only", cappedSource{8, 1}, false, 8, 0},
		{"cap 8, half to misses", cappedSource{8, 1}, true, 4, 4},
		{"cap 1: each side gets one", cappedSource{1, 1}, true, 1, 1},
		{"cap 8, two requests a lane", cappedSource{8, 2}, true, 2, 2},
		{"cap 3, seeding only, two a lane", cappedSource{3, 2}, false, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &layer.Layer{Name: "l", MetaWidth: 4, MetaHeight: 4}
			if tt.onMiss {
				l.RenderOnMiss = &layer.OnMiss{ZoomStop: -1}
			}
			lanes, misses := metatile.UpstreamShares(l, tt.src)
			if lanes != tt.lanes || misses != tt.wantMisses {
				t.Errorf("got %d lanes, %d misses; want %d, %d", lanes, misses, tt.lanes, tt.wantMisses)
			}
		})
	}
}

// TestSourcesFindTheLayersSource: Of wins over Map; a layer with neither
// has no source and no error.
func TestSourcesFindTheLayersSource(t *testing.T) {
	l := &layer.Layer{Name: "l"}
	mapped := plainSource{}
	if src, err := (metatile.Sources{Map: map[string]source.Source{"l": mapped}}).Source(l); err != nil || src != mapped {
		t.Errorf("from the map: got %v, %v; want the mapped source", src, err)
	}
	built := cappedSource{2, 1}
	of := func(*layer.Layer) (source.Source, error) { return built, nil }
	if src, err := (metatile.Sources{Of: of, Map: map[string]source.Source{"l": mapped}}).Source(l); err != nil || src != built {
		t.Errorf("through Of: got %v, %v; want the built source", src, err)
	}
	if src, err := (metatile.Sources{}).Source(l); err != nil || src != nil {
		t.Errorf("none: got %v, %v; want nil, nil", src, err)
	}
}
