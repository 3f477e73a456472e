package quota

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/metrics"
	"tilecache/internal/tilestore"

	"golang.org/x/sync/errgroup"
)

// ConfigSource reads the disk-quota configuration.
type ConfigSource interface {
	QuotaConfig(ctx context.Context) (Config, error)
}

// Activity tells which layers have tasks at work. A layer's usage is only
// recounted when it has none, and a clean-up that ran while one of its
// layers had any marks that layer for a recount.
type Activity interface {
	// ActiveLayers returns the layers with a PENDING or RUNNING task or
	// with a task that may still have a writer although it finished at or
	// after since (a killed one).
	ActiveLayers(ctx context.Context, since time.Time) (map[string]bool, error)
}

// CleanerOptions tune a Cleaner; zero values take the defaults.
type CleanerOptions struct {
	// KeyPrefix is the prefix of every tile key.
	KeyPrefix string
	// Settle is how long after a layer's last task was killed its usage
	// may be recounted: the time a killed lane may take to notice the kill
	// and count its last tiles (the slowest metatile). Default 2m.
	Settle time.Duration
	// Lease bounds how long a clean-up holds its claim, so that a crashed
	// clean-up does not block the next ones forever. Default 15m.
	Lease time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// After stands for time.After in RunSchedule: its channel receives
	// once d has passed by Now. Default time.After. A test gives one whose
	// channels it fires as it moves Now on, so that the schedule's runs
	// happen when it says rather than in real time.
	After func(d time.Duration) <-chan time.Time
	// Changes, if set, is told which tiles a clean-up deleted, so a CDN
	// drops its cached copies (the CDN purger). It must not block.
	Changes interface {
		TilesChanged(set tilestore.TileSet, z int, minX, maxX int64)
	}
}

// Cleaner enforces the disk quota: it expires whole tile pages by the
// configured policy while a layer is over its layer quota or all layers
// together are over the global quota, keeps usage right by recounting
// layers marked dirty (and all of them when usage is missing or the block
// size changed), and answers the usage report. It is safe for concurrent
// use; the clean-up schedule is shared with every other process through
// the usage store (StateStore.ClaimCleanUp), so a clean-up runs once per
// interval however many processes call RunDue.
type Cleaner struct {
	config   ConfigSource
	store    UsageStore
	tiles    tilestore.Store
	layers   *layer.Catalogue
	activity Activity
	opts     CleanerOptions
	log      *slog.Logger

	running sync.Mutex    // one RunDue/Run of this process at a time
	rearm   chan struct{} // wakes RunSchedule after a configuration change
}

