package discovery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/grid"
	"tilecache/internal/layer"
	"tilecache/internal/tilestore"
	"tilecache/internal/vectortile"
)

// Document names: tileMapName and tileJSONName in a tile set's directory,
// indexName and tmsName at the root of the store (under the key prefix).
const (
	tileMapName  = "tilemapresource.xml"
	tileJSONName = "tilejson.json"
	// tileJSONXYZName is the TileJSON of the XYZ paths.
	tileJSONXYZName = "tilejson-xyz.json"
	indexName       = "index.json"
	tmsName         = "tms.xml"
)

// Limits of what the publisher writes. A vector tile set's TileJSON lists
// the layers of a tile an upstream sent (vector_layers): before these, a
// hostile tile made it 115 MB, which every MapLibre client of the tile
// set downloads, and which a process rendering it held several times.
const (
	// maxVectorLayers is the most layers vector_layers lists and
	// maxVectorFields the most fields it lists of each; a layer or field
	// whose name is longer than maxVectorName bytes is left out, and so
	// are those past the limits, with a warning. OpenMapTiles' tiles have
	// about 20 layers of up to some 80 fields (name:xx in every language).
	maxVectorLayers = 200
	maxVectorFields = 300
	maxVectorName   = 256
	// maxTileSetDocument is the largest document of a tile set (its
	// TileJSON documents and TileMap). A TileJSON past it is published
	// with vector_layers empty, as before the tile set's first tile is
	// stored: the layers are optional to its readers (MapLibre draws a
	// style's source-layers without them), the tiles' URLs are not. Any
	// other document past its limit is not written, with a warning, and
	// the copy stored before stays: a stale document still describes the
	// tile set, a missing one fails every client.
	maxTileSetDocument = 1 << 20
	// maxRootDocument is the largest of the documents describing every
	// tile set (index.json, tms.xml, the WMTS capabilities, the OGC API
	// documents). They are made of the layer configuration, not of
	// upstream answers: the limit is a backstop, far above what a large
	// configuration gives.
	maxRootDocument = 32 << 20
)

// The documents change when the layer file does, so CDNs keep them briefly.
const cacheControl = "public, max-age=300"

var (
	xmlMeta  = tilestore.Meta{ContentType: "text/xml; charset=utf-8", CacheControl: cacheControl}
	jsonMeta = tilestore.Meta{ContentType: "application/json", CacheControl: cacheControl}
)

// Store is what a Publisher needs of the tile store; every
// [tilestore.Store] has it. Absent keys follow the tilestore contract:
// Get and Stat report found=false, Delete ignores them.
type Store interface {
	// Get reads a stored document to compare it with a fresh rendering.
	Get(ctx context.Context, key string) (data []byte, meta tilestore.Meta, found bool, err error)
	// Put writes a document that changed.
	Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error
	// Stat tells which tile sets have documents.
	Stat(ctx context.Context, key string) (obj tilestore.Object, found bool, err error)
	// List finds a layer's parameters ids, and whether a tile set without
	// documents has tiles.
	List(ctx context.Context, prefix string, fn func(tilestore.Object) error) error
	// Delete removes the documents of tile sets no longer configured.
	Delete(ctx context.Context, keys []string) (int, error)
}

// Publisher writes and removes the discovery documents in a tile store. It
// is safe for concurrent use; within one Publisher the root documents are
// rebuilt one at a time.
//
// Request cost (each S3 request named by its verb):
//   - Ensure: one GET per document of the tile set (two for Web Mercator
//     pyramids, else one, which also get a HEAD of their PMTiles archive),
//     a PUT per changed one; when one changed, the cost of RebuildIndex on
//     top.
//   - RebuildIndex: per configured layer one LIST of its parameters side
//     objects ("{layerPrefix}parameters-", never its tiles) and one GET per
//     parameters id in use; per configured layer × grid set × format ×
//     parameters id one HEAD of its tilemapresource.xml; then a GET of
//     each root document (index.json, tms.xml, the WMTS capabilities at
//     the root and per layer, the OGC API – Tiles documents: four, plus
//     three per layer, one per layer and grid set and one per grid set)
//     and a PUT of each that changed, and one LIST of ogcapi/ to delete
//     the OGC API documents no longer rendered.
//   - Refresh: a GET of index.json (to find tile sets no longer configured),
//     RebuildIndex's LISTs and HEADs, then for each tile set with documents
//     its Ensure GETs (and a HEAD of tilejson.json where none belongs), and
//     for each without, one LIST of its directory that stops at the first
//     object (to find tiles stored before any document was); PUTs and
//     DELETEs only for what changed.
type Publisher struct {
	tiles   Store
	layers  *layer.Catalogue
	prefix  string
	baseURL string
	log     *slog.Logger
	now     func() time.Time
	root    sync.Mutex // serialises rebuilding index.json and tms.xml
}

