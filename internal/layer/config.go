package layer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"tilecache/internal/apperr"
)

// Config is the stored configuration's document, open for editing: its
// grid set and layer entries and its deletion marks. Each entry is kept as
// the text the document holds for it, so that reading a document of
// thousands of layers and writing it back after one change costs a copy
// of its text, not a parse of every entry: only the entries put are
// parsed. Bytes writes what yaml.Marshal writes for the document of
// these entries (the layout splitStored reads).
type Config struct {
	gridSets, layers []item
	deleting         []Deletion
	// The layers and grid sets put or deleted since it was read: what
	// Registry.Update checks.
	touchedLayers, touchedGrids map[string]bool
}

// item is one entry of a Config: its name (a layer's) or id (a grid
// set's), and its lines in the document (the sequence item under
// `layers:` or `gridSets:`, as yaml.Marshal indents it there).
type item struct {
	key  string
	text []byte
}

// ParseConfig reads a stored configuration's document (empty: none).
// A document in the layout Bytes writes has its layer entries taken as
// text; any other is parsed whole.
func ParseConfig(doc []byte) (*Config, error) {
	cfg := &Config{touchedLayers: map[string]bool{}, touchedGrids: map[string]bool{}}
	chunks, rest, ok := splitStored(doc)
	if ok {
		// The layer entries as text; the rest (grid sets, deletion marks)
		// is small and read as before.
		doc = rest
		cfg.layers = make([]item, len(chunks))
		for i, ch := range chunks {
			cfg.layers[i] = item{key: ch.name, text: indentItem(ch.text)}
		}
	}
	nc, err := parseNodes(doc)
	if err != nil {
		return nil, err
	}
	if ok && len(nc.layers) > 0 {
		return nil, fmt.Errorf("parse the stored configuration: layers outside its layers section")
	}
	cfg.deleting = nc.deleting
	if cfg.gridSets, err = items(nc.gridSets, "gridSets", "id"); err != nil {
		return nil, err
	}
	if !ok {
		if cfg.layers, err = items(nc.layers, "layers", "name"); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// items renders the entries ns of section (their keys in field).
func items(ns []*yaml.Node, section, field string) ([]item, error) {
	out := make([]item, len(ns))
	for i, n := range ns {
		text, err := render(section, n)
		if err != nil {
			return nil, err
		}
		out[i] = item{key: entryKey(n, field), text: text}
	}
	return out, nil
}

// render returns the lines yaml.Marshal writes for entry n as an item of
// section: the document of that one item without its first line.
func render(section string, n *yaml.Node) ([]byte, error) {
	quoteMultiline(n)
	doc, err := yaml.Marshal(map[string][]*yaml.Node{section: {n}})
	if err != nil {
		return nil, fmt.Errorf("write the %s entry: %w", section, err)
	}
	head := section + ":\n"
	if !bytes.HasPrefix(doc, []byte(head)) {
		return nil, fmt.Errorf("write the %s entry: unexpected layout %q", section, doc)
	}
	return doc[len(head):], nil
}

// indentItem returns an entry's text as splitStored cuts it out of the
// document (see there) put back in its place: the first line behind
// "    - ", the others indented by six, empty lines empty.
func indentItem(text []byte) []byte {
	out := make([]byte, 0, len(text)+len(text)/8+8)
	first := true
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i+1], text[i+1:]
		} else {
			text = nil
		}
		switch {
		case first:
			out = append(out, "    - "...)
			first = false
		case len(bytes.TrimRight(line, "\n")) > 0:
			out = append(out, "      "...)
		}
		out = append(out, line...)
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return out
}

func indexOf(entries []item, key string) int {
	return slices.IndexFunc(entries, func(e item) bool { return e.key == key })
}

func keys(entries []item) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.key
	}
	return out
}

// Layers lists the names of the layers the document holds, in order.
func (d *Config) Layers() []string { return keys(d.layers) }

// GridSets lists the ids of the grid sets the document holds, in order.
func (d *Config) GridSets() []string { return keys(d.gridSets) }

// PutLayer adds the layer entry called name (a YAML mapping) or replaces
// the entry of that name; it reports whether the layer is new.
func (d *Config) PutLayer(name string, entry []byte) (bool, error) {
	d.touch(&d.touchedLayers, name)
	return put(&d.layers, "layers", "name", name, entry)
}

// PutLayerEntry adds the layer entry e or replaces the entry of its
// name; it reports whether the layer is new. The entry is written as
// yaml.Marshal writes it (what PutLayer stores for the same entry), with
// no YAML parse.
func (d *Config) PutLayerEntry(e Entry) (bool, error) {
	d.touch(&d.touchedLayers, e.Name)
	return putEntry(&d.layers, "layers", e.Name, e)
}

// PutGridSetEntry adds the grid set entry g or replaces the entry of its
// id, as PutLayerEntry does.
func (d *Config) PutGridSetEntry(g GridSetEntry) (bool, error) {
	d.touch(&d.touchedGrids, g.ID)
	return putEntry(&d.gridSets, "gridSets", g.ID, g)
}

// DeleteLayer removes the named layer's entry; it reports whether there
// was one.
func (d *Config) DeleteLayer(name string) bool {
	d.touch(&d.touchedLayers, name)
	return remove(&d.layers, name)
}

// PutGridSet adds or replaces the grid set entry with id id.
func (d *Config) PutGridSet(id string, entry []byte) (bool, error) {
	d.touch(&d.touchedGrids, id)
	return put(&d.gridSets, "gridSets", "id", id, entry)
}