// NewCleaner returns a cleaner.
func NewCleaner(config ConfigSource, store UsageStore, tiles tilestore.Store, layers *layer.Catalogue, activity Activity, opts CleanerOptions, log *slog.Logger) *Cleaner {
	if opts.Settle <= 0 {
		opts.Settle = 2 * time.Minute
	}
	if opts.Lease <= 0 {
		opts.Lease = 15 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	return &Cleaner{config: config, store: store, tiles: tiles, layers: layers, activity: activity, opts: opts, log: log,
		rearm: make(chan struct{}, 1)}
}

// RunDue keeps usage right (Maintain) and then, when the quota is enabled
// and the clean-up interval has passed since the last clean-up of any
// process, runs a clean-up. The cleaner function calls it every minute;
// the local program's RunSchedule calls it when the next clean-up is due.
func (c *Cleaner) RunDue(ctx context.Context, now time.Time) error {
	if !c.running.TryLock() {
		return nil // this process is at it already
	}
	defer c.running.Unlock()
	merr := c.maintain(ctx)
	if merr != nil {
		c.log.Error("disk usage maintenance", "err", merr)
	}
	cfg, err := c.config.QuotaConfig(ctx)
	if err != nil {
		return errors.Join(merr, fmt.Errorf("read disk quota configuration: %w", err))
	}
	if !cfg.Enabled {
		return merr
	}
	return errors.Join(merr, c.cleanUp(ctx, cfg, now, cfg.CleanUpInterval()))
}

// Run runs a clean-up now, whatever the schedule, unless another one is
// running; it deletes nothing when the quota is disabled.
func (c *Cleaner) Run(ctx context.Context) error {
	c.running.Lock()
	defer c.running.Unlock()
	cfg, err := c.config.QuotaConfig(ctx)
	if err != nil {
		return fmt.Errorf("read disk quota configuration: %w", err)
	}
	if !cfg.Enabled {
		c.log.Info("clean-up skipped: disk quota disabled")
		return nil
	}
	return c.cleanUp(ctx, cfg, c.opts.Now(), 0)
}

// SetClock replaces the clock (CleanerOptions.Now) and the schedule's
// timer (CleanerOptions.After) of a cleaner nothing runs yet; nil leaves
// one as it is. Tests set a clock they move on.
func (c *Cleaner) SetClock(now func() time.Time, after func(d time.Duration) <-chan time.Time) {
	if now != nil {
		c.opts.Now = now
	}
	if after != nil {
		c.opts.After = after
	}
}

// Rearm makes RunSchedule recompute when the next clean-up is due; call it
// after the configuration changed.
func (c *Cleaner) Rearm() {
	select {
	case c.rearm <- struct{}{}:
	default:
	}
}

// RunSchedule calls RunDue at once, then whenever a clean-up is due (the
// configured interval after the last one, of any process) and at least
// every minute (or every interval, if shorter) for the maintenance, until
// ctx ends. After a configuration change (Rearm) it calls RunDue at once
// and reschedules by the new configuration.
func (c *Cleaner) RunSchedule(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.RunDue(ctx, c.opts.Now()); err != nil && ctx.Err() == nil {
			c.log.Error("scheduled clean-up", "err", err)
		}
		wait := c.untilNext(ctx)
		select {
		case <-ctx.Done():
		case <-c.rearm:
		case <-c.opts.After(wait):
		}
	}
}

// untilNext returns the time until RunSchedule should call RunDue.
func (c *Cleaner) untilNext(ctx context.Context) time.Duration {
	const minWait, retry = 250 * time.Millisecond, 10 * time.Second
	cfg, err := c.config.QuotaConfig(ctx)
	if err != nil {
		return retry
	}
	st, err := c.store.UsageState(ctx)
	if err != nil {
		return retry
	}
	now := c.opts.Now()
	interval := cfg.CleanUpInterval()
	next := now.Add(min(interval, time.Minute))
	if cfg.Enabled {
		due := st.LastCleanUp.Add(interval)
		if st.LeaseUntil.After(due) {
			due = st.LeaseUntil
		}
		if due.Before(next) {
			next = due
		}
	}
	return max(next.Sub(now), minWait)
}

