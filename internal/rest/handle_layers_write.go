package rest

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/seed"
	"tilecache/internal/source/upstream"
	"tilecache/internal/task"
)

// preconditions checks a write's If-Match and If-None-Match against the
// current version of the resource ("" when it does not exist), as RFC 9110
// says: a stale write is a 412.
func preconditions(r *http.Request, what, version string) error {
	if m := r.Header.Get("If-Match"); m != "" {
		ok := false
		for _, t := range strings.Split(m, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if version != "" && (t == "*" || t == etag(version)) {
				ok = true
			}
		}
		if !ok {
			if version == "" {
				return apperr.New(apperr.Precondition, "%s does not exist (If-Match: %s)", what, m)
			}
			return apperr.New(apperr.Precondition, "%s changed since you read it: its ETag is now %s, not %s; read it again", what, etag(version), m)
		}
	}
	if m := strings.TrimSpace(r.Header.Get("If-None-Match")); m == "*" && version != "" {
		return apperr.New(apperr.Precondition, "%s exists (If-None-Match: *)", what)
	}
	return nil
}

// truncateParam reads ?truncate=true|false (default false).
func truncateParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("truncate")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, apperr.Invalidf("truncate must be true or false, got %q", v)
	}
	return b, nil
}

// readEntry reads a PUT's or POST's ?truncate and its document (decoded by
// decode into the entry of the stored configuration), which must name
// the addressed resource (what called name).
func readEntry[E layer.Entry | layer.GridSetEntry](w http.ResponseWriter, r *http.Request, decode func([]byte) (E, error),
	nameOf func(E) string, what, name string) (entry E, truncate bool, err error) {
	if truncate, err = truncateParam(r); err != nil {
		return entry, false, err
	}
	body, err := readBody(w, r)
	if err != nil {
		return entry, false, err
	}
	if entry, err = decode(body); err != nil {
		return entry, false, err
	}
	if got := nameOf(entry); got != name {
		return entry, false, apperr.Invalidf("The %s document's <name> is %q but the address names %s %q: they must match", what, got, what, name)
	}
	return entry, truncate, nil
}

// fileManaged is the 409 of a change to what the layer file manages.
func fileManaged(what string) error {
	return apperr.New(apperr.Conflict, "%s is managed by the layer file: change it there (or mark its entry managedBy: store to hand it to the REST interface)", what)
}

// The answer of a layer change: what was saved and what it implies for
// the stored tiles.
type layerChange struct {
	XMLName  xml.Name      // layerChange or gridSetChange
	Name     string        `xml:"name"`
	Action   string        `xml:"action"` // created, modified, deleted
	Version  string        `xml:"version,omitempty"`
	Orphaned *orphanReport `xml:"orphaned,omitempty"`
	Notes    []string      `xml:"note,omitempty"`
}

type orphanReport struct {
	Complete  bool           `xml:"complete,attr"`
	Tiles     int64          `xml:"tiles,attr"`
	Truncated int64          `xml:"truncated,attr"`
	Sets      []orphanSetXML `xml:"tileSet"`
}

type orphanSetXML struct {
	GridSet      string `xml:"gridSet,attr"`
	Format       string `xml:"format,attr"`
	ParametersID string `xml:"parametersId,attr"`
	Tiles        int64  `xml:"tiles,attr"`
	Bytes        int64  `xml:"bytes,attr"`
	Reason       string `xml:"reason,attr"`
}

func toOrphanXML(r seed.OrphanReport) *orphanReport {
	out := &orphanReport{Complete: r.Complete, Tiles: r.Tiles(), Truncated: r.Removed, Sets: []orphanSetXML{}}
	for _, s := range r.Sets {
		out.Sets = append(out.Sets, orphanSetXML{GridSet: s.GridSetID, Format: s.FormatID, ParametersID: s.ParametersID,
			Tiles: s.Tiles, Bytes: s.Bytes, Reason: s.Reason})
	}
	return out
}

func writeChange(w http.ResponseWriter, c layerChange) {
	if c.XMLName.Local == "" {
		c.XMLName.Local = "layerChange"
	}
	body, _ := xml.MarshalIndent(c, "", "  ") // plain strings and numbers always marshal
	if c.Version != "" {
		w.Header().Set("ETag", etag(c.Version))
	}
	writeBody(w, "application/xml", append(append([]byte(xml.Header), body...), '\n'))
}

