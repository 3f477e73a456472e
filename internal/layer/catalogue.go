package layer

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"unicode"

	"gopkg.in/yaml.v3"

	"tilecache/internal/area"
	"tilecache/internal/grid"
	"tilecache/internal/tilestore"
)

//go:embed demo.yaml
var demoConfig []byte

// Catalogue is the set of configured layers and grid sets. What one holds
// is immutable, but a live catalogue (see Registry) is replaced as a whole
// when the configuration changes: every method reads the contents current
// at its call. Code that needs several answers from one configuration
// takes a Snapshot first.
type Catalogue struct {
	cur atomic.Pointer[contents]
}

// contents is one configuration, immutable once built.
type contents struct {
	layers   map[string]*slot  // by name (see lazy.go)
	ids      map[string]string // layer id → name
	names    []string
	gridSets map[string]*grid.GridSet // built in and custom, by id
	gridInfo map[string]GridSetInfo   // custom grid sets' entries
	// The layer file entries the configuration was built from, for the
	// documents of single layers (see Document) and the fingerprints,
	// each as yaml.Marshal writes it alone: kept as text, a layer's entry
	// holds a fifteenth of the memory of its node tree. A layer's is in
	// its slot.
	gridEntries map[string][]byte // custom grid sets', by id
	// version is the stored configuration's version it holds (0: none).
	version int64
	// deleting are the stored configuration's deletion marks.
	deleting []Deletion
}

func (c *Catalogue) get() *contents { return c.cur.Load() }

// Snapshot returns a catalogue that keeps the current contents for good.
func (c *Catalogue) Snapshot() *Catalogue {
	s := &Catalogue{}
	s.cur.Store(c.get())
	return s
}

// replace makes next's contents the current ones.
func (c *Catalogue) replace(next *Catalogue) { c.cur.Store(next.get()) }

// Version is the version of the stored configuration the contents hold
// (0: the layer file alone).
func (c *Catalogue) Version() int64 { return c.get().version }

// ReservedID is the first key segment of the service's own objects in the
// tile store (the areas of requests, say); no layer may have it as its id.
const ReservedID = "_tilecache"

// MaxMetatilePixels is the largest metatile (with its gutter) a WMS layer
// may ask for, in pixels: the largest image the image code decodes
// (imaging.MaxPixels, which a test keeps equal). The layer model holds its
// own copy so that what reads layers (the log function, the tile origin's
// routing) does not link the image code.
const MaxMetatilePixels = 1 << 26

// edgeIDs are the first path segments the CDN's edge function maps to
// other keys (WMTS, XYZ and OGC API – Tiles paths, see
// internal/edgepath), and the OGC API landing page's key: a layer with one
// of them as its id could not be served.
var edgeIDs = []string{"wmts", "xyz", "ogcapi", "ogcapi.json"}

// OGCBindingsID is the first path segment of the OGC bindings the CDN
// sends to their own edge function or to the tile origin, never to the
// stored keys: WMTS KVP and WMS-C (/gwc/service/…) and the RESTful WMTS
// GetFeatureInfo (/gwc/featureinfo/…). A layer with it as its id would
// have tiles the CDN could not serve.
const OGCBindingsID = "gwc"

// rootIDs are the keys of the documents published at the root of the tile
// store (the discovery index and TMS root, the WMTS capabilities, the demo
// page) and the first path segments of `tilecache serve`'s own endpoints
// (the REST interface, tiles, metrics and the console):
// a layer or grid set with one of them as its id would overwrite a
// document or be shadowed by an endpoint.
var rootIDs = []string{"index.json", "index.html", "tms.xml", "WMTSCapabilities.xml", "WMSCapabilities.xml", "rest", "tiles", "metrics", "console"}

