package layer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"tilecache/internal/apperr"
)

// Managed says where a layer or grid set is changed.
type Managed string

// The places a layer or grid set is managed in.
const (
	// ManagedByFile: the layer file holds it; the REST interface cannot
	// change it (for configuration kept in git).
	ManagedByFile Managed = "file"
	// ManagedByStore: the stored configuration holds it; the REST
	// interface changes it. In the layer file, an entry marked so is
	// copied into the store when the store holds no configuration yet
	// (the first start), and the store's entry is the one used after.
	ManagedByStore Managed = "store"
)

func (m Managed) valid() bool { return m == ManagedByFile || m == ManagedByStore }

// fingerprintOf is a layer's Version: a hash of its entry and of the
// entries of the custom grid sets it uses.
func fingerprintOf(entry []byte, l *Layer, gridEntries map[string][]byte) string {
	h := sha256.New()
	for _, b := range entriesOf(entry, l, gridEntries) {
		h.Write(b)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// GridSetVersion fingerprints a custom grid set's entry (the ETag of its
// document); "" for a built-in grid set or none.
func (c *Catalogue) GridSetVersion(id string) string {
	b, ok := c.get().gridEntries[id]
	if !ok {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// UsersOf lists the layers that use grid set id, in configuration order.
func (c *Catalogue) UsersOf(id string) []string {
	k := c.get()
	var out []string
	for _, n := range k.names {
		if slices.Contains(k.layers[n].gridIDs(), id) {
			out = append(out, n)
		}
	}
	return out
}

// entriesOf returns the layer's entry followed by the entries of the
// custom grid sets it uses.
func entriesOf(entry []byte, l *Layer, gridEntries map[string][]byte) [][]byte {
	out := [][]byte{entry}
	for _, s := range l.Subsets {
		if b, ok := gridEntries[s.GridSet.ID]; ok {
			out = append(out, b)
		}
	}
	return out
}

// entryDoc is a layer file of entries (and, in the stored configuration,
// the deletion marks).
type entryDoc struct {
	GridSets []*yaml.Node `yaml:"gridSets,omitempty"`
	Layers   []*yaml.Node `yaml:"layers"`
	Deleting []Deletion   `yaml:"deleting,omitempty"`
}

func marshalEntries(d entryDoc) ([]byte, error) {
	if d.Layers == nil {
		d.Layers = []*yaml.Node{}
	}
	out, err := yaml.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("write layer file: %w", err)
	}
	return out, nil
}

// Document returns the definition of the named layer as a layer file of
// its own: its entry and those of the custom grid sets it uses. A seed
// records it, so that it keeps the definition it started with
// (ParseDefinition reads it back).
func (c *Catalogue) Document(name string) ([]byte, bool) {
	k := c.get()
	s, ok := k.layers[name]
	if !ok || s.layer() == nil {
		return nil, false
	}
	var entries []*yaml.Node
	for _, b := range entriesOf(s.entry, s.l, k.gridEntries) {
		n, err := readEntry(b)
		if err != nil {
			return nil, false
		}
		entries = append(entries, n)
	}
	out, err := marshalEntries(entryDoc{GridSets: entries[1:], Layers: entries[:1]})
	return out, err == nil
}

// ParseDefinition reads a layer's Document back.
func ParseDefinition(doc []byte, name string) (*Layer, error) {
	c, err := Parse(doc, "the recorded definition of layer "+name)
	if err != nil {
		return nil, err
	}
	l, ok := c.Layer(name)
	if !ok {
		return nil, fmt.Errorf("the recorded definition of layer %s does not define it", name)
	}
	return l, nil
}

// nodeConfig is a document's entries as YAML nodes (each standing
// alone: aliases expanded) and its deletion marks: what merge reads.
type nodeConfig struct {
	gridSets, layers []*yaml.Node
	deleting         []Deletion
}

// parseNodes reads a layer file or a stored configuration's document
// (empty: none) into its entries' nodes.
func parseNodes(doc []byte) (*nodeConfig, error) {
	var raw rawDoc // yaml.v3 fills []yaml.Node, not []*yaml.Node
	if err := yaml.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("parse the stored configuration: %w", err)
	}
	alone := newStandalone(len(doc))
	entries := func(ns []yaml.Node) ([]*yaml.Node, error) {
		out := make([]*yaml.Node, len(ns))
		for i := range ns {
			n, err := alone.entry(&ns[i])
			if err != nil {
				return nil, fmt.Errorf("parse the stored configuration: entry %d: %w", i, err)
			}
			out[i] = n
		}
		return out, nil
	}
	gridSets, err := entries(raw.GridSets)
	if err != nil {
		return nil, err
	}
	layers, err := entries(raw.Layers)
	if err != nil {
		return nil, err
	}
	var marks struct {
		Deleting []Deletion `yaml:"deleting"`
	}
	if err := yaml.Unmarshal(doc, &marks); err != nil {
		return nil, fmt.Errorf("parse the stored configuration's deletion marks: %w", err)
	}
	return &nodeConfig{gridSets: gridSets, layers: layers, deleting: marks.Deleting}, nil
}

// entryKey returns an entry's name (a layer's) or id (a grid set's): the
// value of field in the entry's mapping ("" when none).
func entryKey(n *yaml.Node, field string) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k, v := n.Content[i], n.Content[i+1]; k.Value == field && v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	return ""
}

// entryNode parses one entry (a YAML mapping) and checks its key field.
func entryNode(entry []byte, field, want string) (*yaml.Node, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(entry, &n); err != nil || len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil, apperr.Invalidf("an entry must be one YAML mapping")
	}
	if got := entryKey(n.Content[0], field); got != want {
		return nil, apperr.Invalidf("the entry's %s is %q, not %q", field, got, want)
	}
	return n.Content[0], nil
}