// DeleteGridSet removes the grid set entry with id id.
func (d *Config) DeleteGridSet(id string) bool {
	d.touch(&d.touchedGrids, id)
	return remove(&d.gridSets, id)
}

func (d *Config) touch(set *map[string]bool, key string) {
	if *set == nil {
		*set = map[string]bool{}
	}
	(*set)[key] = true
}

func put(entries *[]item, section, field, key string, entry []byte) (bool, error) {
	n, err := entryNode(entry, field, key)
	if err != nil {
		return false, err
	}
	// Stored entries stand alone (see standalone).
	if n, err = newStandalone(len(entry)).entry(n); err != nil {
		return false, apperr.Invalidf("the %s entry %q: %v", section, key, err)
	}
	text, err := render(section, n)
	if err != nil {
		return false, err
	}
	return replace(entries, item{key: key, text: text}), nil
}

// putEntry puts entry (an Entry or a GridSetEntry) under key.
func putEntry[E Entry | GridSetEntry](entries *[]item, section, key string, entry E) (bool, error) {
	n, err := encodeNode(&entry)
	if err != nil {
		return false, fmt.Errorf("write the %s entry %q: %w", section, key, err)
	}
	text, err := render(section, n)
	if err != nil {
		return false, fmt.Errorf("write the %s entry %q: %w", section, key, err)
	}
	return replace(entries, item{key: key, text: text}), nil
}

// quoteMultiline writes every string of n that spans lines double-quoted,
// its line breaks escaped: an entry's text is then cut out of the document
// and indented again line by line (splitStored, indentItem), which a block
// scalar does not survive when its first line starts with a space (the
// indentation indicator yaml.v3 writes, "|4-") or a tab.
func quoteMultiline(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && multiline(n.Value) {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		quoteMultiline(c)
	}
}

// encodeNode returns the node of *v (a pointer to a struct) as
// yaml.Node.Encode does, with its strings that span lines double-quoted.
// Encode writes the value as text and parses it back, and yaml.v3 writes
// a block scalar whose line starts with a tab but cannot read it: each
// such string is encoded as a placeholder of one line, put back into the
// node, and restored in *v.
func encodeNode(v any) (*yaml.Node, error) {
	type held struct {
		at  reflect.Value
		was string
	}
	var swapped []held
	mark := fmt.Sprintf("\x01multiline %x ", rand.Uint64()) // no value holds it by chance
	var walk func(reflect.Value)
	walk = func(x reflect.Value) {
		switch x.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !x.IsNil() {
				walk(x.Elem())
			}
		case reflect.Struct:
			for i := range x.NumField() {
				if x.Type().Field(i).IsExported() {
					walk(x.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range x.Len() {
				walk(x.Index(i))
			}
		case reflect.String:
			if x.CanSet() && multiline(x.String()) {
				swapped = append(swapped, held{x, x.String()})
				x.SetString(mark + strconv.Itoa(len(swapped)-1))
			}
		}
	}
	walk(reflect.ValueOf(v))
	var n yaml.Node
	err := n.Encode(v)
	for _, h := range swapped {
		h.at.SetString(h.was)
	}
	if err != nil {
		return nil, err
	}
	var restore func(*yaml.Node)
	restore = func(m *yaml.Node) {
		if rest, ok := strings.CutPrefix(m.Value, mark); ok && m.Kind == yaml.ScalarNode {
			if i, err := strconv.Atoi(rest); err == nil && i >= 0 && i < len(swapped) {
				m.Value, m.Style = swapped[i].was, yaml.DoubleQuotedStyle
			}
		}
		for _, c := range m.Content {
			restore(c)
		}
	}
	restore(&n)
	return &n, nil
}

// multiline reports whether a string spans lines.
func multiline(s string) bool { return strings.ContainsAny(s, "\n\r") }

// replace puts e in place of the entry of its key, or last; it reports
// whether the entry is new.
func replace(entries *[]item, e item) bool {
	if i := indexOf(*entries, e.key); i >= 0 {
		(*entries)[i] = e
		return false
	}
	*entries = append(*entries, e)
	return true
}

func remove(entries *[]item, key string) bool {
	i := indexOf(*entries, key)
	if i < 0 {
		return false
	}
	*entries = slices.Delete(*entries, i, i+1)
	return true
}

// Bytes returns the document: what yaml.Marshal writes for its entries.
func (d *Config) Bytes() ([]byte, error) {
	size := 32
	for _, e := range d.gridSets {
		size += len(e.text)
	}
	for _, e := range d.layers {
		size += len(e.text)
	}
	out := make([]byte, 0, size)
	if len(d.gridSets) > 0 {
		out = append(out, "gridSets:\n"...)
		for _, e := range d.gridSets {
			out = append(out, e.text...)
		}
	}
	if len(d.layers) == 0 {
		out = append(out, "layers: []\n"...)
	} else {
		out = append(out, "layers:\n"...)
		for _, e := range d.layers {
			out = append(out, e.text...)
		}
	}
	if len(d.deleting) > 0 {
		marks, err := yaml.Marshal(struct {
			Deleting []Deletion `yaml:"deleting"`
		}{d.deleting})
		if err != nil {
			return nil, fmt.Errorf("write layer file: %w", err)
		}
		out = append(out, marks...)
	}
	return out, nil
}