// NewPublisher returns a Publisher for the layers of layers whose tiles are
// stored under keyPrefix (may be empty) in tiles and served from baseURL,
// the public URL of the store's root without the key prefix (a CDN's
// origin path is the prefix), e.g. "https://d123.cloudfront.net". A
// trailing slash is dropped; an empty baseURL makes the documents' URLs
// root-relative ("/demo:world/…"). A nil log discards.
func NewPublisher(tiles Store, layers *layer.Catalogue, keyPrefix, baseURL string, log *slog.Logger) *Publisher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Publisher{tiles: tiles, layers: layers, prefix: keyPrefix, baseURL: strings.TrimRight(baseURL, "/"),
		log: log, now: time.Now}
}

// document is a rendered document and where it goes.
type document struct {
	key  string
	data []byte
	meta tilestore.Meta
}

// Ensure writes the documents of one tile set if they are missing or differ
// from what the current layer file gives (one Get per document, a Put only
// on change), and then, if any changed, rebuilds the root documents. It
// returns the keys it changed. parameters are the normalised parameters of
// the tile set (nil without any), as [layer.Layer.NormaliseParameters]
// gives them; for a non-default parameters id the side object
// "parameters-{id}.properties" must be stored first, since the root index
// finds parameters ids by listing those. An unknown layer, grid set or
// format is NotFound. A grid that cannot be described (see
// [ErrUndescribable]) gets no documents: Ensure logs why and returns no
// error, since the tiles themselves are fine.
func (p *Publisher) Ensure(ctx context.Context, layerName, gridSetID, format string, parameters map[string]string) ([]string, error) {
	l, ok := p.layers.Layer(layerName)
	if !ok {
		return nil, apperr.New(apperr.NotFound, "layer %s not found", layerName)
	}
	d, err := describe(l, gridSetID, format, tilestore.ParametersID(parameters), parameters, p.prefix)
	if errors.Is(err, ErrUndescribable) {
		p.log.Warn("no discovery documents for tile set", "layer", layerName, "grid_set", gridSetID, "format", format, "error", err)
		return nil, nil
	}
	if err == nil {
		err = p.findArchive(ctx, d)
	}
	if err != nil {
		return nil, err
	}
	changed, err := p.writeTileSet(ctx, d)
	if err != nil || len(changed) == 0 {
		return changed, err
	}
	more, err := p.RebuildIndex(ctx)
	return append(changed, more...), err
}

