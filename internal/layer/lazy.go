package layer

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"

	"gopkg.in/yaml.v3"

	"tilecache/internal/grid"
)

// A catalogue's layers are slots. The layers of the layer file are built
// with the catalogue (the file is checked whole, as it is read); those of
// the stored configuration, loaded by a Registry, are only indexed (name,
// id, grid sets) from the document's text, and each is built from its
// entry the first time it is used: a process that starts or refreshes
// over thousands of stored layers builds the few its requests use. The
// stored document is written by this package alone (Config.Bytes, in
// yaml.v3's layout), which the index relies on; one it cannot index is
// built whole, as before.

// slot is one layer of a catalogue: built, or built on first use.
type slot struct {
	name, id string
	managed  Managed
	// grids are the ids of its subsets' grid sets in order; nil with
	// gridsKnown false when the index could not tell (then the layer is
	// built to learn them).
	grids      []string
	gridsKnown bool

	build func() (*Layer, []byte, error) // nil when built with the catalogue
	chunk []byte                         // a stored entry's text in the document, to reuse the slot
	once  sync.Once
	l     *Layer
	entry []byte // the entry as yaml.Marshal writes it alone (see contents.layerEntries)
	err   error
}

// layer returns the slot's layer, building it on first use; nil when its
// entry does not build (logged once, by the catalogue that built it).
func (s *slot) layer() *Layer {
	if s.build != nil {
		s.once.Do(func() { s.l, s.entry, s.err = s.build() })
	}
	return s.l
}

// gridIDs returns the ids of the grid sets of the layer's subsets.
func (s *slot) gridIDs() []string {
	if s.gridsKnown {
		return s.grids
	}
	l := s.layer()
	if l == nil {
		return nil
	}
	out := make([]string, len(l.Subsets))
	for i, sub := range l.Subsets {
		out[i] = sub.GridSet.ID
	}
	return out
}

// builtSlot is the slot of a layer built with its catalogue.
func builtSlot(l *Layer, entry []byte) *slot {
	s := &slot{name: l.Name, id: l.ID, managed: l.Managed, l: l, entry: entry, gridsKnown: true}
	for _, sub := range l.Subsets {
		s.grids = append(s.grids, sub.GridSet.ID)
	}
	return s
}

// storedChunk is one layer entry of a stored document: its text there
// (indented as in the document) and what the index reads from it.
type storedChunk struct {
	text       []byte // the entry alone (the document's indentation removed)
	name, id   string
	grids      []string
	gridsKnown bool
}

// splitStored splits a stored configuration's document, as Config.Bytes
// writes it, into its layer entries and the rest (grid sets and deletion
// marks, a document of its own). ok is false when the document is not in
// that layout: then it is read whole.
func splitStored(doc []byte) (chunks []storedChunk, rest []byte, ok bool) {
	var restBuf bytes.Buffer
	section := ""
	var cur *bytes.Buffer
	flush := func() bool {
		if cur == nil {
			return true
		}
		c, ok := indexChunk(cur.Bytes())
		if ok {
			chunks = append(chunks, c)
		}
		cur = nil
		return ok
	}
	for len(doc) > 0 {
		line := doc
		i := bytes.IndexByte(doc, '\n')
		if i >= 0 {
			line, doc = doc[:i+1], doc[i+1:]
		} else {
			doc = nil
		}
		body := bytes.TrimRight(line, "\n")
		switch {
		case len(body) > 0 && body[0] != ' ':
			// A key of the document.
			if !flush() {
				return nil, nil, false
			}
			switch string(body) {
			case "layers:", "layers: []":
				section = "layers"
				continue
			case "gridSets:", "deleting:":
				section = "rest"
			default:
				return nil, nil, false
			}
			restBuf.Write(line)
		case section == "rest":
			restBuf.Write(line)
		case section != "layers":
			return nil, nil, false
		case bytes.HasPrefix(body, []byte("    - ")):
			if !flush() {
				return nil, nil, false
			}
			cur = &bytes.Buffer{}
			cur.Write(line[6:])
		case cur != nil && bytes.HasPrefix(body, []byte("      ")):
			cur.Write(line[6:])
		case cur != nil && len(body) == 0:
			cur.Write(line)
		default:
			return nil, nil, false
		}
	}
	if !flush() {
		return nil, nil, false
	}
	return chunks, restBuf.Bytes(), true
}