// staleNotes names the changes that leave the stored tiles addressed but
// drawn by the old definition.
func staleNotes(old, next *layer.Layer) []string {
	var notes []string
	if old.MetaWidth != next.MetaWidth || old.MetaHeight != next.MetaHeight || old.Gutter != next.Gutter {
		notes = append(notes, "metatiling or gutter changed: stored tiles were cut from other metatiles (a reseed redraws them)")
	}
	if !old.SameSource(next) {
		notes = append(notes, "the source changed: stored tiles were drawn from the old one (a reseed redraws them)")
	}
	if len(old.Filters) != len(next.Filters) {
		notes = append(notes, "parameter filters changed: tile sets of parameter values no longer allowed stay stored until truncated by parameters id")
	}
	return notes
}

// decodeLayer reads a wmsLayer document whose WMS URL is not at an
// address the service's upstreams may not reach, as far as the URL tells:
// an IP address, or localhost (a name is checked at each connection).
func (lr layersResource) decodeLayer(body []byte) (gwc.Layer, error) {
	d, err := gwc.DecodeLayer(body)
	if err != nil {
		return d, err
	}
	if ae, ok := errors.AsType[*upstream.AddressError](lr.upstream.CheckURL(d.Source.URL)); ok {
		return d, apperr.Invalidf("wmsUrl %s is at a %s address: a layer changed through the REST interface may reach one only when the service's TILECACHE_UPSTREAM_ALLOW lists its network",
			upstream.Redact(d.Source.URL), ae.Class)
	}
	return d, nil
}

// putLayer adds or (create false: POST, GeoWebCache's deprecated form)
// modifies a layer from its wmsLayer document.
func (lr layersResource) putLayer(name string, create bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		entry, truncate, err := readEntry(w, r, lr.decodeLayer, func(d gwc.Layer) string { return d.Name }, "layer", name)
		if err != nil {
			return err
		}
		if truncate {
			// A running task would write tiles of the old definition
			// after their truncation.
			if err := lr.noActiveTasks(r.Context(), name, "its orphaned tiles cannot be truncated (?truncate=true)"); err != nil {
				return err
			}
		}
		var old *layer.Layer
		var created bool
		next, err := lr.editor.Update(r.Context(), func(cfg *layer.Config, cur *layer.Catalogue) error {
			l, exists := cur.Layer(name)
			version := ""
			if exists {
				version = l.Version
				if l.Managed != layer.ManagedByStore {
					return fileManaged("Layer " + name)
				}
			} else if !create {
				return apperr.New(apperr.NotFound, "Unknown layer: %s (PUT creates a layer, POST only modifies one)", name)
			}
			if err := preconditions(r, "Layer "+name, version); err != nil {
				return err
			}
			if d, ok := cur.Deleting(name); ok && !exists {
				return lr.deletionConflict(r.Context(), d)
			}
			old = l
			created, err = cfg.PutLayerEntry(entry)
			return err
		})
		if err != nil {
			return err
		}
		nl, _ := next.Layer(name)
		change := layerChange{Name: name, Action: "modified", Version: nl.Version}
		if created {
			change.Action = "created"
		}
		if old != nil {
			rep, err := lr.planner.Orphans(r.Context(), old, nl, nil, truncate)
			if err != nil {
				return fmt.Errorf("layer %s saved, but its orphaned tiles could not be found: %w", name, err)
			}
			change.Orphaned = toOrphanXML(rep)
			change.Notes = staleNotes(old, nl)
			if rep.Tiles() > 0 && !truncate {
				change.Notes = append(change.Notes, "orphaned tiles stay stored (and served by the CDN) until removed: repeat the request with ?truncate=true, or truncate them")
			}
		}
		writeChange(w, change)
		return nil
	}
}

// noActiveTasks is the 409 of a change (what it cannot do) to a layer
// with tasks pending or running.
func (lr layersResource) noActiveTasks(ctx context.Context, name, what string) error {
	tasks, err := lr.tasks.List(ctx, name)
	if err != nil {
		return err
	}
	var active []string
	for _, t := range tasks {
		if t.Status.Active() {
			active = append(active, strconv.FormatInt(t.ID, 10))
		}
	}
	if len(active) > 0 {
		return apperr.New(apperr.Conflict, "Layer %s has tasks in progress (%s): %s; kill them first (POST /rest/seed/%s with kill_all=all) or wait for them to finish",
			name, strings.Join(active, ", "), what, name)
	}
	return nil
}