// RebuildIndex rewrites index.json and tms.xml from the documents present
// (for instance after a mass truncation removed a layer's objects) and
// returns the keys it changed. See [Publisher] for its cost.
func (p *Publisher) RebuildIndex(ctx context.Context) ([]string, error) {
	p.root.Lock()
	defer p.root.Unlock()
	var ds []*description
	err := p.eachTileSet(ctx, func(c candidate) error {
		_, found, err := p.tiles.Stat(ctx, c.set.Dir()+tileMapName)
		if err != nil || !found {
			return err
		}
		d, err := p.describe(ctx, c)
		if err != nil {
			if errors.Is(err, ErrUndescribable) {
				return nil // Refresh removes its stale documents
			}
			return err
		}
		ds = append(ds, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rebuild discovery index: %w", err)
	}
	return p.writeRoot(ctx, ds, p.layers.Names(), nil)
}

// Refresh re-renders the documents of every configured tile set that has
// documents, or tiles, rewriting those that differ (the layer file
// changed); removes the documents of tile sets that the stored index.json
// lists but whose layer, grid set or format is no longer configured, and of
// tile sets whose grid can no longer be described; and rebuilds the root
// documents. It returns the keys it changed. See [Publisher] for its cost.
func (p *Publisher) Refresh(ctx context.Context) ([]string, error) {
	p.root.Lock()
	defer p.root.Unlock()
	return p.refresh(ctx)
}

func (p *Publisher) refresh(ctx context.Context) ([]string, error) {
	changed, err := p.removeUnconfigured(ctx)
	if err != nil {
		return changed, fmt.Errorf("refresh discovery documents: %w", err)
	}
	var ds []*description
	err = p.eachTileSet(ctx, func(c candidate) error {
		d, keys, err := p.refreshTileSet(ctx, c)
		changed = append(changed, keys...)
		if d != nil {
			ds = append(ds, d)
		}
		return err
	})
	if err != nil {
		return changed, fmt.Errorf("refresh discovery documents: %w", err)
	}
	keys, err := p.writeRoot(ctx, ds, p.layers.Names(), nil)
	changed = append(changed, keys...)
	if len(changed) > 0 {
		p.log.Info("discovery documents refreshed", "tile_sets", len(ds), "changed", len(changed))
	}
	return changed, err
}

// RefreshLayers is Refresh after a change of the named layers alone
// (added, changed or deleted; the users of a changed grid set): the
// documents of their tile sets that have documents or tiles are written
// where they differ, those of tile sets no longer configured removed, and
// the root documents rebuilt, with the other layers' tile sets as the
// stored index.json lists them (their definitions did not change). Its
// store requests grow with the named layers' tile sets and the tile sets
// that have documents, not with the configured layers; tiles of the other
// layers stored without documents are left to the next Refresh. An
// unreadable index makes it a Refresh.
func (p *Publisher) RefreshLayers(ctx context.Context, names []string) ([]string, error) {
	p.root.Lock()
	defer p.root.Unlock()
	entries, ok, err := p.storedIndex(ctx)
	if err != nil {
		return nil, fmt.Errorf("refresh discovery documents: %w", err)
	}
	if !ok {
		return p.refresh(ctx)
	}
	changed, err := p.removeUnconfiguredOf(ctx, entries)
	if err != nil {
		return changed, fmt.Errorf("refresh discovery documents: %w", err)
	}
	// The stored index leaves private layers out: their tile sets are
	// found again, as the named layers' are.
	names = withPrivate(names, p.layers)
	named := make(map[string]bool, len(names))
	for _, n := range names {
		named[n] = true
	}
	byLayer := map[string][]*description{}
	for _, e := range entries {
		if named[e.Layer] || !p.configured(e) {
			continue
		}
		l, ok := p.layers.ByID(e.LayerID)
		if !ok || l.Name != e.Layer {
			continue
		}
		d, err := describe(l, e.GridSet, e.Format, e.ParametersID, e.Parameters, p.prefix)
		if err != nil {
			continue // the next Refresh removes its documents
		}
		byLayer[l.Name] = append(byLayer[l.Name], d)
	}
	err = p.eachTileSetOf(ctx, names, func(c candidate) error {
		d, keys, err := p.refreshTileSet(ctx, c)
		changed = append(changed, keys...)
		if d != nil {
			byLayer[c.layer.Name] = append(byLayer[c.layer.Name], d)
		}
		return err
	})
	if err != nil {
		return changed, fmt.Errorf("refresh discovery documents: %w", err)
	}
	var ds []*description
	for _, n := range p.layers.Names() { // in configuration order, as Refresh
		ds = append(ds, byLayer[n]...)
	}
	ids := map[string]bool{}
	for _, n := range names {
		if l, ok := p.layers.Layer(n); ok {
			ids[l.ID] = true
		}
	}
	keys, err := p.writeRoot(ctx, ds, names, ids)
	changed = append(changed, keys...)
	if len(changed) > 0 {
		p.log.Info("discovery documents refreshed", "layers", len(names), "tile_sets", len(ds), "changed", len(changed))
	}
	return changed, err
}

// refreshTileSet is Refresh's work on one configured tile set: its
// documents rewritten where they differ (or removed when its grid cannot
// be described), if it has documents or tiles. It returns its description
// (nil when it has neither, or cannot be described) and the keys changed.
func (p *Publisher) refreshTileSet(ctx context.Context, c candidate) (*description, []string, error) {
	var changed []string
	tileMapKey := c.set.Dir() + tileMapName
	_, found, err := p.tiles.Stat(ctx, tileMapKey)
	if err != nil {
		return nil, changed, err
	}
	if !found {
		if has, err := p.hasTiles(ctx, c.set); err != nil || !has {
			return nil, nil, err
		}
	}
	d, err := p.describe(ctx, c)
	if errors.Is(err, ErrUndescribable) {
		p.log.Warn("no discovery documents for tile set", "layer", c.layer.Name, "grid_set", c.set.GridSetID,
			"format", c.mime, "error", err)
		keys, err := p.removeIfPresent(ctx, tileMapKey, c.set.Dir()+tileJSONName, c.set.Dir()+tileJSONXYZName)
		changed = append(changed, keys...)
		return nil, changed, err
	}
	if err != nil {
		return nil, changed, err
	}
	keys, err := p.writeTileSet(ctx, d)
	changed = append(changed, keys...)
	if err != nil {
		return nil, changed, err
	}
	if !d.mercator { // the grid set may have been one
		keys, err := p.removeIfPresent(ctx, c.set.Dir()+tileJSONName, c.set.Dir()+tileJSONXYZName)
		changed = append(changed, keys...)
		if err != nil {
			return nil, changed, err
		}
	}
	return d, changed, nil
}

// ogcCollectionOf returns the layer id of an OGC API document of one
// layer (under ogcapi/collections/{id}); ok is false for the others.
func ogcCollectionOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, ogcDir+"collections/")
	if !ok {
		return "", false
	}
	if id, _, found := strings.Cut(rest, "/"); found {
		return id, true
	}
	return strings.CutSuffix(rest, ".json")
}

