// The blob store's metadata: this part writes and reads the metadata objects that GeoWebCache's
// S3 blob store keeps beside the tiles, so that GeoWebCache can open a
// bucket (or a prefix of one) that this program wrote, and so that both
// agree on what a parameters id stands for.
//
// All of them are text in the format of java.util.Properties (Encode,
// Decode):
//
//   - The store marker, "[prefix/]metadata.properties" (MarkerKey). When a
//     blob store is added or changed, GeoWebCache refuses a bucket or prefix
//     that holds objects but no marker, taking it for someone else's data.
//     Only its existence counts. EnsureMarker creates it.
//   - One parameters object per parameters id,
//     "[prefix/]layerId/parameters-{id}.properties"
//     (tilestore.ParametersKey): the parameters whose hash the id is, one
//     entry per parameter name. GeoWebCache lists them to learn a layer's
//     cached parameter sets, e.g. to truncate one. ParametersObject builds
//     its content.
//   - The layer metadata, "[prefix/]layerId/metadata.properties"
//     (LayerMetadataKey): free key/value pairs a GeoWebCache component may
//     keep per layer. GeoWebCache reads a missing one as empty, so this
//     program never writes it.
//
// GeoWebCache also keeps "[prefix/]_pending_deletes.properties", the bulk
// deletes it has under way, which it resumes when it opens the store; this
// program never writes it either.
//
// Every object is written with the same bytes for the same content (no date
// comment, entries sorted), so rewriting one that has not changed changes
// nothing a cache could see.

package gwc

import (
	"context"
	"fmt"
	"strings"

	"tilecache/internal/tilestore"
)

// MetadataName is the name of the store marker and of a layer's metadata
// object.
const MetadataName = "metadata.properties"

// MarkerKey returns the key of the store marker: "metadata.properties" under
// the key prefix, "[prefix/]metadata.properties".
func MarkerKey(prefix string) string {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return MetadataName
	}
	return prefix + "/" + MetadataName
}

// LayerMetadataKey returns the key of a layer's metadata object,
// "[prefix/]layerId/metadata.properties".
func LayerMetadataKey(prefix, layerID string) string {
	return tilestore.LayerPrefix(prefix, layerID) + MetadataName
}

// Meta returns the object meta every metadata object is stored with.
func Meta() tilestore.Meta { return tilestore.Meta{ContentType: ContentType} }

// markerComment is the marker's only line. GeoWebCache writes an empty
// Properties object there (with a date comment); any content will do.
const markerComment = "GeoWebCache blob store"

// Marker returns the content of the store marker: a Properties object with
// one comment line and no entries.
func Marker() []byte { return []byte("#" + markerComment + lineSeparator) }

// ParametersObject returns the content of the parameters object of a
// parameters id: params, one entry per parameter, as Encode writes them
// (sorted, no comment). It fails (apperr.Invalid) for a name or value that
// is not valid UTF-8.
func ParametersObject(params map[string]string) ([]byte, error) {
	return Marshal(params, "")
}

// MarkerStore is what EnsureMarker needs of a tile store.
type MarkerStore interface {
	Stat(ctx context.Context, key string) (obj tilestore.Object, found bool, err error)
	Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error
}

// EnsureMarker creates the store marker under prefix unless it exists. An
// existing marker, whoever wrote it, is left alone. Two callers racing
// both write the same bytes.
func EnsureMarker(ctx context.Context, s MarkerStore, prefix string) error {
	key := MarkerKey(prefix)
	_, found, err := s.Stat(ctx, key)
	if err != nil {
		return fmt.Errorf("look for the store marker %s: %w", key, err)
	}
	if found {
		return nil
	}
	if err := s.Put(ctx, key, Marker(), Meta()); err != nil {
		return fmt.Errorf("write the store marker %s: %w", key, err)
	}
	return nil
}
