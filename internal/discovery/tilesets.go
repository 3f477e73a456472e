package discovery

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
)

// candidate is a configured tile set that may have tiles and documents.
type candidate struct {
	layer *layer.Layer
	mime  string
	set   tilestore.TileSet
	// params returns the parameters of set.ParametersID (read once per
	// enumeration, when first needed).
	params func(ctx context.Context) map[string]string
}

// eachTileSet calls fn for every configured layer × grid subset × format ×
// parameters id, in configuration order: the default parameters id first,
// then those that have a parameters side object, in key order. Finding the
// ids costs one LIST per layer, of its side objects only.
func (p *Publisher) eachTileSet(ctx context.Context, fn func(candidate) error) error {
	return p.eachTileSetOf(ctx, p.layers.Names(), fn)
}

// eachTileSetOf is eachTileSet for the layers called names (those
// configured).
func (p *Publisher) eachTileSetOf(ctx context.Context, names []string, fn func(candidate) error) error {
	for _, name := range names {
		l, ok := p.layers.Layer(name)
		if !ok {
			continue // removed meanwhile
		}
		ids, err := p.parametersIDs(ctx, l)
		if err != nil {
			return err
		}
		for _, id := range ids {
			params := p.parametersOnce(l, id)
			for _, s := range l.Subsets {
				for _, mime := range l.Formats {
					formatID, ext, _ := tilestore.Format(mime)
					c := candidate{layer: l, mime: mime, params: params, set: tilestore.TileSet{
						SetName: tilestore.SetName{Layer: l.Name, GridSetID: s.GridSet.ID, FormatID: formatID, ParametersID: id},
						Prefix:  p.prefix, LayerID: l.ID, Ext: ext,
					}}
					if err := fn(c); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// parametersIDs returns "default" and the ids of the layer's parameters
// side objects, taken from their keys ("parameters-{id}.properties").
func (p *Publisher) parametersIDs(ctx context.Context, l *layer.Layer) ([]string, error) {
	ids := []string{tilestore.DefaultParametersID}
	prefix := tilestore.LayerPrefix(p.prefix, l.ID) + "parameters-"
	err := p.tiles.List(ctx, prefix, func(o tilestore.Object) error {
		id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, prefix), ".properties")
		if ok && safeSegments(id) && id != tilestore.DefaultParametersID {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list parameters of layer %s: %w", l.Name, err)
	}
	return ids, nil
}

// parametersOnce returns a function that reads the parameters of id from
// the layer's side object the first time it is called. A missing or
// unreadable side object gives no parameters (logged): they are only shown.
func (p *Publisher) parametersOnce(l *layer.Layer, id string) func(ctx context.Context) map[string]string {
	var params map[string]string
	return func(ctx context.Context) map[string]string {
		if params != nil || id == tilestore.DefaultParametersID {
			return params
		}
		params = map[string]string{}
		key := tilestore.ParametersKey(p.prefix, l.ID, id)
		data, _, found, err := p.tiles.Get(ctx, key)
		switch {
		case err != nil:
			p.log.Warn("cannot read parameters side object", "layer", l.Name, "key", key, "error", err)
		case !found:
			p.log.Warn("parameters side object vanished", "layer", l.Name, "key", key)
		default:
			params = parseProperties(string(data))
			if got := tilestore.ParametersID(params); got != id {
				p.log.Warn("parameters side object does not match its id", "layer", l.Name, "key", key,
					"parameters_id", got)
			}
		}
		return params
	}
}

// describe describes the candidate, reading its parameters if needed,
// and looks for its PMTiles archive (one HEAD) when it is the Web
// Mercator pyramid a PMTiles holds.
func (p *Publisher) describe(ctx context.Context, c candidate) (*description, error) {
	d, err := describe(c.layer, c.set.GridSetID, c.mime, c.set.ParametersID, c.params(ctx), p.prefix)
	if err == nil {
		err = p.findArchive(ctx, d)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// findArchive looks for the PMTiles archive of d's tile set (one HEAD)
// when it is the Web Mercator pyramid a PMTiles holds and its layer is
// public (a private layer's archive is not served).
func (p *Publisher) findArchive(ctx context.Context, d *description) error {
	if !d.mercator || d.layer.Private {
		return nil
	}
	_, found, err := p.tiles.Stat(ctx, p.rootKey(d.archiveKey()))
	if err != nil {
		return fmt.Errorf("look for the archive of %s: %w", d.set.Dir(), err)
	}
	d.pmtiles = found
	return nil
}

var errStop = errors.New("stop listing")

// hasTiles reports whether the tile set's directory holds an object other
// than a discovery document; the listing stops at the first one.
func (p *Publisher) hasTiles(ctx context.Context, set tilestore.TileSet) (bool, error) {
	found := false
	err := p.tiles.List(ctx, set.Dir(), func(o tilestore.Object) error {
		if name := path.Base(o.Key); name == tileMapName || name == tileJSONName || name == tileJSONXYZName {
			return nil
		}
		found = true
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, fmt.Errorf("look for tiles of %s: %w", set.Dir(), err)
	}
	return found, nil
}