// cleanUp claims the clean-up of now (if interval passed since the last
// one) and runs it: first one clean-up per layer over its layer quota, at
// most MaxConcurrentCleanUps at once, then the global one.
func (c *Cleaner) cleanUp(ctx context.Context, cfg Config, now time.Time, interval time.Duration) error {
	st, err := c.store.UsageState(ctx)
	if err != nil {
		return fmt.Errorf("read usage state: %w", err)
	}
	if !st.Counted {
		c.log.Info("clean-up skipped: disk usage not counted yet")
		return nil
	}
	ok, err := c.store.ClaimCleanUp(ctx, now, interval, c.opts.Lease)
	if err != nil || !ok {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.store.ReleaseCleanUp(rctx, now); err != nil {
			c.log.Warn("release the clean-up claim", "err", err)
		}
	}()
	usage, pending, err := c.usage(ctx)
	if err != nil {
		return err
	}
	var jobs []cleanUpJob
	withQuota := map[string]bool{}
	for _, lq := range cfg.LayerQuotas {
		withQuota[lq.Layer] = true
		if usage[lq.Layer] > lq.Quota && pending[lq.Layer] {
			// Its usage is known to be off until the recount (the next
			// maintenance once its tasks are done): deleting by it could
			// delete what the quota allows.
			metrics.CleanUps.Add(ctx, 1, "deferred")
			c.log.Info("clean-up of a layer deferred: its usage awaits a recount", "layer", lq.Layer,
				"used_bytes", usage[lq.Layer], "quota_bytes", lq.Quota)
			continue
		}
		if usage[lq.Layer] > lq.Quota {
			jobs = append(jobs, cleanUpJob{name: lq.Layer, layers: []string{lq.Layer}, limit: lq.Quota, policy: lq.Policy})
		}
	}
	// Every layer's clean-up runs to its end (a plain group: one failure
	// cancels none of the others) and every failure is reported.
	var g errgroup.Group
	g.SetLimit(int(max(cfg.MaxConcurrentCleanUps, 1)))
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		g.Go(func() error {
			errs[i] = c.expire(ctx, j)
			return nil
		})
	}
	g.Wait() // nil: each clean-up's error is in errs
	if ctx.Err() != nil {
		return errors.Join(errs...)
	}
	// The global quota holds for all layers together; like GeoWebCache, it
	// expires pages of the layers without a quota of their own.
	if usage, pending, err = c.usage(ctx); err != nil {
		return errors.Join(append(errs, err)...)
	}
	var total int64
	var managed, awaiting []string
	for l, b := range usage {
		total += b
		if pending[l] {
			awaiting = append(awaiting, l)
		}
		if !withQuota[l] {
			managed = append(managed, l)
		}
	}
	slices.Sort(managed)
	slices.Sort(awaiting)
	if total > cfg.GlobalQuota {
		if len(awaiting) > 0 {
			// The total is off by what the recounts will find.
			metrics.CleanUps.Add(ctx, 1, "deferred")
			c.log.Info("global clean-up deferred: layers await a recount", "layers", awaiting,
				"used_bytes", total, "quota_bytes", cfg.GlobalQuota)
		} else if len(managed) == 0 {
			c.log.Warn("clean-up: over the global quota, but every layer has a quota of its own",
				"used_bytes", total, "quota_bytes", cfg.GlobalQuota)
		} else {
			errs = append(errs, c.expire(ctx, cleanUpJob{name: "", layers: managed, limit: cfg.GlobalQuota, policy: cfg.GlobalPolicy, global: true}))
		}
	}
	if len(jobs) == 0 && total <= cfg.GlobalQuota {
		c.log.Debug("clean-up: usage within quota", "used_bytes", total, "global_quota_bytes", cfg.GlobalQuota)
	}
	return errors.Join(errs...)
}

// usage returns the used bytes per layer, and the layers whose usage
// awaits a recount.
func (c *Cleaner) usage(ctx context.Context) (used map[string]int64, pending map[string]bool, err error) {
	ls, err := c.store.Layers(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("read layer usage: %w", err)
	}
	used, pending = make(map[string]int64, len(ls)), map[string]bool{}
	for _, l := range ls {
		used[l.Layer] = l.Bytes
		if l.Dirty {
			pending[l.Layer] = true
		}
	}
	return used, pending, nil
}

// cleanUpJob is one clean-up: expire pages of layers while their usage is
// over limit (for the global one, while all layers' usage is).
type cleanUpJob struct {
	name   string // the layer of a layer quota
	layers []string
	limit  int64
	policy string
	global bool
}

