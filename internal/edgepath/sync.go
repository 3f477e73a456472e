package edgepath

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"tilecache/internal/layer"
	"tilecache/internal/tiletoken"
)

// KeyValues is the key-value store the edge function reads its grid sets,
// private layers and tile token keys from (a CloudFront KeyValueStore), as
// Sync uses it.
type KeyValues interface {
	// Read returns every key with its value, and the store's version.
	Read(ctx context.Context) (values map[string]string, version string, err error)
	// Write puts and deletes keys if the store is still at version.
	Write(ctx context.Context, version string, put map[string]string, del []string) error
}

// The edge's store holds, besides the grid sets by id (which never hold a
// "/"), each private layer's id under PrivateEntry ("1") and each tile
// token key's secret under KeyEntry and its id: the edge function checks
// a private layer's token with them (functions/edge/tilepath.js). The OGC
// bindings' function (functions/edge/ows.js) reads LayerEntry and
// GeometryEntry keys too (see LayerValues and ValuesOf).
const (
	PrivateEntry = "/private/"
	KeyEntry     = "/key/"
)

// Values returns what the edge's store holds: t's grid sets, the private
// layers' ids and the tile token keys.
func Values(t Table, private []string, keys []tiletoken.Key) map[string]string {
	out := make(map[string]string, len(t)+len(private)+len(keys))
	for id, l := range t {
		out[id] = l.Encode()
	}
	for _, id := range private {
		out[PrivateEntry+id] = "1"
	}
	for _, k := range keys {
		out[KeyEntry+k.ID] = k.Secret
	}
	return out
}

// PrivateOf returns the ids of a catalogue's private layers.
func PrivateOf(c *layer.Catalogue) []string {
	var out []string
	for _, n := range c.Names() {
		if l, ok := c.Layer(n); ok && l.Private {
			out = append(out, l.ID)
		}
	}
	return out
}

// Sync makes kv hold t's grid sets and nothing else, writing only what
// differs, and returns the keys it changed (sorted).
func Sync(ctx context.Context, kv KeyValues, t Table) ([]string, error) {
	return SyncValues(ctx, kv, Values(t, nil, nil))
}

// SyncValues makes kv hold values (see Values) and nothing else, writing
// only what differs, and returns the keys it changed (sorted).
func SyncValues(ctx context.Context, kv KeyValues, values map[string]string) ([]string, error) {
	stored, version, err := kv.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the edge's grid sets: %w", err)
	}
	put := map[string]string{}
	for k, v := range values {
		if stored[k] != v {
			put[k] = v
		}
	}
	var del []string
	for k := range stored {
		if _, ok := values[k]; !ok {
			del = append(del, k)
		}
	}
	if len(put) == 0 && len(del) == 0 {
		return nil, nil
	}
	slices.Sort(del)
	if err := kv.Write(ctx, version, put, del); err != nil {
		return nil, fmt.Errorf("write the edge's grid sets: %w", err)
	}
	changed := slices.Concat(slices.Collect(maps.Keys(put)), del)
	slices.Sort(changed)
	return changed, nil
}
