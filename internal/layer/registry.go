package layer

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"tilecache/internal/apperr"
)

// Registry keeps a live Catalogue of the layer file and the stored
// configuration: every process holds one, and sees another process's
// change within RefreshEvery (see Refresh). Its own changes (Update) are
// seen at once.
type Registry struct {
	file     []byte
	fileName string
	store    ConfigStore
	every    time.Duration
	live     *Catalogue
	log      *slog.Logger

	mu      sync.Mutex
	checked time.Time // of the last version read
	// failed is the stored version that could not be loaded (0: none):
	// Refresh does not read it again while the stored version is still it.
	failed   int64
	onUpdate []func(ctx context.Context, c *Catalogue, changed []string)
	validate func(*Catalogue) error
	now      func() time.Time
}

// RefreshEvery is how often, at most, a process reads the stored
// configuration's version: a change made elsewhere is seen within it.
const RefreshEvery = 5 * time.Second

// maxUpdateTries bounds the read-modify-write rounds of one Update that
// lose to other writers.
const maxUpdateTries = 8

// OpenRegistry loads the layer file's content (file, called fileName in
// messages) and the stored configuration of store. The first start
// (nothing stored yet) copies the file's entries marked `managedBy:
// store` into the store. A stored configuration that no longer fits the
// file (a layer file changed since) is logged and the file alone used, so
// that a deployment always starts.
func OpenRegistry(ctx context.Context, file []byte, fileName string, store ConfigStore, every time.Duration, log *slog.Logger) (*Registry, error) {
	if every <= 0 {
		every = RefreshEvery
	}
	r := &Registry{file: file, fileName: fileName, store: store, every: every, log: log, now: time.Now}
	if err := r.seed(ctx); err != nil {
		// The file's store-managed entries are used as they are while the
		// store holds nothing (see Merge); the next start tries again.
		log.Warn("the layer file's store-managed entries were not copied into the store", "err", err)
	}
	st, err := store.Config(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the stored layer configuration: %w", err)
	}
	c, err := r.load(st, nil)
	if err != nil {
		log.Error("the stored layer configuration cannot be read: serving the layer file's layers alone until it is fixed", "version", st.Version, "err", err)
		if c, err = Parse(file, fileName); err != nil {
			return nil, err
		}
		r.failed = st.Version
	}
	r.live = c
	r.checked = r.now()
	return r, nil
}

// seed copies the file's `managedBy: store` entries into an empty store.
func (r *Registry) seed(ctx context.Context) error {
	doc, err := seedEntries(r.file)
	if err != nil || doc == nil {
		return err
	}
	v, err := r.store.ConfigVersion(ctx)
	if err != nil {
		return fmt.Errorf("read the stored layer configuration's version: %w", err)
	}
	if v != 0 {
		return nil
	}
	if _, skipped, err := r.merge(StoredConfig{Version: 1, Doc: doc}); err != nil {
		return err
	} else if len(skipped) > 0 {
		return fmt.Errorf("the layer file's store-managed entries do not fit its other entries: %v", joinSkipped(skipped))
	}
	_, err = r.store.SaveConfig(ctx, 0, doc)
	if apperr.Is(err, apperr.Conflict) {
		return nil // another process seeded it first
	}
	if err != nil {
		return fmt.Errorf("copy the layer file's store-managed entries into the store: %w", err)
	}
	r.log.Info("layer file entries copied into the stored configuration", "file", r.fileName)
	return nil
}

// merge builds the catalogue of the file and st, logging each warning,
// and returns the stored entries it skipped (see Merge).
func (r *Registry) merge(st StoredConfig) (*Catalogue, map[string]error, error) {
	c, warnings, skipped, err := merge(r.file, r.fileName, st)
	for _, w := range warnings {
		r.log.Warn(w, "version", st.Version)
	}
	return c, skipped, err
}

// load builds the catalogue of the file and st as merge does, its stored
// layers built on first use (see mergeLazy), taking over prev's layers
// whose entries did not change; it logs each warning.
func (r *Registry) load(st StoredConfig, prev *contents) (*Catalogue, error) {
	c, warnings, err := mergeLazy(r.file, r.fileName, st, prev, r.log)
	for _, w := range warnings {
		r.log.Warn(w, "version", st.Version)
	}
	return c, err
}

// current is the catalogue of the file and st for an edit: the live one
// when st is its version, else st's, its stored layers built on use.
func (r *Registry) current(st StoredConfig) (*Catalogue, error) {
	live := r.live.Snapshot()
	if live.Version() == st.Version && st.Version != 0 {
		return live, nil
	}
	return r.load(st, live.get())
}

// joinSkipped lists skipped entries and their reasons, in name order.
func joinSkipped(skipped map[string]error) string {
	keys := slices.Sorted(maps.Keys(skipped))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %v", k, skipped[k])
	}
	return strings.Join(parts, "; ")
}

// Catalogue returns the live catalogue: the same value for the registry's
// life, whose contents follow the configuration.
func (r *Registry) Catalogue() *Catalogue { return r.live }