// checkID returns why id cannot be the id of a layer or grid set (what
// says which), nil when it can: ids are a segment of tile keys and of the
// CDN's paths, so they hold no / or \, are not . or .., and are none of
// the keys and paths the service keeps for itself.
func checkID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%s id is empty", what)
	case strings.ContainsAny(id, "/\\") || id == "." || id == "..":
		//lint:ignore ST1005 the ".." it ends with is the name forbidden, not punctuation
		return fmt.Errorf("id %q must not contain / or \\ and must not be . or ..", id)
	case strings.ContainsFunc(id, unicode.IsControl):
		return fmt.Errorf("id %q must not contain control characters", id)
	case id == ReservedID:
		return fmt.Errorf("id %q is reserved for the service's own objects in the store; give the %s another id", id, what)
	case id == tilestore.ArchivesDir:
		return fmt.Errorf("id %q is where the tile archives are served from; give the %s another id", id, what)
	case id == OGCBindingsID:
		return fmt.Errorf("id %q is the path of the OGC bindings (/gwc/service/wmts, /gwc/service/wms, /gwc/featureinfo/), "+
			"which the CDN does not serve from the stored keys; give the %s another id", id, what)
	case slices.Contains(edgeIDs, id):
		return fmt.Errorf("id %q is a path the CDN maps to other keys (%s); give the %s another id", id, strings.Join(edgeIDs, ", "), what)
	case slices.Contains(rootIDs, id):
		return fmt.Errorf("id %q is a document or endpoint of the service (%s); give the %s another id", id, strings.Join(rootIDs, ", "), what)
	}
	return nil
}

// Layer returns the named layer.
func (c *Catalogue) Layer(name string) (*Layer, bool) {
	s, ok := c.get().layers[name]
	if !ok {
		return nil, false
	}
	l := s.layer()
	return l, l != nil
}

// ByID returns the layer whose store id (the first segment of its tile
// keys) is id.
func (c *Catalogue) ByID(id string) (*Layer, bool) {
	k := c.get()
	name, ok := k.ids[id]
	if !ok {
		return nil, false
	}
	l := k.layers[name].layer()
	return l, l != nil
}

// TilesID returns the store id (the first segment of the tile keys) of
// the tiles kept under the layer name: the configured layer's id (known
// without building the layer), or a deleted layer's while its deletion
// mark is there, or else the name itself, a layer's default id, unless a
// configured layer has that id. ok is false for that last case: the
// name's tiles, if any, cannot be told apart from that layer's.
func (c *Catalogue) TilesID(name string) (id string, ok bool) {
	k := c.get()
	if s, found := k.layers[name]; found {
		return s.id, true
	}
	if d, found := k.deletion(name); found {
		return d.ID, true
	}
	if _, taken := k.ids[name]; taken {
		return "", false
	}
	return name, true
}

// Names returns the layer names in configuration order.
func (c *Catalogue) Names() []string { return append([]string(nil), c.get().names...) }

// GridSets returns the grid sets the layers use, each once, in the order of
// the layers and their subsets.
func (c *Catalogue) GridSets() []*grid.GridSet {
	k := c.get()
	seen := map[string]bool{}
	var sets []*grid.GridSet
	for _, name := range k.names {
		for _, id := range k.layers[name].gridIDs() {
			if g, ok := k.gridSets[id]; ok && !seen[id] {
				seen[id] = true
				sets = append(sets, g)
			}
		}
	}
	return sets
}

// GridSet returns the grid set with the given id, built in or defined in
// the layer file (whether a layer uses it or not), and what its entry says
// beyond the grid (the zero GridSetInfo for a built-in one).
func (c *Catalogue) GridSet(id string) (*grid.GridSet, GridSetInfo, bool) {
	k := c.get()
	g, ok := k.gridSets[id]
	return g, k.gridInfo[id], ok
}

// GridSetIDs returns the ids of every grid set, built in or defined in the
// layer file, sorted.
func (c *Catalogue) GridSetIDs() []string {
	return slices.Sorted(maps.Keys(c.get().gridSets))
}

// Demo returns the bundled demo catalogue.
func Demo() (*Catalogue, error) { return Parse(demoConfig, "bundled demo config") }

// ReadFile returns a layer file's content and its name for messages; an
// empty path means the bundled demo config.
func ReadFile(path string) ([]byte, string, error) {
	if path == "" {
		return demoConfig, "bundled demo config", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("read layer file: %w", err)
	}
	return data, path, nil
}