// indexChunk reads an entry's name, id and grid sets from its text: its
// top-level keys are the lines without indentation.
func indexChunk(text []byte) (storedChunk, bool) {
	c := storedChunk{text: text, gridsKnown: true}
	var haveName, haveID bool
	inSubsets, subsets := false, 0
	for line := range strings.Lines(string(text)) {
		line = strings.TrimRight(line, "\n")
		if line == "" {
			continue
		}
		if line[0] != ' ' {
			inSubsets = false
			key, value, _ := strings.Cut(line, ":")
			switch key {
			case "name", "id":
				v, ok := scalar(line, key, value)
				if !ok {
					return c, false
				}
				if key == "name" {
					c.name, haveName = v, true
				} else {
					c.id, haveID = v, true
				}
			case "gridSubsets":
				if strings.TrimSpace(value) != "" {
					// Written inline, on this line.
					c.grids, c.gridsKnown = inlineGrids(line)
					subsets = len(c.grids)
					continue
				}
				inSubsets = true
			}
			continue
		}
		if !inSubsets || !c.gridsKnown {
			continue
		}
		// The subsets: a sequence of mappings, "  - " opening each, their
		// other keys indented by 4.
		item := strings.HasPrefix(line, "  - ")
		if item {
			subsets++
		}
		var rest string
		switch {
		case item:
			rest = line[4:]
		case strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     "):
			rest = line[4:]
		default:
			continue
		}
		if key, value, ok := strings.Cut(rest, ":"); ok && key == "gridSet" {
			v, ok := scalar(rest, key, value)
			if !ok {
				c.gridsKnown = false
				continue
			}
			c.grids = append(c.grids, v)
		}
	}
	if c.gridsKnown && len(c.grids) != subsets {
		c.grids, c.gridsKnown = nil, false
	}
	if !haveName {
		return c, false
	}
	if !haveID || c.id == "" {
		c.id = c.name
	}
	return c, true
}

// inlineGrids reads the grid sets of a "gridSubsets: [...]" line.
func inlineGrids(line string) ([]string, bool) {
	var v struct {
		GridSubsets []struct {
			GridSet *string `yaml:"gridSet"`
		} `yaml:"gridSubsets"`
	}
	if err := yaml.Unmarshal([]byte(line), &v); err != nil {
		return nil, false
	}
	out := make([]string, len(v.GridSubsets))
	for i, s := range v.GridSubsets {
		if s.GridSet == nil {
			return nil, false
		}
		out[i] = *s.GridSet
	}
	return out, true
}

// scalar reads the value of a "key: value" line: a plain value as it is
// written, anything else (quoted, flow, a comment) as YAML reads it.
func scalar(line, key, value string) (string, bool) {
	v, ok := strings.CutPrefix(value, " ")
	if ok && plain(v) {
		return v, true
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(line), &n); err != nil || len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return "", false
	}
	m := n.Content[0]
	if len(m.Content) != 2 || m.Content[0].Value != key || m.Content[1].Kind != yaml.ScalarNode {
		return "", false
	}
	return m.Content[1].Value, true
}

// plain reports whether v is a plain scalar whose value is its text.
func plain(v string) bool {
	if v == "" || strings.Contains(v, " #") || strings.Contains(v, ": ") || strings.HasSuffix(v, ":") || strings.HasSuffix(v, " ") {
		return false
	}
	r := rune(v[0])
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_'
}

// mergeLazy builds the catalogue of a layer file and a stored
// configuration as merge does, the stored layers indexed and built on
// first use (see slot). prev, when not nil, is the catalogue it replaces:
// the slots of entries that did not change (their text, the grid sets)
// are taken over, built or not. A document it cannot split is merged
// whole.
func mergeLazy(file []byte, fileName string, stored StoredConfig, prev *contents, log *slog.Logger) (*Catalogue, []string, error) {
	chunks, rest, ok := splitStored(stored.Doc)
	if !ok || stored.Version == 0 {
		c, warnings, _, err := merge(file, fileName, stored)
		return c, warnings, err
	}
	// The file, the stored grid sets and the deletion marks, whole.
	c, warnings, _, err := merge(file, fileName, StoredConfig{Version: stored.Version, Doc: rest})
	if err != nil {
		return nil, warnings, err
	}
	k := c.get()
	reuse := prev != nil && maps.EqualFunc(prev.gridEntries, k.gridEntries, bytes.Equal) &&
		maps.Equal(prev.gridSetIDs(), k.gridSetIDs())
	for _, ch := range chunks {
		if s, dup := k.layers[ch.name]; dup {
			if s.managed == ManagedByStore {
				warnings = append(warnings, fmt.Sprintf("layer %q of the stored configuration (version %d) is defined twice: the first is used", ch.name, stored.Version))
			} else {
				warnings = append(warnings, fmt.Sprintf("layer %q is in %s and in the stored configuration: the file's is used", ch.name, fileName))
			}
			continue
		}
		if other, dup := k.ids[ch.id]; dup {
			warnings = append(warnings, fmt.Sprintf("layer %q of the stored configuration (version %d) does not fit %s: it is skipped until one of them is fixed: id %q is already the id of layer %q",
				ch.name, stored.Version, fileName, ch.id, other))
			continue
		}
		if missing := slices.DeleteFunc(slices.Clone(ch.grids), func(id string) bool { return k.gridSets[id] != nil }); len(missing) > 0 {
			warnings = append(warnings, fmt.Sprintf("layer %q of the stored configuration (version %d) does not fit %s: it is skipped until one of them is fixed: unknown grid set %q",
				ch.name, stored.Version, fileName, missing[0]))
			continue
		}
		var s *slot
		if reuse {
			if p, ok := prev.layers[ch.name]; ok && p.chunk != nil && bytes.Equal(p.chunk, ch.text) {
				s = p
			}
		}
		if s == nil {
			s = k.lazySlot(ch, stored.Version, log)
		}
		k.layers[ch.name] = s
		k.ids[ch.id] = ch.name
		k.names = append(k.names, ch.name)
	}
	return c, warnings, nil
}

