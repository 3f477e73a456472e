package layer

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"tilecache/internal/apperr"
)

// A change (Update) is checked as the whole configuration would be, at
// the cost of the entries it touches: a stored layer's fit with the layer
// file and the stored grid sets depends on its entry alone, so the rules
// are applied (merge) to a document of the stored grid sets, the deletion
// marks and only these layers: the ones the change put, the users of the
// grid sets it put or deleted, and any that share a name or an id with
// another stored layer (the one rule between stored entries). The other
// entries are taken over as they were, unparsed.

// checked is the outcome of a change's checks: the next catalogue, and
// what the Validate hook is given (the changed layers).
type checked struct {
	next    *Catalogue
	changed *Catalogue
	// names are the layers the change added, changed or deleted, and the
	// users of the grid sets it changed, sorted; nil when it was checked
	// whole (anything may have changed).
	names []string
}

// checkChange checks next, the document doc was edited into from st,
// against the layer file, and returns its catalogue (its stored layers
// built on use, those of current whose entries did not change taken over).
// Its errors are the client's (apperr).
func (r *Registry) checkChange(st StoredConfig, current *Catalogue, doc *Config, next StoredConfig) (checked, error) {
	chunks, rest, ok := splitStored(next.Doc)
	if !ok || st.Version == 0 {
		// A first save (the file's store-managed entries were the stored
		// ones) or a document not in Bytes' layout: checked whole.
		return r.checkWhole(st, next)
	}
	names := changedEntries(chunks, doc)
	_, _, skipped, err := merge(r.file, r.fileName, StoredConfig{Version: next.Version, Doc: withEntries(rest, chunks, names)})
	if err != nil {
		return checked{}, apperr.Wrap(apperr.Invalid, err, "%v", err)
	}
	if len(skipped) > 0 {
		// An entry skipped before (it does not fit the layer file) may
		// stay so; the change must not add one.
		var skippedBefore map[string]error
		if before, beforeRest, ok := splitStored(st.Doc); ok {
			_, _, skippedBefore, err = merge(r.file, r.fileName, StoredConfig{Version: st.Version, Doc: withEntries(beforeRest, before, names)})
		} else {
			_, _, skippedBefore, err = merge(r.file, r.fileName, st)
		}
		if err != nil {
			return checked{}, fmt.Errorf("stored layer configuration version %d: %w", st.Version, err)
		}
		if err := newlySkipped(skipped, skippedBefore); err != nil {
			return checked{}, err
		}
	}
	c, err := r.load(next, current.get())
	if err != nil {
		return checked{}, apperr.Wrap(apperr.Invalid, err, "%v", err)
	}
	// A layer whose tiles would share keys with a deleted layer's still
	// being truncated would lose them.
	if err := c.deletionConflict(); err != nil {
		return checked{}, err
	}
	touched := maps.Clone(names)
	maps.Copy(touched, doc.touchedLayers)
	changedNames := append([]string{}, slices.Sorted(maps.Keys(touched))...) // not nil: none changed
	return checked{next: c, changed: c.only(names), names: changedNames}, nil
}

// checkWhole checks next whole: every entry merged with the file.
func (r *Registry) checkWhole(st, next StoredConfig) (checked, error) {
	c, skipped, err := r.merge(next)
	if err != nil {
		return checked{}, apperr.Wrap(apperr.Invalid, err, "%v", err)
	}
	// An entry skipped before (it does not fit the layer file) may stay
	// so; the change must not add one. (The whole merge of the
	// configuration read tells which were, when any is now.)
	if len(skipped) > 0 {
		_, skippedBefore, err := r.merge(st)
		if err != nil {
			return checked{}, fmt.Errorf("stored layer configuration version %d: %w", st.Version, err)
		}
		if err := newlySkipped(skipped, skippedBefore); err != nil {
			return checked{}, err
		}
	}
	if err := c.deletionConflict(); err != nil {
		return checked{}, err
	}
	return checked{next: c, changed: c}, nil
}

// changedEntries returns the names of the stored layers (of chunks, the
// edited document's) a change must check: those it put, the users of the
// grid sets it put or deleted (and the layers whose grid sets the index
// could not tell), and those sharing a name or an id with another.
func changedEntries(chunks []storedChunk, doc *Config) map[string]bool {
	names := map[string]bool{}
	byName := make(map[string]int, len(chunks))
	byID := make(map[string]string, len(chunks)) // id → the first name that has it
	clash := map[string]bool{}                   // names and ids held twice
	for _, ch := range chunks {
		if doc.touchedLayers[ch.name] {
			names[ch.name] = true
		}
		if len(doc.touchedGrids) > 0 && (!ch.gridsKnown || slices.ContainsFunc(ch.grids, func(id string) bool { return doc.touchedGrids[id] })) {
			names[ch.name] = true
		}
		byName[ch.name]++
		if byName[ch.name] > 1 {
			clash["name "+ch.name] = true
		}
		if first, ok := byID[ch.id]; ok && first != ch.name {
			clash["id "+ch.id] = true
		} else if !ok {
			byID[ch.id] = ch.name
		}
	}
	if len(clash) > 0 {
		for _, ch := range chunks {
			if clash["name "+ch.name] || clash["id "+ch.id] {
				names[ch.name] = true
			}
		}
	}
	return names
}

// withEntries returns a stored document of rest (the grid sets and the
// deletion marks, see splitStored) and the layer entries of chunks
// called one of names, in order.
func withEntries(rest []byte, chunks []storedChunk, names map[string]bool) []byte {
	out := append([]byte(nil), rest...)
	n := 0
	for _, ch := range chunks {
		if names[ch.name] {
			if n == 0 {
				out = append(out, "layers:\n"...)
			}
			out = append(out, indentItem(ch.text)...)
			n++
		}
	}
	if n == 0 {
		out = append(out, "layers: []\n"...)
	}
	return out
}

// only returns a catalogue of c's layers called one of names (those it
// has, in order) and all of its grid sets and deletion marks.
func (c *Catalogue) only(names map[string]bool) *Catalogue {
	k := c.get()
	v := *k
	v.layers, v.ids, v.names = map[string]*slot{}, map[string]string{}, nil
	for _, n := range k.names {
		if names[n] {
			s := k.layers[n]
			v.layers[n], v.ids[s.id] = s, n
			v.names = append(v.names, n)
		}
	}
	out := &Catalogue{}
	out.cur.Store(&v)
	return out
}

// newlySkipped refuses a change that leaves entries skipped (they do not
// fit the layer file) that were not skipped before it.
func newlySkipped(skipped, before map[string]error) error {
	for k := range before {
		delete(skipped, k)
	}
	if len(skipped) == 0 {
		return nil
	}
	err := errors.New(joinSkipped(skipped))
	return apperr.Wrap(apperr.Invalid, err, "%v", err)
}