// Load reads a layer file; an empty path means the bundled demo config.
func Load(path string) (*Catalogue, error) {
	if path == "" {
		return Demo()
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read layer file: %w", err)
	}
	return Parse(data, path)
}

type fileDoc struct {
	GridSets []GridSetEntry `yaml:"gridSets"`
	Layers   []Entry        `yaml:"layers"`
}

func extent(v []float64) (grid.Extent, error) {
	if len(v) != 4 {
		return grid.Extent{}, fmt.Errorf("extent needs 4 numbers (minx, miny, maxx, maxy), got %d", len(v))
	}
	e := grid.Extent{MinX: v[0], MinY: v[1], MaxX: v[2], MaxY: v[3]}
	if !e.Valid() {
		return grid.Extent{}, fmt.Errorf("extent %v is not a finite box with min < max", v)
	}
	return e, nil
}

// Parse reads a layer file's content; name is used in error messages. Every
// problem found is reported, joined.
func Parse(data []byte, name string) (*Catalogue, error) {
	return parse(data, name, parseOptions{})
}

type parseOptions struct {
	// allowEmpty accepts a configuration without layers (layers may all
	// be managed at run time).
	allowEmpty bool
	// stored names the layers and grid sets that come from the stored
	// configuration: they are managed by the store whatever their entry
	// says.
	storedLayers, storedGridSets map[string]bool
	version                      int64
}

// rawDoc is a layer file's entries as YAML nodes, in the order of fileDoc's.
type rawDoc struct {
	GridSets []yaml.Node `yaml:"gridSets"`
	Layers   []yaml.Node `yaml:"layers"`
}

func parse(data []byte, name string, opts parseOptions) (*Catalogue, error) {
	var doc fileDoc
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	var raw rawDoc
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	gridSets := map[string]*grid.GridSet{}
	for _, g := range grid.Builtins() {
		gridSets[g.ID] = g
	}
	k := &contents{layers: map[string]*slot{}, ids: map[string]string{}, gridSets: gridSets, gridInfo: map[string]GridSetInfo{},
		gridEntries: map[string][]byte{}, version: opts.version}
	alone := newStandalone(len(data))
	for i, gd := range doc.GridSets {
		g, info, err := buildGridSet(gd)
		if err != nil {
			fail("gridSets[%d] %q: %v", i, gd.ID, err)
			continue
		}
		entry, err := alone.text(&raw.GridSets[i])
		if err != nil {
			fail("gridSets[%d] %q: %v", i, gd.ID, err)
			continue
		}
		if _, dup := gridSets[g.ID]; dup {
			fail("gridSets[%d]: grid set %q is defined twice", i, g.ID)
			continue
		}
		if opts.storedGridSets[g.ID] {
			info.Managed = ManagedByStore
		}
		gridSets[g.ID] = g
		k.gridInfo[g.ID] = info
		k.gridEntries[g.ID] = entry
	}

	ids := map[string]string{} // id → the layer that has it
	for i, ld := range doc.Layers {
		l, lerrs := buildLayer(ld, gridSets)
		for _, e := range lerrs {
			fail("layers[%d] %q: %v", i, ld.Name, e)
		}
		if l == nil {
			continue
		}
		entry, err := alone.text(&raw.Layers[i])
		if err != nil {
			fail("layers[%d] %q: %v", i, ld.Name, err)
			continue
		}
		if _, dup := k.layers[l.Name]; dup {
			fail("layers[%d]: layer %q is defined twice", i, l.Name)
			continue
		}
		if other, dup := ids[l.ID]; dup {
			// One key prefix for two layers: each would truncate, count and
			// expire the other's tiles.
			fail("layers[%d] %q: id %q is already the id of layer %q (ids name the layers' keys and must differ)", i, l.Name, l.ID, other)
			continue
		}
		if opts.storedLayers[l.Name] {
			l.Managed = ManagedByStore
		}
		ids[l.ID] = l.Name
		k.ids[l.ID] = l.Name
		k.layers[l.Name] = builtSlot(l, entry)
		k.names = append(k.names, l.Name)
		l.Version = fingerprintOf(entry, l, k.gridEntries)
	}
	if len(doc.Layers) == 0 && !opts.allowEmpty {
		fail("no layers defined")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid layer file %s: %w", name, errors.Join(errs...))
	}
	c := &Catalogue{}
	c.cur.Store(k)
	return c, nil
}