// writeTileSet writes the documents of d that differ from the stored ones.
func (p *Publisher) writeTileSet(ctx context.Context, d *description) ([]string, error) {
	if d.mime == vectortile.MVT { // GeoJSON tiles have no layers to list
		layers, err := p.vectorLayers(ctx, d.set)
		if err != nil {
			return nil, err
		}
		d.vectorLayers = layers
	}
	tm, err := tileMap(d, p.baseURL)
	if err != nil {
		return nil, fmt.Errorf("render %s of %s: %w", tileMapName, d.set.Dir(), err)
	}
	docs := []document{{d.set.Dir() + tileMapName, tm, xmlMeta}}
	for _, name := range [...]string{tileJSONName, tileJSONXYZName} {
		tj, ok, err := tileJSON(d, p.baseURL, name == tileJSONXYZName)
		if err == nil && len(tj) > maxTileSetDocument && len(d.vectorLayers) > 0 {
			p.log.Warn("TileJSON too large: published with vector_layers empty", "key", d.set.Dir()+name,
				"bytes", len(tj), "limit", maxTileSetDocument, "vector_layers", len(d.vectorLayers))
			d.vectorLayers = nil
			tj, ok, err = tileJSON(d, p.baseURL, name == tileJSONXYZName)
		}
		if err != nil {
			return nil, fmt.Errorf("render %s of %s: %w", name, d.set.Dir(), err)
		}
		if ok {
			docs = append(docs, document{d.set.Dir() + name, tj, jsonMeta})
		}
	}
	var changed []string
	for _, doc := range docs {
		if !p.fits(doc, maxTileSetDocument) {
			continue
		}
		ch, err := p.write(ctx, doc, nil)
		if err != nil {
			return changed, err
		}
		if ch {
			changed = append(changed, doc.key)
		}
	}
	if len(changed) > 0 {
		p.log.Info("discovery documents written", "layer", d.layer.Name, "grid_set", d.set.GridSetID,
			"format", d.mime, "parameters_id", d.set.ParametersID, "keys", changed)
	}
	return changed, nil
}