// expire runs one clean-up and logs its outcome.
func (c *Cleaner) expire(ctx context.Context, j cleanUpJob) error {
	start := c.opts.Now()
	log := c.log.With("quota", "layer", "layer", j.name)
	if j.global {
		log = c.log.With("quota", "global", "layers", j.layers)
	}
	log = log.With("policy", j.policy, "quota_bytes", j.limit)
	usage, _, err := c.usage(ctx)
	if err != nil {
		metrics.CleanUps.Add(ctx, 1, "failed")
		log.Error("clean-up failed", "err", err)
		return err
	}
	var used int64
	if j.global {
		for _, b := range usage {
			used += b
		}
	} else {
		used = usage[j.name]
	}
	before := used
	src := newPageSource(c.store, j.layers, j.policy)
	var deletedPages, deletedTiles, freed int64
	touched := map[string]bool{}
	for used > j.limit {
		if err = ctx.Err(); err != nil {
			break
		}
		var p Page
		var more bool
		if p, more, err = src.next(ctx); err != nil || !more {
			break
		}
		var removed Page
		var found bool
		if removed, found, err = c.deletePage(ctx, p); err != nil {
			break
		}
		touched[p.Key.Set.Layer] = true
		if found {
			deletedPages++
			deletedTiles += removed.Tiles
			freed += removed.Bytes
			used -= removed.Bytes
		}
	}
	c.checkRaces(ctx, touched, start)
	metrics.CleanUpTiles.Add(ctx, float64(deletedTiles))
	attrs := []any{"used_bytes_before", before, "used_bytes_after", used, "pages_read", src.read(), "pages_deleted", deletedPages,
		"tiles_deleted", deletedTiles, "bytes_freed", freed, "duration", c.opts.Now().Sub(start).String()}
	switch {
	case err != nil:
		metrics.CleanUps.Add(ctx, 1, "failed")
		log.Error("clean-up failed", append(attrs, "err", err)...)
		return fmt.Errorf("clean-up of %v: %w", j.layers, err)
	case used > j.limit:
		metrics.CleanUps.Add(ctx, 1, "over_quota")
		log.Warn("clean-up finished over quota: no pages left to expire", attrs...)
	default:
		metrics.CleanUps.Add(ctx, 1, "done")
		log.Info("clean-up finished", attrs...)
	}
	return nil
}

// pageSource yields the pages of a clean-up in expiration order: read from
// the store's order a batch at a time, or, from a store that keeps no
// order (ErrUnordered), all read at once and sorted in memory.
type pageSource struct {
	store   PageStore
	layers  []string
	policy  string
	ordered *OrderedPages
	sorted  []Page // the fallback's pages, once read
	loaded  bool
	n       int64 // pages read by the fallback
}

func newPageSource(store PageStore, layers []string, policy string) *pageSource {
	return &pageSource{store: store, layers: layers, policy: policy, ordered: NewOrderedPages(store, layers, policy)}
}

// next returns the next page in expiration order; more is false when
// there are none left.
func (s *pageSource) next(ctx context.Context) (p Page, more bool, err error) {
	if s.ordered != nil {
		p, more, err = s.ordered.Next(ctx)
		if !errors.Is(err, ErrUnordered) {
			if err != nil {
				err = fmt.Errorf("clean-up: %w", err)
			}
			return p, more, err
		}
		s.n, s.ordered = s.ordered.Read(), nil
	}
	if !s.loaded {
		s.loaded = true
		for _, l := range s.layers {
			ps, err := s.store.Pages(ctx, l)
			if err != nil {
				return Page{}, false, fmt.Errorf("clean-up: %w", err)
			}
			s.sorted = append(s.sorted, ps...)
			s.n += int64(len(ps))
		}
		Order(s.sorted, s.policy)
	}
	if len(s.sorted) == 0 {
		return Page{}, false, nil
	}
	p, s.sorted = s.sorted[0], s.sorted[1:]
	return p, true, nil
}

// read returns the number of pages read so far.
func (s *pageSource) read() int64 {
	if s.ordered != nil {
		return s.ordered.Read()
	}
	return s.n
}

// checkRaces marks the layers a clean-up changed for a recount when a task
// of theirs worked meanwhile: a lane may count a tile at its next
// checkpoint that the clean-up deleted.
func (c *Cleaner) checkRaces(ctx context.Context, layers map[string]bool, since time.Time) {
	if len(layers) == 0 {
		return
	}
	active, err := c.activity.ActiveLayers(ctx, since)
	var dirty []string
	for l := range layers {
		if err != nil || active[l] {
			dirty = append(dirty, l)
		}
	}
	if len(dirty) == 0 {
		return
	}
	if err := c.store.MarkDirty(context.WithoutCancel(ctx), dirty); err != nil {
		c.log.Error("mark usage for a recount", "layers", dirty, "err", err)
	}
}