// Merge builds the catalogue of a layer file and a stored configuration:
//   - the file's entries managed by the file (the default) are used as
//     they are; a stored entry of the same name is ignored (and named in
//     the warnings);
//   - the stored entries are used, managed by the store;
//   - the file's entries marked `managedBy: store` are used only while the
//     store holds no configuration (stored.Version 0): after the first
//     start copied them (see Registry), the store's are the ones.
//
// A stored entry that does not fit the file (it uses a grid set the file
// no longer defines, or has the id of a file layer, say) is skipped and
// named in the warnings; the rest are kept. The error is the file's own,
// or a stored document that cannot be read at all.
func Merge(file []byte, fileName string, stored StoredConfig) (*Catalogue, []string, error) {
	c, warnings, _, err := merge(file, fileName, stored)
	return c, warnings, err
}

// merge is Merge that also names the stored entries it skipped ("layer
// x", "grid set y") with the reason.
func merge(file []byte, fileName string, stored StoredConfig) (*Catalogue, []string, map[string]error, error) {
	fileCfg, err := parseNodes(file)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse %s: %w", fileName, err)
	}
	storedCfg, err := parseNodes(stored.Doc)
	if err != nil {
		return nil, nil, nil, err
	}
	var warnings []string
	opts := parseOptions{allowEmpty: true, storedLayers: map[string]bool{}, storedGridSets: map[string]bool{}, version: stored.Version}
	// split returns the entries used from the file and from the store.
	split := func(fileEntries, storedEntries []*yaml.Node, field, what string, isStored map[string]bool) (fromFile, fromStore []*yaml.Node) {
		inFile := map[string]bool{}
		for _, n := range fileEntries {
			key := entryKey(n, field)
			if Managed(entryKey(n, "managedBy")) == ManagedByStore {
				if stored.Version == 0 {
					fromStore = append(fromStore, n)
					isStored[key] = true
				}
				continue
			}
			inFile[key] = true
			fromFile = append(fromFile, n)
		}
		for _, n := range storedEntries {
			key := entryKey(n, field)
			if inFile[key] {
				warnings = append(warnings, fmt.Sprintf("%s %q is in %s and in the stored configuration: the file's is used", what, key, fileName))
				continue
			}
			isStored[key] = true
			fromStore = append(fromStore, n)
		}
		return fromFile, fromStore
	}
	fileGrids, storedGrids := split(fileCfg.gridSets, storedCfg.gridSets, "id", "grid set", opts.storedGridSets)
	fileLayers, storedLayers := split(fileCfg.layers, storedCfg.layers, "name", "layer", opts.storedLayers)
	name := fileName + " and the stored configuration"
	build := func(grids, layers []*yaml.Node) (*Catalogue, error) {
		data, err := marshalEntries(entryDoc{GridSets: grids, Layers: layers})
		if err != nil {
			return nil, err
		}
		return parse(data, name, opts)
	}
	c, err := build(slices.Concat(fileGrids, storedGrids), slices.Concat(fileLayers, storedLayers))
	if err == nil {
		c.get().deleting = storedCfg.deleting
		return c, warnings, nil, nil
	}
	// Something stored does not fit the file: the file alone must, then
	// the stored entries are tried with the file's (and the stored grid
	// sets kept), halves of them at a time down to the single entries that
	// do not fit, which are skipped: a few parses of the document, not one
	// per entry. The stored entries fitted each other when they were saved.
	if _, ferr := build(fileGrids, fileLayers); ferr != nil {
		return nil, warnings, nil, ferr
	}
	skipped := map[string]error{}
	// fitting returns the entries of try that fit with fits, skipping the
	// others (named by field, what they are).
	var fitting func(try []*yaml.Node, field, what string, isStored map[string]bool, fits func([]*yaml.Node) error) []*yaml.Node
	fitting = func(try []*yaml.Node, field, what string, isStored map[string]bool, fits func([]*yaml.Node) error) []*yaml.Node {
		if len(try) == 0 {
			return nil
		}
		err := fits(try)
		if err == nil {
			return try
		}
		if len(try) > 1 {
			half := len(try) / 2
			return slices.Concat(fitting(try[:half], field, what, isStored, fits), fitting(try[half:], field, what, isStored, fits))
		}
		key := entryKey(try[0], field)
		delete(isStored, key)
		skipped[what+" "+key] = err
		warnings = append(warnings, fmt.Sprintf("%s %q of the stored configuration (version %d) does not fit %s: it is skipped until one of them is fixed: %v",
			what, key, stored.Version, fileName, err))
		return nil
	}
	grids := slices.Concat(fileGrids, fitting(storedGrids, "id", "grid set", opts.storedGridSets, func(try []*yaml.Node) error {
		_, err := build(slices.Concat(fileGrids, try), fileLayers)
		return err
	}))
	layers := slices.Concat(fileLayers, fitting(storedLayers, "name", "layer", opts.storedLayers, func(try []*yaml.Node) error {
		_, err := build(grids, slices.Concat(fileLayers, try))
		return err
	}))
	c, err = build(grids, layers)
	if err == nil {
		c.get().deleting = storedCfg.deleting
	}
	return c, warnings, skipped, err
}

// seedEntries returns the document of the file's entries marked
// `managedBy: store` (nil when there are none): what the first start
// copies into the store.
func seedEntries(file []byte) ([]byte, error) {
	cfg, err := parseNodes(file)
	if err != nil {
		return nil, err
	}
	keep := func(entries []*yaml.Node) []*yaml.Node {
		var out []*yaml.Node
		for _, n := range entries {
			if Managed(entryKey(n, "managedBy")) == ManagedByStore {
				out = append(out, n)
			}
		}
		return out
	}
	d := entryDoc{GridSets: keep(cfg.gridSets), Layers: keep(cfg.layers)}
	if len(d.GridSets) == 0 && len(d.Layers) == 0 {
		return nil, nil
	}
	return marshalEntries(d)
}