// writeRoot writes index.json and tms.xml for ds where they differ, and
// removes the capabilities of those of the layers called names that have
// no tile set in ds. The documents of single layers (their WMTS
// capabilities, their OGC API collections) are written for the layers
// whose ids are in ids, or all when ids is nil: a layer's depend on its
// own tile sets alone.
//
// The shared documents (index.json, tms.xml, the root WMTS capabilities,
// the OGC API landing page and collections) leave private layers out; a
// private layer's own documents (its WMTS capabilities, its OGC API
// collection) are written as any layer's, under paths the origin and the
// edge serve only with a tile token for it.
func (p *Publisher) writeRoot(ctx context.Context, ds []*description, names []string, ids map[string]bool) ([]string, error) {
	public := publicOf(ds)
	idx, err := index(public, p.now())
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", indexName, err)
	}
	tms, err := tileMapService(public, p.baseURL)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", tmsName, err)
	}
	docs := []struct {
		document
		same func(stored, fresh []byte) bool
	}{
		{document{p.rootKey(indexName), idx, jsonMeta}, sameIndex},
		{document{p.rootKey(tmsName), tms, xmlMeta}, nil},
	}
	// WMTS capabilities: every tile set at the root, each layer's under
	// its id.
	wmts, err := wmtsCapabilities(public, p.baseURL)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", wmtsName, err)
	}
	docs = append(docs, struct {
		document
		same func(stored, fresh []byte) bool
	}{document{p.rootKey(wmtsName), wmts, xmlMeta}, nil})
	// WMS-C capabilities: the public tile sets of the default parameters.
	wmsc, err := wmscCapabilities(public, p.baseURL)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", wmscName, err)
	}
	docs = append(docs, struct {
		document
		same func(stored, fresh []byte) bool
	}{document{p.rootKey(wmscName), wmsc, xmlMeta}, nil})
	layerIDs, byLayer := byLayerID(ds)
	for _, id := range layerIDs {
		if ids != nil && !ids[id] {
			continue
		}
		data, err := wmtsCapabilities(byLayer[id], p.baseURL)
		if err != nil {
			return nil, fmt.Errorf("render %s of layer %s: %w", wmtsName, id, err)
		}
		docs = append(docs, struct {
			document
			same func(stored, fresh []byte) bool
		}{document{tilestore.LayerPrefix(p.prefix, id) + wmtsName, data, xmlMeta}, nil})
	}
	// OGC API – Tiles: the landing page and everything under ogcapi/.
	tmsIDs := grid.TileMatrixSetIDs(p.layers.GridSets())
	ogc, err := ogcAPIDocuments(ds, p.baseURL, tmsIDs)
	if err != nil {
		return nil, fmt.Errorf("render the OGC API documents: %w", err)
	}
	if len(public) < len(ds) {
		// Every collection's own documents, the shared ones of the
		// public layers alone.
		shared, err := ogcAPIDocuments(public, p.baseURL, tmsIDs)
		if err != nil {
			return nil, fmt.Errorf("render the OGC API documents: %w", err)
		}
		for k := range ogc {
			if _, own := ogcCollectionOf(k); !own {
				if doc, ok := shared[k]; ok {
					ogc[k] = doc
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(ogc)) {
		if id, ok := ogcCollectionOf(k); ok && ids != nil && !ids[id] {
			continue
		}
		docs = append(docs, struct {
			document
			same func(stored, fresh []byte) bool
		}{document{p.rootKey(k), ogc[k], jsonMeta}, nil})
	}
	var changed []string
	for _, doc := range docs {
		if !p.fits(doc.document, maxRootDocument) {
			continue
		}
		ch, err := p.write(ctx, doc.document, doc.same)
		if err != nil {
			return changed, err
		}
		if ch {
			changed = append(changed, doc.key)
		}
	}
	// OGC API documents no longer rendered (a layer or grid set gone).
	var gone []string
	err = p.tiles.List(ctx, p.rootKey(ogcDir), func(o tilestore.Object) error {
		if _, ok := ogc[strings.TrimPrefix(o.Key, p.rootKey(""))]; !ok {
			gone = append(gone, o.Key)
		}
		return nil
	})
	if err != nil {
		return changed, fmt.Errorf("list the OGC API documents: %w", err)
	}
	if len(gone) > 0 {
		if _, err := p.tiles.Delete(ctx, gone); err != nil {
			return changed, fmt.Errorf("delete stale OGC API documents: %w", err)
		}
		changed = append(changed, gone...)
	}
	// A configured layer without tile sets any more has no capabilities.
	var stale []string
	for _, name := range names {
		if l, ok := p.layers.Layer(name); ok && byLayer[l.ID] == nil {
			stale = append(stale, tilestore.LayerPrefix(p.prefix, l.ID)+wmtsName)
		}
	}
	removed, err := p.removeIfPresent(ctx, stale...)
	return append(changed, removed...), err
}

// fits reports whether doc is at most limit bytes, warning when it is not:
// it is then not written, and the copy stored before (if any) stays.
func (p *Publisher) fits(doc document, limit int) bool {
	if len(doc.data) <= limit {
		return true
	}
	p.log.Warn("discovery document too large: not written", "key", doc.key, "bytes", len(doc.data), "limit", limit)
	return false
}

// write stores doc unless the stored copy has the same meta and content
// (bytes.Equal unless same is given), and reports whether it wrote.
func (p *Publisher) write(ctx context.Context, doc document, same func(stored, fresh []byte) bool) (bool, error) {
	if same == nil {
		same = bytes.Equal
	}
	stored, meta, found, err := p.tiles.Get(ctx, doc.key)
	if err != nil {
		return false, fmt.Errorf("read discovery document: %w", err)
	}
	if found && meta == doc.meta && same(stored, doc.data) {
		return false, nil
	}
	if err := p.tiles.Put(ctx, doc.key, doc.data, doc.meta); err != nil {
		return false, fmt.Errorf("write discovery document: %w", err)
	}
	return true, nil
}

// removeIfPresent deletes those of keys that exist and returns them.
func (p *Publisher) removeIfPresent(ctx context.Context, keys ...string) ([]string, error) {
	var present []string
	for _, k := range keys {
		_, found, err := p.tiles.Stat(ctx, k)
		if err != nil {
			return nil, err
		}
		if found {
			present = append(present, k)
		}
	}
	if len(present) == 0 {
		return nil, nil
	}
	if _, err := p.tiles.Delete(ctx, present); err != nil {
		return nil, fmt.Errorf("delete discovery documents: %w", err)
	}
	return present, nil
}

// removeUnconfigured deletes the documents of the tile sets listed in the
// stored index.json that the layer file no longer has. An unreadable index
// is logged and skipped: it is rebuilt afterwards.
func (p *Publisher) removeUnconfigured(ctx context.Context) ([]string, error) {
	entries, _, err := p.storedIndex(ctx)
	if err != nil {
		return nil, err
	}
	return p.removeUnconfiguredOf(ctx, entries)
}

// storedIndex returns the entries of the stored index.json; ok is false
// when it is unreadable (logged). None is stored: no entries, ok.
func (p *Publisher) storedIndex(ctx context.Context) (entries []indexEntry, ok bool, err error) {
	data, _, found, err := p.tiles.Get(ctx, p.rootKey(indexName))
	if err != nil || !found {
		return nil, err == nil, err
	}
	entries, err = parseIndex(data)
	if err != nil {
		p.log.Warn("ignoring unreadable discovery index", "key", p.rootKey(indexName), "error", err)
		return nil, false, nil
	}
	return entries, true, nil
}

// removeUnconfiguredOf deletes the documents of the tile sets of entries
// (the stored index's) that the layer file no longer has.
func (p *Publisher) removeUnconfiguredOf(ctx context.Context, entries []indexEntry) ([]string, error) {
	var changed []string
	for _, e := range entries {
		if p.configured(e) || !safeSegments(e.LayerID, e.GridSet, e.FormatID, e.ParametersID) {
			continue
		}
		dir := tilestore.TileSet{SetName: tilestore.SetName{Layer: e.Layer, GridSetID: e.GridSet, FormatID: e.FormatID,
			ParametersID: e.ParametersID}, Prefix: p.prefix, LayerID: e.LayerID}.Dir()
		docs := []string{dir + tileMapName, dir + tileJSONName, dir + tileJSONXYZName}
		if !p.layerConfigured(e.LayerID) {
			docs = append(docs, tilestore.LayerPrefix(p.prefix, e.LayerID)+wmtsName)
		}
		keys, err := p.removeIfPresent(ctx, docs...)
		changed = append(changed, keys...)
		if err != nil {
			return changed, err
		}
		if len(keys) > 0 {
			p.log.Info("removed discovery documents of unconfigured tile set", "layer_id", e.LayerID,
				"grid_set", e.GridSet, "format_id", e.FormatID, "parameters_id", e.ParametersID)
		}
	}
	return changed, nil
}

// layerConfigured reports whether the layer file has a layer of id.
func (p *Publisher) layerConfigured(id string) bool {
	_, ok := p.layers.ByID(id)
	return ok
}

// configured reports whether the layer file has e's layer id, grid set and
// format.
func (p *Publisher) configured(e indexEntry) bool {
	l, ok := p.layers.ByID(e.LayerID)
	if !ok {
		return false
	}
	if _, ok := l.Subset(e.GridSet); !ok {
		return false
	}
	for _, f := range l.Formats {
		if id, _, _ := tilestore.Format(f); id == e.FormatID {
			return true
		}
	}
	return false
}

// safeSegments reports whether each of segs can be a key segment, so that
// a damaged index cannot point a delete elsewhere.
func safeSegments(segs ...string) bool {
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\\") {
			return false
		}
	}
	return true
}