// deleteLayer removes a layer; with ?truncate=true its tiles too, in the
// background. A layer with tasks in progress is not removed (409): kill
// them first. The entry is deleted (a save conditional on the version
// read, checked against the newest configuration) and, with truncate, a
// deletion mark naming the deleted definition's id saved in the same
// write: from then on every process refuses the name (a seed, a render on
// miss, a layer of that name or id), and a TRUNCATE task of the name
// deletes every key under the id page by page, then removes the mark
// (seed.Truncation.StartDeletion). The answer comes at once, whatever the
// number of tiles. A failed deletion leaves every tile.
//
// The name of a layer whose truncation was killed (its mark remains)
// answers DELETE ?truncate=true by starting the truncation again, from
// where it stopped.
func (lr layersResource) deleteLayer(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		truncate, err := truncateParam(r)
		if err != nil {
			return err
		}
		cur, ok := lr.layers.Layer(name)
		if !ok {
			if _, marked := deletingOf(lr.layers, name); marked && truncate {
				return lr.resumeDeletion(w, r, name)
			}
			return apperr.New(apperr.NotFound, "Unknown layer: %s", name)
		}
		if cur.Managed != layer.ManagedByStore {
			return fileManaged("Layer " + name)
		}
		if err := preconditions(r, "Layer "+name, cur.Version); err != nil {
			return err
		}
		if err := lr.noActiveTasks(r.Context(), name, "it cannot be deleted"); err != nil {
			return err
		}
		var mark layer.Deletion
		_, err = lr.editor.Update(r.Context(), func(cfg *layer.Config, cur *layer.Catalogue) error {
			l, ok := cur.Layer(name)
			if !ok {
				return apperr.New(apperr.NotFound, "Unknown layer: %s", name)
			}
			if l.Managed != layer.ManagedByStore {
				return fileManaged("Layer " + name)
			}
			if err := preconditions(r, "Layer "+name, l.Version); err != nil {
				return err
			}
			cfg.DeleteLayer(name)
			if truncate {
				mark = layer.Deletion{Name: name, ID: l.ID, Since: time.Now().UTC().Truncate(time.Second)}
				cfg.MarkDeleted(mark)
			}
			return nil
		})
		if err != nil {
			return err
		}
		change := layerChange{Name: name, Action: "deleted"}
		if truncate {
			note, err := lr.startDeletion(r.Context(), mark)
			if err != nil {
				return err
			}
			change.Notes = append(change.Notes, note)
		} else {
			change.Notes = append(change.Notes, "the layer's tiles stay stored: DELETE with ?truncate=true removes them too")
		}
		writeChange(w, change)
		return nil
	}
}

// startDeletion starts the truncation of a deleted layer's tiles and
// returns the answer's note naming its task.
func (lr layersResource) startDeletion(ctx context.Context, d layer.Deletion) (string, error) {
	t, err := lr.tasks.StartDeletion(ctx, d)
	if err != nil {
		return "", fmt.Errorf("layer %s deleted, but the truncation of its tiles could not be started (DELETE /rest/layers/%s.xml?truncate=true starts it): %w", d.Name, d.Name, err)
	}
	return fmt.Sprintf("the layer's tiles (every key under its id %s) are being truncated by task %d, listed by GET /rest/seed/%s.json until it ends; the name and the id cannot be used again before then",
		d.ID, t.ID, d.Name), nil
}

// resumeDeletion starts again the truncation of a layer deleted with its
// tiles whose truncation is not running (killed, or never started): the
// mark is read (and saved again) through the newest configuration, so a
// mark removed meanwhile is not acted on.
func (lr layersResource) resumeDeletion(w http.ResponseWriter, r *http.Request, name string) error {
	if err := lr.noActiveTasks(r.Context(), name, "the truncation of its tiles is in progress already"); err != nil {
		return err
	}
	var mark layer.Deletion
	_, err := lr.editor.Update(r.Context(), func(cfg *layer.Config, cur *layer.Catalogue) error {
		d, ok := cur.Deleting(name)
		if !ok {
			return apperr.New(apperr.NotFound, "Unknown layer: %s", name)
		}
		mark = d
		cfg.MarkDeleted(d)
		return nil
	})
	if err != nil {
		return err
	}
	note, err := lr.startDeletion(r.Context(), mark)
	if err != nil {
		return err
	}
	writeChange(w, layerChange{Name: name, Action: "deleted", Notes: []string{note}})
	return nil
}

