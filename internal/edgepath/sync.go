package edgepath

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// KeyValues is the key-value store the edge function reads its grid sets
// from (a CloudFront KeyValueStore), as Sync uses it.
type KeyValues interface {
	// Read returns every key with its value, and the store's version.
	Read(ctx context.Context) (values map[string]string, version string, err error)
	// Write puts and deletes keys if the store is still at version.
	Write(ctx context.Context, version string, put map[string]string, del []string) error
}

// Sync makes kv hold t's grid sets and nothing else, writing only what
// differs, and returns the keys it changed (sorted).
func Sync(ctx context.Context, kv KeyValues, t Table) ([]string, error) {
	stored, version, err := kv.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the edge's grid sets: %w", err)
	}
	put := map[string]string{}
	for id, l := range t {
		if v := l.Encode(); stored[id] != v {
			put[id] = v
		}
	}
	var del []string
	for k := range stored {
		if _, ok := t[k]; !ok {
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