func (p *Publisher) rootKey(name string) string {
	if p.prefix == "" {
		return name
	}
	return strings.TrimSuffix(p.prefix, "/") + "/" + name
}

// vectorLayers returns the layers of the first tile stored of a vector
// tile set (in key order: the lowest level's first, which at level 0
// covers the whole grid and so holds every layer the upstream draws
// anywhere), for TileJSON's vector_layers: one LIST that stops at the
// first tile and one GET. None when no tile is stored yet, or when the
// stored tile is not a valid vector tile (it was checked when stored: it
// was replaced by hand), which is logged.
func (p *Publisher) vectorLayers(ctx context.Context, set tilestore.TileSet) ([]vectortile.Layer, error) {
	first := ""
	err := p.tiles.List(ctx, set.Dir(), func(o tilestore.Object) error {
		if _, _, _, ok := set.ParseKey(o.Key); ok {
			first = o.Key
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("find a tile of %s: %w", set.Dir(), err)
	}
	if first == "" {
		return nil, nil
	}
	data, _, found, err := p.tiles.Get(ctx, first)
	if err != nil || !found {
		return nil, err
	}
	vt, err := vectortile.Parse(data, vectortile.MaxSize)
	if err != nil {
		p.log.Warn("stored vector tile does not parse: no vector_layers", "key", first, "error", err)
		return nil, nil
	}
	layers, dropped := listedLayers(vt.Layers)
	if dropped > 0 {
		p.log.Warn("vector_layers left out of the TileJSON: past the limits of what it lists", "key", first,
			"layers_and_fields", dropped, "max_layers", maxVectorLayers, "max_fields", maxVectorFields, "max_name_bytes", maxVectorName)
	}
	return layers, nil
}

// listedLayers returns what vector_layers lists of layers: at most
// maxVectorLayers layers of at most maxVectorFields fields (keys with a
// type), none of a name longer than maxVectorName bytes; and how many
// layers and fields it leaves out.
func listedLayers(layers []vectortile.Layer) (listed []vectortile.Layer, dropped int) {
	for _, l := range layers {
		if len(l.Name) > maxVectorName || len(listed) == maxVectorLayers {
			dropped++
			continue
		}
		out := vectortile.Layer{Name: l.Name, Features: l.Features, Geometry: l.Geometry}
		for i, k := range l.Keys {
			if l.KeyTypes[i] == "" {
				continue // not a field: no feature gives it a value
			}
			if len(k) > maxVectorName || len(out.Keys) == maxVectorFields {
				dropped++
				continue
			}
			out.Keys = append(out.Keys, k)
			out.KeyTypes = append(out.KeyTypes, l.KeyTypes[i])
		}
		listed = append(listed, out)
	}
	return listed, dropped
}

// publicOf returns the descriptions of the tile sets of public layers.
func publicOf(ds []*description) []*description {
	var out []*description
	for _, d := range ds {
		if !d.layer.Private {
			out = append(out, d)
		}
	}
	return out
}

// withPrivate returns names with the names of the catalogue's private
// layers added (each once).
func withPrivate(names []string, layers *layer.Catalogue) []string {
	out := slices.Clone(names)
	for _, n := range layers.Names() {
		if l, ok := layers.Layer(n); ok && l.Private && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