// OnUpdate registers f, called with the new catalogue after each change
// Update saved (in Update's goroutine): the process that makes a change
// brings what follows from it up to date (documents, the CDN), once.
// changed names the layers the change added, changed or deleted (and the
// users of a grid set it changed), sorted; nil when any may have.
func (r *Registry) OnUpdate(f func(ctx context.Context, c *Catalogue, changed []string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onUpdate = append(r.onUpdate, f)
}

// Validate sets a check of a change beyond the layer file's rules (that
// its sources can be built, say), run by Update before it saves; its
// error is the client's (apperr.Invalid). f is given the layers the
// change added or changed, and the users of a grid set it changed (a
// catalogue of these layers and every grid set): the others were checked
// when they were saved.
func (r *Registry) Validate(f func(*Catalogue) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.validate = f
}

// Refresh reads the stored configuration's version when the last read is
// RefreshEvery old or more, and loads the configuration when it changed.
// It reports whether the catalogue changed. Cheap to call often: that is
// what it is for (each Lambda invocation calls it).
func (r *Registry) Refresh(ctx context.Context) (bool, error) {
	r.mu.Lock()
	due := r.now().Sub(r.checked) >= r.every
	if due {
		r.checked = r.now()
	}
	r.mu.Unlock()
	if !due {
		return false, nil
	}
	return r.Sync(ctx)
}

// Sync reads the stored configuration's version now, whatever the
// period, and loads the configuration when it changed: what a request that
// must not act on a layer deleted elsewhere calls first (a seed's submit).
// It reports whether the catalogue changed.
func (r *Registry) Sync(ctx context.Context) (bool, error) {
	v, err := r.store.ConfigVersion(ctx)
	if err != nil {
		return false, fmt.Errorf("read the stored layer configuration's version: %w", err)
	}
	r.mu.Lock()
	failed := r.failed
	r.mu.Unlock()
	if v == r.live.Version() || v == failed {
		// A version that failed to load is not read again: it cannot load
		// until the next save (or a new layer file, a new process).
		return false, nil
	}
	return r.Reload(ctx)
}

// Reload loads the stored configuration now.
func (r *Registry) Reload(ctx context.Context) (bool, error) {
	st, err := r.store.Config(ctx)
	if err != nil {
		return false, fmt.Errorf("read the stored layer configuration: %w", err)
	}
	return r.install(st)
}

// install makes st's catalogue the live one unless the live one is as new.
func (r *Registry) install(st StoredConfig) (bool, error) {
	r.mu.Lock()
	if st.Version <= r.live.Version() {
		r.mu.Unlock()
		return false, nil
	}
	c, err := r.load(st, r.live.get())
	if err != nil {
		r.failed = st.Version
		r.mu.Unlock()
		return false, fmt.Errorf("stored layer configuration version %d: %w", st.Version, err)
	}
	r.failed = 0
	r.live.replace(c)
	r.checked = r.now()
	r.mu.Unlock()
	r.log.Info("layer configuration changed", "version", st.Version, "layers", len(c.Names()))
	return true, nil
}

// installBuilt makes c, the catalogue of a configuration this process
// saved, the live one unless the live one is as new.
func (r *Registry) installBuilt(c *Catalogue) {
	r.mu.Lock()
	if c.Version() <= r.live.Version() {
		r.mu.Unlock()
		return
	}
	r.failed = 0
	r.live.replace(c)
	r.checked = r.now()
	r.mu.Unlock()
	r.log.Info("layer configuration changed", "version", c.Version(), "layers", len(c.Names()))
}

// Update changes the stored configuration: edit gets its document and
// the catalogue it makes with the file (the newest, read in the same
// round) and edits the document, or returns an error (an apperr error
// for the client). The result must make a valid catalogue with the file
// (apperr.Invalid otherwise). The save is conditional on the version read;
// when another writer saved first, the round is run again with its
// configuration. It returns the new catalogue (a snapshot).
func (r *Registry) Update(ctx context.Context, edit func(doc *Config, current *Catalogue) error) (*Catalogue, error) {
	for range maxUpdateTries {
		st, err := r.store.Config(ctx)
		if err != nil {
			return nil, fmt.Errorf("read the stored layer configuration: %w", err)
		}
		// The current catalogue for edit, its stored layers built on use
		// (those of the live one taken over).
		current, err := r.current(st)
		if err != nil {
			return nil, fmt.Errorf("stored layer configuration version %d: %w", st.Version, err)
		}
		doc, err := ParseConfig(st.Doc)
		if err != nil {
			return nil, err
		}
		if err := edit(doc, current); err != nil {
			return nil, err
		}
		data, err := doc.Bytes()
		if err != nil {
			return nil, err
		}
		next := StoredConfig{Version: st.Version + 1, Doc: data}
		chk, err := r.checkChange(st, current, doc, next)
		if err != nil {
			return nil, err
		}
		c := chk.next
		r.mu.Lock()
		validate := r.validate
		r.mu.Unlock()
		if validate != nil {
			if err := validate(chk.changed); err != nil {
				return nil, apperr.Wrap(apperr.Invalid, err, "%v", err)
			}
		}
		if len(data) > MaxStoredConfig {
			return nil, apperr.Invalidf("the stored configuration would be %d bytes, more than the %d it may have", len(data), MaxStoredConfig)
		}
		v, err := r.store.SaveConfig(ctx, st.Version, data)
		if apperr.Is(err, apperr.Conflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("save the layer configuration: %w", err)
		}
		if v == next.Version {
			r.installBuilt(c)
		} else if _, err := r.install(StoredConfig{Version: v, Doc: data}); err != nil {
			return nil, err
		}
		r.mu.Lock()
		hooks := slices.Clone(r.onUpdate)
		r.mu.Unlock()
		for _, f := range hooks {
			f(ctx, c, chk.names)
		}
		return c, nil
	}
	return nil, apperr.New(apperr.Conflict, "The layer configuration changed %d times while this change was being made: try again", maxUpdateTries)
}