// deletionConflict is the 409 of a layer created on the name of a layer
// deleted with its tiles whose truncation has not ended, naming the
// truncation's task.
func (lr layersResource) deletionConflict(ctx context.Context, d layer.Deletion) error {
	tasks, err := lr.tasks.List(ctx, d.Name)
	if err != nil {
		return err
	}
	var active []string
	for _, t := range tasks {
		if t.Status.Active() && t.Type == task.Truncate {
			active = append(active, fmt.Sprintf("%d (%s)", t.ID, t.Status))
		}
	}
	if len(active) == 0 {
		return apperr.New(apperr.Conflict, "Layer %s was deleted with its tiles on %s and their truncation has not ended but is not running (killed?): DELETE /rest/layers/%s.xml?truncate=true starts it again; the layer can be created when it has ended",
			d.Name, d.Since.UTC().Format(time.RFC3339), d.Name)
	}
	return apperr.New(apperr.Conflict, "Layer %s was deleted with its tiles on %s and they are still being truncated by task %s (GET /rest/seed/%s.json): the layer can be created again when that task has ended",
		d.Name, d.Since.UTC().Format(time.RFC3339), strings.Join(active, ", "), d.Name)
}

// putGridSet adds or modifies a grid set from its gridSet document.
func (lr layersResource) putGridSet(id string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		entry, truncate, err := readEntry(w, r, gwc.DecodeGridSet, func(d gwc.GridSet) string { return d.ID }, "grid set", id)
		if err != nil {
			return err
		}
		if err := checkEdgeEntries(id, entry); err != nil {
			return err
		}
		var before *layer.Catalogue
		var created bool
		next, err := lr.editor.Update(r.Context(), func(cfg *layer.Config, cur *layer.Catalogue) error {
			if err := gridSetWritable(cur, id); err != nil {
				return err
			}
			if err := preconditions(r, "Grid set "+id, cur.GridSetVersion(id)); err != nil {
				return err
			}
			before = cur
			created, err = cfg.PutGridSetEntry(entry)
			return err
		})
		if err != nil {
			return err
		}
		change := layerChange{XMLName: xml.Name{Local: "gridSetChange"}, Name: id, Action: "modified", Version: next.GridSetVersion(id)}
		if created {
			change.Action = "created"
		}
		if !created {
			// Every tile of the grid set was cut by the old grid.
			total := seed.OrphanReport{Complete: true}
			for _, name := range before.UsersOf(id) {
				old, ok := before.Layer(name)
				if !ok {
					continue // a stored layer that does not build (logged)
				}
				nl, ok := next.Layer(name)
				if !ok {
					continue
				}
				rep, err := lr.planner.Orphans(r.Context(), old, nl, map[string]bool{id: true}, truncate)
				if err != nil {
					return fmt.Errorf("grid set %s saved, but the tiles it orphaned could not be found: %w", id, err)
				}
				total.Sets = append(total.Sets, rep.Sets...)
				total.Removed += rep.Removed
				total.Complete = total.Complete && rep.Complete
				change.Notes = append(change.Notes, "layer "+name+" uses it")
			}
			change.Orphaned = toOrphanXML(total)
		}
		writeChange(w, change)
		return nil
	}
}

// gridSetWritable refuses changes to built-in and file-managed grid sets.
func gridSetWritable(cur *layer.Catalogue, id string) error {
	_, info, ok := cur.GridSet(id)
	switch {
	case ok && info.Managed == "":
		return apperr.New(apperr.Conflict, "Grid set %s is built in: it cannot be changed or deleted (define a grid set of another name)", id)
	case ok && info.Managed != layer.ManagedByStore:
		return fileManaged("Grid set " + id)
	}
	return nil
}

// deleteGridSet removes a grid set no layer uses.
func (lr layersResource) deleteGridSet(id string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		_, err := lr.editor.Update(r.Context(), func(cfg *layer.Config, cur *layer.Catalogue) error {
			if _, _, ok := cur.GridSet(id); !ok {
				return apperr.New(apperr.NotFound, "Unknown grid set: %s", id)
			}
			if err := gridSetWritable(cur, id); err != nil {
				return err
			}
			if users := cur.UsersOf(id); len(users) > 0 {
				return apperr.New(apperr.Conflict, "Grid set %s is used by layers %s: remove it from them first", id, strings.Join(users, ", "))
			}
			if err := preconditions(r, "Grid set "+id, cur.GridSetVersion(id)); err != nil {
				return err
			}
			cfg.DeleteGridSet(id)
			return nil
		})
		if err != nil {
			return err
		}
		writeChange(w, layerChange{XMLName: xml.Name{Local: "gridSetChange"}, Name: id, Action: "deleted"})
		return nil
	}
}