// Order sorts pages into expiration order: LRU, the least recently used
// first (by Page.Used); LFU, the least frequently used first (by
// Page.Frequency, then as LRU). Ties go to the older page, then by page id.
func Order(pages []Page, policy string) {
	byUse := func(a, b Page) int {
		if c := a.Used().Compare(b.Used()); c != 0 {
			return c
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Key.ID(), b.Key.ID())
	}
	if policy == PolicyLFU {
		slices.SortStableFunc(pages, func(a, b Page) int {
			if c := cmp.Compare(a.Frequency(), b.Frequency()); c != 0 {
				return c
			}
			return byUse(a, b)
		})
		return
	}
	slices.SortStableFunc(pages, byUse)
}

// deletePage deletes a page's tiles, then its record.
func (c *Cleaner) deletePage(ctx context.Context, p Page) (Page, bool, error) {
	k := p.Key
	keys, err := c.pageKeys(ctx, k)
	if err != nil {
		return Page{}, false, err
	}
	if c.opts.Changes != nil && len(keys) > 0 {
		if set, _, known := c.tileSet(k.Set); known {
			x0, _, x1, _ := k.TileRange()
			// Reported before the deletes: the purger sends later, and a
			// failed delete part way has removed some tiles too.
			c.opts.Changes.TilesChanged(set, k.Z, x0, x1)
		}
	}
	for len(keys) > 0 {
		n := min(len(keys), tilestore.DeleteBatch)
		if _, err := c.tiles.Delete(ctx, keys[:n]); err != nil {
			return Page{}, false, fmt.Errorf("delete the tiles of page %s: %w", k.ID(), err)
		}
		keys = keys[n:]
	}
	return c.store.DeletePageAsRead(ctx, p)
}

// tileSet returns where the store keeps the tiles of a usage tile set
// (see layer.Catalogue.TilesID); reachable is false when the layer's name
// is another layer's id, known when the format's extension is known.
func (c *Cleaner) tileSet(s tilestore.SetName) (set tilestore.TileSet, reachable, known bool) {
	id, reachable := c.layers.TilesID(s.Layer)
	ext, known := tilestore.FormatExt(s.FormatID)
	return tilestore.TileSet{SetName: s, Prefix: c.opts.KeyPrefix, LayerID: id, Ext: ext}, reachable, known
}

// pageKeys returns the keys of every tile the page can hold: its 64×64
// positions clipped to the layer's coverage when the layer is configured.
// For a format whose extension is unknown it lists the page's columns.
// A page whose tiles cannot be told apart from another layer's (its
// layer's name is that layer's id) has none: only its record goes.
func (c *Cleaner) pageKeys(ctx context.Context, k PageKey) ([]string, error) {
	set, reachable, known := c.tileSet(k.Set)
	if !reachable {
		return nil, nil
	}
	x0, y0, x1, y1 := k.TileRange()
	if l, ok := c.layers.Layer(k.Set.Layer); ok {
		if sub, ok := l.Subset(k.Set.GridSetID); ok && k.Z < sub.GridSet.Levels() {
			cov := sub.CoverageRange(k.Z)
			x0, y0, x1, y1 = max(x0, cov.MinX), max(y0, cov.MinY), min(x1, cov.MaxX), min(y1, cov.MaxY)
		}
	}
	var keys []string
	for x := x0; x <= x1; x++ {
		if known {
			for y := y0; y <= y1; y++ {
				keys = append(keys, set.Key(k.Z, x, y))
			}
			continue
		}
		// The listing holds the keys of level k.Z and column x alone (a
		// parsed key's numbers are canonical), whatever their extension.
		col := fmt.Sprintf("%s%d/", set.LevelDir(k.Z), x)
		err := c.tiles.List(ctx, col, func(o tilestore.Object) error {
			if _, _, _, y, ok := tilestore.ParseLayerKey(set.Prefix, set.LayerID, o.Key); ok && y >= y0 && y <= y1 {
				keys = append(keys, o.Key)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list the tiles of page %s: %w", k.ID(), err)
		}
	}
	return keys, nil
}
