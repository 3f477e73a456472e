package layer

import (
	"slices"
	"time"

	"tilecache/internal/apperr"
)

// Deletion is the mark a layer deleted with its tiles leaves in the
// stored configuration, saved in the same write that removes the layer's
// entry: while it is there the layer's tiles (every key under its id) are
// being truncated in the background, and nothing may write under that
// id: no layer of that name or id can be created, and every process
// refuses the name (a seed, a render on miss) as soon as it reads the
// configuration's version. The truncation removes the mark when it ends.
type Deletion struct {
	// Name is the deleted layer's name, ID its id (the first segment of
	// its tile keys, see tilestore.LayerPrefix).
	Name string `yaml:"name"`
	ID   string `yaml:"id"`
	// Since is when the layer was deleted.
	Since time.Time `yaml:"since"`
}

// MarkDeleted adds d to the document's deletion marks (replacing a mark
// of the same name).
func (d *Config) MarkDeleted(m Deletion) {
	d.deleting = slices.DeleteFunc(d.deleting, func(o Deletion) bool { return o.Name == m.Name })
	d.deleting = append(d.deleting, m)
}

// Unmark removes the deletion mark of layer name and id; it reports
// whether there was one.
func (d *Config) Unmark(name, id string) bool {
	n := len(d.deleting)
	d.deleting = slices.DeleteFunc(d.deleting, func(o Deletion) bool { return o.Name == name && o.ID == id })
	return len(d.deleting) != n
}

// Deleting returns the deletion mark of the layer called name, if any.
func (c *Catalogue) Deleting(name string) (Deletion, bool) { return c.get().deletion(name) }

// deletion returns the deletion mark of the layer called name, if any.
func (k *contents) deletion(name string) (Deletion, bool) {
	i := slices.IndexFunc(k.deleting, func(d Deletion) bool { return d.Name == name })
	if i < 0 {
		return Deletion{}, false
	}
	return k.deleting[i], true
}

// Deletions returns every deletion mark.
func (c *Catalogue) Deletions() []Deletion { return slices.Clone(c.get().deleting) }

// deletionConflict is the 409 of a store-managed layer whose name or id
// is marked deleted (its old tiles still being truncated), nil when none
// is.
func (c *Catalogue) deletionConflict() error {
	k := c.get()
	for _, d := range k.deleting {
		for _, n := range k.names {
			l := k.layers[n]
			if l.managed != ManagedByStore || (l.name != d.Name && l.id != d.ID) {
				continue
			}
			return apperr.New(apperr.Conflict,
				"Layer %s cannot be created while the tiles of the deleted layer %s (id %s, deleted %s) are being truncated: "+
					"its truncation is listed by GET /rest/seed/%s.json; create the layer when it has ended (or give it another name and id)",
				l.name, d.Name, d.ID, d.Since.UTC().Format(time.RFC3339), d.Name)
		}
	}
	return nil
}