// gridSetIDs is the set of the catalogue's grid set ids.
func (k *contents) gridSetIDs() map[string]bool {
	out := make(map[string]bool, len(k.gridSets))
	for id := range k.gridSets {
		out[id] = true
	}
	return out
}

// lazySlot is the slot of stored entry ch, built on first use with the
// catalogue's grid sets.
func (k *contents) lazySlot(ch storedChunk, version int64, log *slog.Logger) *slot {
	s := &slot{name: ch.name, id: ch.id, managed: ManagedByStore, grids: ch.grids, gridsKnown: ch.gridsKnown, chunk: ch.text}
	gridSets, gridEntries := k.gridSets, k.gridEntries
	s.build = func() (*Layer, []byte, error) {
		l, entry, err := buildEntry(ch, gridSets, gridEntries)
		if err != nil {
			if log != nil {
				log.Warn(fmt.Sprintf("layer %q of the stored configuration (version %d) cannot be built: it is left out", ch.name, version), "err", err)
			}
			return nil, nil, err
		}
		return l, entry, nil
	}
	return s
}

// buildEntry builds a stored layer from its entry as parse does: the entry
// read alone (its own node budget), decoded strictly, checked, and
// fingerprinted with the grid sets it uses.
func buildEntry(ch storedChunk, gridSets map[string]*grid.GridSet, gridEntries map[string][]byte) (*Layer, []byte, error) {
	n, err := readEntry(ch.text)
	if err != nil {
		return nil, nil, err
	}
	entry, err := newStandalone(len(ch.text)).text(n)
	if err != nil {
		return nil, nil, err
	}
	var ld Entry
	dec := yaml.NewDecoder(bytes.NewReader(entry))
	dec.KnownFields(true)
	if err := dec.Decode(&ld); err != nil {
		return nil, nil, err
	}
	l, errs := buildLayer(ld, gridSets)
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	if l.Name != ch.name || l.ID != ch.id {
		return nil, nil, fmt.Errorf("the entry's name and id (%q, %q) are not the indexed ones (%q, %q)", l.Name, l.ID, ch.name, ch.id)
	}
	if ch.gridsKnown {
		if len(l.Subsets) != len(ch.grids) {
			return nil, nil, fmt.Errorf("the entry has %d grid subsets, the index %d", len(l.Subsets), len(ch.grids))
		}
		for i, sub := range l.Subsets {
			if sub.GridSet.ID != ch.grids[i] {
				return nil, nil, fmt.Errorf("grid subset %d is %s, the index says %s", i, sub.GridSet.ID, ch.grids[i])
			}
		}
	}
	l.Managed = ManagedByStore
	l.Version = fingerprintOf(entry, l, gridEntries)
	return l, entry, nil
}

// BuiltNames returns the names of the layers built with the catalogue, in
// configuration order: the layer file's, and all of them when the
// catalogue was read whole. The other layers (the stored configuration's,
// as a Registry loads it) are built on first use; they were checked when
// they were saved (see Registry.Validate).
func (c *Catalogue) BuiltNames() []string {
	k := c.get()
	var out []string
	for _, n := range k.names {
		if k.layers[n].build == nil {
			out = append(out, n)
		}
	}
	return out
}
