// What every owner of writers (seed lanes, render on miss) shares about a
// layer: its tile sets' keys, its source, and its upstream's cap.

package metatile

import (
	"fmt"

	"tilecache/internal/layer"
	"tilecache/internal/source"
	"tilecache/internal/tilestore"
)

// TileSet returns the tile set of layer l at gridSetID, format and
// parametersID, its keys under prefix.
func TileSet(prefix string, l *layer.Layer, gridSetID, format, parametersID string) tilestore.TileSet {
	id, ext, _ := tilestore.Format(format)
	return tilestore.TileSet{SetName: tilestore.SetName{Layer: l.Name, GridSetID: gridSetID, FormatID: id, ParametersID: parametersID},
		Prefix: prefix, LayerID: l.ID, Ext: ext}
}

// Sources finds the source a layer's tiles are rendered from: through Of
// when it is set (layers that change at run time), else in Map by layer
// name.
type Sources struct {
	Of  func(*layer.Layer) (source.Source, error)
	Map map[string]source.Source
}

// Source returns layer l's source: nil when it has none, an error when it
// cannot be built.
func (s Sources) Source(l *layer.Layer) (source.Source, error) {
	if s.Of != nil {
		src, err := s.Of(l)
		if err != nil {
			return nil, fmt.Errorf("build the source of layer %s: %w", l.Name, err)
		}
		return src, nil
	}
	return s.Map[l.Name], nil
}

// Capped is a source whose upstream takes at most a set number of requests
// in flight (a layer's maxConcurrent), however many processes seed it.
type Capped interface {
	// UpstreamCap returns the cap and the most requests one lane has in
	// flight at once for metatiles of metaW×metaH tiles.
	UpstreamCap(metaW, metaH int) (limit, perLane int)
}

// UpstreamShares splits layer l's upstream cap (maxConcurrent, across
// every process and Lambda worker of a deployment) between seeding and
// render on miss: lanes is the most RUNNING tasks the layer may have (the
// store promotes its pending tasks only below it), misses the most renders
// on miss at once (slots claimed in the task store). A layer that renders
// on miss gives half its cap (at least one request) to misses. Each side
// gets at least one, so a cap of 1 with render on miss allows 2. 0: no cap
// (also when src is not Capped).
func UpstreamShares(l *layer.Layer, src source.Source) (lanes, misses int) {
	c, ok := src.(Capped)
	if !ok {
		return 0, 0
	}
	limit, perLane := c.UpstreamCap(l.MetaWidth, l.MetaHeight)
	if limit <= 0 {
		return 0, 0
	}
	perLane = max(perLane, 1)
	share := 0
	if l.RenderOnMiss != nil {
		share = max(1, limit/2)
		misses = max(1, share/perLane)
	}
	return max(1, (limit-share)/perLane), misses
}
