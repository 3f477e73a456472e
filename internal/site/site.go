// Package site keeps what the tile store holds besides tiles, so that
// other programs can read the bucket on their own: GeoWebCache's store
// marker, the discovery documents of every tile set (written through
// package discovery) and the demo map page at the root (tilestore.IndexObject). The
// seeding engine asks a Site for a tile set's documents as it writes the
// tile set (seed.Documents); Publish writes everything, at the local
// program's start and on a deployment's first clean-up.
package site

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"tilecache/internal/discovery"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
)

// Site keeps what the tile store holds besides tiles, so that other
// programs can read it: GeoWebCache's store marker, the discovery
// documents of every tile set (TMS, TileJSON, the index) and the demo map
// page at the root. It implements seed.Documents.
type Site struct {
	tiles  tilestore.Store
	prefix string
	docs   *discovery.Publisher
	page   []byte // the demo page; nil: none
	marked atomic.Bool
	log    *slog.Logger
}

// New returns the site of a tile store whose objects are served from
// publicURL ("" for root-relative links); page is the demo page (nil:
// none).
func New(tiles tilestore.Store, layers *layer.Catalogue, prefix, publicURL string, page []byte, log *slog.Logger) *Site {
	return &Site{tiles: tiles, prefix: prefix, docs: discovery.NewPublisher(tiles, layers, prefix, publicURL, log), page: page, log: log}
}

// Ensure writes the store marker (once per process) and the documents of
// one tile set; it returns the keys it changed.
func (s *Site) Ensure(ctx context.Context, layerName, gridSetID, format string, parameters map[string]string) ([]string, error) {
	merr := s.mark(ctx)
	changed, err := s.docs.Ensure(ctx, layerName, gridSetID, format, parameters)
	return changed, errors.Join(merr, err)
}

// RebuildIndex rewrites the index of tile sets.
func (s *Site) RebuildIndex(ctx context.Context) ([]string, error) { return s.docs.RebuildIndex(ctx) }

// Publish writes the store marker and the demo page where missing or out
// of date and refreshes every tile set's documents (a new layer file
// changes them). The local program runs it at start, the cleaner function
// on its first invocation after a cold start (a deployment). It returns
// the keys it changed.
func (s *Site) Publish(ctx context.Context) ([]string, error) {
	var changed []string
	errs := []error{s.mark(ctx)}
	if s.page != nil {
		key := tilestore.IndexObject
		if s.prefix != "" {
			key = s.prefix + "/" + key
		}
		stored, meta, found, err := s.tiles.Get(ctx, key)
		want := tilestore.Meta{ContentType: "text/html; charset=utf-8", CacheControl: "public, max-age=300"}
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("read the demo page: %w", err))
		case !found || !bytes.Equal(stored, s.page) || meta != want:
			if err := s.tiles.Put(ctx, key, s.page, want); err != nil {
				errs = append(errs, fmt.Errorf("write the demo page: %w", err))
			} else {
				changed = append(changed, key)
			}
		}
	}
	docs, err := s.docs.Refresh(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("refresh the documents of tile sets: %w", err))
	}
	return append(changed, docs...), errors.Join(errs...)
}

// PublishLayers is Publish after a change of the named layers alone
// (added, changed or deleted): the store marker, the documents of their
// tile sets and the root documents (see discovery.Publisher.RefreshLayers).
// It returns the keys it changed.
func (s *Site) PublishLayers(ctx context.Context, names []string) ([]string, error) {
	merr := s.mark(ctx)
	changed, err := s.docs.RefreshLayers(ctx, names)
	if err != nil {
		err = fmt.Errorf("refresh the documents of tile sets: %w", err)
	}
	return changed, errors.Join(merr, err)
}

// mark writes GeoWebCache's store marker unless this process already saw
// it.
func (s *Site) mark(ctx context.Context) error {
	if s.marked.Load() {
		return nil
	}
	if err := gwc.EnsureMarker(ctx, s.tiles, s.prefix); err != nil {
		return err
	}
	s.marked.Store(true)
	return nil
}