// layersBuilt counts buildLayer's calls: the tests check that a change
// builds the layers it touches, not the whole configuration.
var layersBuilt atomic.Int64

func buildLayer(ld Entry, gridSets map[string]*grid.GridSet) (*Layer, []error) {
	layersBuilt.Add(1)
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if strings.TrimSpace(ld.Name) == "" || strings.ContainsAny(ld.Name, "/\\") {
		fail("name must be non-empty and must not contain / or \\")
	}
	l := &Layer{Name: ld.Name, ID: ld.ID, Title: ld.Title, Attribution: ld.Attribution, Description: ld.Description,
		Enabled: ld.Enabled == nil || *ld.Enabled, Formats: ld.Formats,
		Gutter: ld.Gutter, CacheControl: ld.CacheControl, Private: ld.Private, FeatureInfo: ld.FeatureInfo, MetaWidth: 4, MetaHeight: 4,
		Managed: ManagedByFile}
	switch {
	case ld.ManagedBy == "":
	case ld.ManagedBy.valid():
		l.Managed = ld.ManagedBy
	default:
		fail("managedBy %q: give file or store", ld.ManagedBy)
	}
	if l.ID == "" {
		l.ID = l.Name
	}
	if strings.TrimSpace(l.Title) == "" {
		l.Title = l.Name
	}
	if err := checkID("layer", l.ID); err != nil {
		errs = append(errs, err)
	}
	switch len(ld.Metatiling) {
	case 0:
	case 2:
		l.MetaWidth, l.MetaHeight = ld.Metatiling[0], ld.Metatiling[1]
		if l.MetaWidth < 1 || l.MetaHeight < 1 || l.MetaWidth > 64 || l.MetaHeight > 64 {
			fail("metatiling %v: both factors must be 1..64", ld.Metatiling)
		}
	default:
		fail("metatiling needs two numbers [width, height], got %v", ld.Metatiling)
	}
	if l.Gutter < 0 || l.Gutter > 1024 {
		fail("gutter %d must be 0..1024 pixels", l.Gutter)
	}
	if len(l.Formats) == 0 {
		fail("formats: at least one format is required")
	}
	for _, f := range l.Formats {
		if _, _, ok := tilestore.Format(f); !ok {
			fail("formats: unknown format %q", f)
		}
	}
	if len(ld.GridSubsets) == 0 {
		fail("gridSubsets: at least one grid subset is required")
	}
	for j, sd := range ld.GridSubsets {
		g, ok := gridSets[sd.GridSet]
		if !ok {
			fail("gridSubsets[%d]: unknown grid set %q", j, sd.GridSet)
			continue
		}
		var cov *grid.Extent
		if sd.Extent != nil {
			e, err := extent(sd.Extent)
			if err != nil {
				fail("gridSubsets[%d]: %v", j, err)
				continue
			}
			cov = &e
		}
		s, err := grid.NewSubset(g, cov, sd.ZoomStart, sd.ZoomStop)
		if err != nil {
			fail("gridSubsets[%d] %s: %v", j, sd.GridSet, err)
			continue
		}
		if _, dup := l.Subset(g.ID); dup {
			fail("gridSubsets[%d]: grid set %s listed twice", j, g.ID)
			continue
		}
		l.Subsets = append(l.Subsets, s)
		if err := l.setCachedLevels(s, sd.MinCachedLevel, sd.MaxCachedLevel); err != nil {
			fail("gridSubsets[%d] %s: %v", j, sd.GridSet, err)
		}
	}
	var err error
	if l.ClientExpiry, err = buildExpiry("expireClients", ld.ExpireClients, ld.ExpireClientsList); err != nil {
		fail("%v", err)
	}
	if l.CacheExpiryRules, err = buildExpiry("expireCache", ld.ExpireCache, ld.ExpireCacheList); err != nil {
		fail("%v", err)
	}
	if l.ClientExpiry != nil && l.CacheControl != "" {
		fail("give either cacheControl or expireClients/expireClientsList, not both (both set the tiles' Cache-Control)")
	}
	if cd := ld.Coverage; cd != nil {
		geom, srs, err := area.Parse(cd.Geometry)
		if err != nil {
			fail("coverage: %v", err)
		} else {
			if cd.SRS != 0 {
				srs = cd.SRS
			}
			l.Coverage = &Coverage{Geometry: cd.Geometry, SRS: cd.SRS, Buffer: cd.Buffer}
			l.Areas = map[string]*area.Shape{}
			for _, sub := range l.Subsets {
				shape, err := area.Prepare(sub.GridSet, []area.Spec{{Geometry: geom, SRS: srs, Buffer: cd.Buffer, ZoomStart: -1, ZoomStop: -1}})
				if err != nil {
					fail("coverage for grid set %s: %v", sub.GridSet.ID, err)
					continue
				}
				l.Areas[sub.GridSet.ID] = shape
			}
		}
	}
	for j, fd := range ld.ParameterFilters {
		f, err := buildFilter(fd)
		if err != nil {
			fail("parameterFilters[%d]: %v", j, err)
			continue
		}
		l.Filters = append(l.Filters, f)
	}
	if m := ld.RenderOnMiss; m != nil && m.Enabled {
		l.RenderOnMiss = &OnMiss{ZoomStart: 0, ZoomStop: -1}
		if m.ZoomStart != nil {
			l.RenderOnMiss.ZoomStart = *m.ZoomStart
		}
		if m.ZoomStop != nil {
			l.RenderOnMiss.ZoomStop = *m.ZoomStop
		}
		if l.RenderOnMiss.ZoomStart < 0 || (m.ZoomStop != nil && *m.ZoomStop < l.RenderOnMiss.ZoomStart) || l.RenderOnMiss.ZoomStop > 64 {
			fail("renderOnMiss: zoomStart %d and zoomStop %v must satisfy 0 ≤ zoomStart ≤ zoomStop ≤ 64",
				l.RenderOnMiss.ZoomStart, l.RenderOnMiss.ZoomStop)
		}
	}
	if src := ld.Source.read; src == nil && ld.Source.Type == "" || src != nil && src.Kind != yaml.MappingNode {
		fail("source: a mapping with a type is required")
	} else {
		st := struct {
			Type         string `yaml:"type"`
			AllowPrivate bool   `yaml:"allowPrivateUpstream"`
		}{ld.Source.Type, ld.Source.AllowPrivateUpstream}
		if src != nil {
			st.Type, st.AllowPrivate = "", false
			if err := src.Decode(&st); err != nil {
				st.Type = ""
			}
		}
		if st.Type == "" {
			fail("source: type is required")
		}
		l.SourceType = st.Type
		if st.AllowPrivate && l.Managed == ManagedByStore {
			// What the REST interface changes may not reach the service's
			// own host and network (the sources ignore it there too).
			fail("source: allowPrivateUpstream is for layers managed by the layer file, not by the store (TILECACHE_UPSTREAM_ALLOW names networks every layer may reach)")
		}
		var err error
		if l.Source, err = ld.Source.node(); err != nil {
			fail("%v", err)
		}
	}
	if l.SourceType == TypeWMS {
		// A WMS answers a metatile in one image, which must decode.
		for _, sub := range l.Subsets {
			w := int64(l.MetaWidth*sub.GridSet.TileWidth + 2*l.Gutter)
			h := int64(l.MetaHeight*sub.GridSet.TileHeight + 2*l.Gutter)
			if w*h > MaxMetatilePixels {
				fail("metatiling %dx%d with gutter %d: a %s metatile is %d×%d pixels, more than the %d a decoded image may have (use smaller metatiles)",
					l.MetaWidth, l.MetaHeight, l.Gutter, sub.GridSet.ID, w, h, MaxMetatilePixels)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return l, nil
}
