// Package sources builds the sources of layers (the built-in test
// pattern, WMS, XYZ, tile archives) and the renderer of missing tiles from them: the
// part of the shared core (package core) that renders, which the
// assemblies that never render (the log ingest) do not link.
package sources

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"tilecache/internal/app/backends"
	"tilecache/internal/archive"
	"tilecache/internal/archive/rangeread"
	"tilecache/internal/config"
	"tilecache/internal/layer"
	"tilecache/internal/onmiss"
	"tilecache/internal/source"
	"tilecache/internal/source/testpattern"
	"tilecache/internal/source/tilearchive"
	"tilecache/internal/source/upstream"
	"tilecache/internal/source/wms"
	"tilecache/internal/source/xyz"
)

// Of builds the source of every layer; budget bounds the decoded images in
// flight across all of them (nil: no bound).
func Of(layers *layer.Catalogue, budget *upstream.Budget) (map[string]source.Source, error) {
	out := map[string]source.Source{}
	var errs []error
	snap := layers.Snapshot()
	for _, name := range snap.Names() {
		l, ok := snap.Layer(name)
		if !ok {
			continue // a stored layer that does not build (logged)
		}
		s, err := newSource(l, upstream.Shared{Budget: budget}, tilearchive.Access{})
		if err != nil {
			errs = append(errs, fmt.Errorf("layer %s: %w", name, err))
			continue
		}
		out[name] = s
	}
	return out, errors.Join(errs...)
}

// newSource builds the source of layer l; a is what archive sources read
// with.
func newSource(l *layer.Layer, sh upstream.Shared, a tilearchive.Access) (source.Source, error) {
	switch l.SourceType {
	case "testpattern":
		return testpattern.New(&l.Source)
	case "wms":
		return wms.New(l, sh)
	case "xyz":
		return xyz.New(l, sh)
	case "pmtiles", "mbtiles":
		return tilearchive.New(l, sh, a)
	}
	return nil, fmt.Errorf("unknown source type %q (known: testpattern, wms, xyz, pmtiles, mbtiles)", l.SourceType)
}

// Cache holds the sources of layers by definition (layer.Version): a
// layer changed at run time gets a new source, and a seed that keeps its
// old definition keeps its old source.
type Cache struct {
	shared   upstream.Shared
	archives tilearchive.Access
	mu       sync.Mutex
	byDef    map[string]source.Source
}

// maxCachedSources bounds the sources kept: past it the cache starts over
// (sources are cheap to build; what they share, the budget, stays).
const maxCachedSources = 1024

// NewCache returns an empty cache whose sources share u's decode budget
// and upstream address policy.
func NewCache(u config.Upstream, opts ...Option) *Cache {
	c := &Cache{shared: upstream.Shared{Budget: upstream.NewBudget(u.DecodeMemory), Allow: u.UpstreamAllow}, byDef: map[string]source.Source{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Option adds to what a Cache's sources can reach.
type Option func(*Cache)

// ArchivesIn lets pmtiles and mbtiles sources read s3:// archives through
// the tile store when it can (the S3 store; the embedded one cannot).
func ArchivesIn(tiles any) Option {
	return func(c *Cache) {
		if objs, ok := tiles.(rangeread.Objects); ok {
			c.archives.Objects = objs
		}
	}
}

// MBTiles lets mbtiles sources open their files with open (mbtiles.Open),
// which links the SQLite driver: the workers give it, the tile function
// does not.
func MBTiles(open func(ctx context.Context, path string) (archive.Reader, error)) Option {
	return func(c *Cache) { c.archives.OpenMBTiles = open }
}

// Of returns l's source, built once per definition.
func (c *Cache) Of(l *layer.Layer) (source.Source, error) {
	key := l.Name + "\x00" + l.Version
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.byDef[key]; ok {
		return s, nil
	}
	s, err := newSource(l, c.shared, c.archives)
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", l.Name, err)
	}
	if len(c.byDef) >= maxCachedSources {
		clear(c.byDef)
	}
	c.byDef[key] = s
	return s, nil
}

// Check builds the source of every layer of cat, reporting every failure.
func (c *Cache) Check(cat *layer.Catalogue) error {
	var errs []error
	for _, name := range cat.Names() {
		l, ok := cat.Layer(name)
		if !ok {
			continue // a stored layer that does not build (logged)
		}
		if _, err := c.Of(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkBuilt builds the source of every layer cat built when it was
// loaded (the layer file's), reporting every failure: what a program
// checks as it starts. The stored configuration's layers are built on
// first use, and their sources were checked when they were saved
// (Registry.Validate runs Check).
func (c *Cache) checkBuilt(cat *layer.Catalogue) error {
	var errs []error
	for _, name := range cat.BuiltNames() {
		l, ok := cat.Layer(name)
		if !ok {
			continue
		}
		if _, err := c.Of(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ForRegistry returns the cache of reg's layers' sources: those of the
// layer file checked now, and every change saved through reg checked
// before it is (Registry.Validate).
func ForRegistry(reg *layer.Registry, u config.Upstream, opts ...Option) (*Cache, error) {
	c := NewCache(u, opts...)
	if err := c.checkBuilt(reg.Catalogue().Snapshot()); err != nil {
		return nil, err
	}
	reg.Validate(c.Check)
	return c, nil
}

// NewMisses returns the renderer of missing tiles of reg's layers from
// their sources in c, storing into b's tile store under keyPrefix, its
// claims, usage and recounts in b's state, bounded as m says.
func NewMisses(reg *layer.Registry, c *Cache, b backends.Backends, m config.Miss, keyPrefix string, log *slog.Logger) *onmiss.Renderer {
	return onmiss.New(reg.Catalogue(), nil, b.Tiles, b.Tasks, onmiss.Options{
		SourceOf: c.Of, Sync: func(ctx context.Context) error { _, err := reg.Sync(ctx); return err },
		KeyPrefix: keyPrefix, Usage: b.Usage, Claims: b.Claims, ClaimTTL: m.ClaimTTL, Wait: m.MissWait, Queue: m.MissQueue,
		Timeout: m.MissTimeout, Remember: m.MissRemember, FailureBackoff: m.MissFailureBackoff,
	}, log)
}
