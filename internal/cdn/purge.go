package cdn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
)

// PurgerOptions tune a Purger. Zero values take the defaults documented per
// field.
type PurgerOptions struct {
	// KeyPrefix is the tile store's key prefix. The CDN's origin path is the
	// prefix, so it is cut from keys to form CDN paths.
	KeyPrefix string
	// Every is how often Run sends what changed. Default 30s: a level that
	// keeps changing (a long reseed) is invalidated once per period, each
	// time a path CloudFront bills beyond its free monthly 1,000.
	Every time.Duration
	// MaxPaths bounds the wildcard paths of one invalidation; beyond it,
	// changes are described more coarsely (a tile set, a layer,
	// everything). Default 15: CloudFront works on at most 15 wildcard
	// paths at a time. Single objects (documents) are exact paths, which
	// CloudFront takes by the thousand: they do not count, and are
	// coarsened only beyond MaxExact.
	MaxPaths int
	// MaxExact bounds the exact paths of one invalidation. Default 1,000
	// (CloudFront works on at most 3,000 at a time).
	MaxExact int
	// Attempts is how often a batch is tried while the CDN answers
	// Unavailable (throttling). Default 5.
	Attempts int
	// Backoff is the wait after the first throttled attempt; it doubles per
	// attempt up to 30s. Default 1s.
	Backoff time.Duration
}

func (o PurgerOptions) withDefaults() PurgerOptions {
	if o.Every <= 0 {
		o.Every = 30 * time.Second
	}
	if o.MaxPaths <= 0 {
		o.MaxPaths = 15
	}
	if o.MaxExact <= 0 {
		o.MaxExact = 1000
	}
	if o.Attempts <= 0 {
		o.Attempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	o.KeyPrefix = strings.Trim(o.KeyPrefix, "/")
	return o
}

// Purger collects what changed in the tile store and invalidates it in the
// CDN in batches of wildcard paths: per tile set and zoom level one path
// (one x column's path when a level changed in a single column), coarser
// when a batch would exceed MaxPaths. Recording a change never blocks on
// the CDN and never fails; sending happens in Run (every Every) or Flush.
// A batch the CDN throttles is retried with backoff and, when it still
// fails, kept for the next send; a batch the CDN refuses is logged and
// dropped. A nil *Purger records nothing. It is safe for concurrent use.
type Purger struct {
	inv  Invalidator
	opts PurgerOptions
	log  *slog.Logger

	// off: there is no CDN (Nop): nothing to record or send.
	off bool

	mu      sync.Mutex
	pending changes
	sendMu  sync.Mutex // one batch in flight at a time
}

// NewPurger returns a purger sending to inv. With Nop (no CDN in front
// of the store) it records and sends nothing, and logs nothing.
func NewPurger(inv Invalidator, opts PurgerOptions, log *slog.Logger) *Purger {
	_, off := inv.(Nop)
	return &Purger{inv: inv, opts: opts.withDefaults(), log: log, off: off}
}

// changes is what changed since the last send, keyed by store key paths
// relative to the key prefix.
type changes struct {
	prefixes map[string]bool        // everything under a prefix ending in "/"
	sets     map[string]*levelRange // tile set dir → changed levels
	keys     map[string]bool        // single objects
}

// levelRange holds, per zoom level of a tile set, the changed columns.
type levelRange map[int][2]int64

func (c *changes) empty() bool {
	return len(c.prefixes) == 0 && len(c.sets) == 0 && len(c.keys) == 0
}

func (c *changes) merge(o changes) {
	for p := range o.prefixes {
		c.prefix(p)
	}
	for dir, lv := range o.sets {
		for z, r := range *lv {
			c.cols(dir, z, r[0], r[1])
		}
	}
	for k := range o.keys {
		c.key(k)
	}
}

func (c *changes) prefix(p string) {
	if c.prefixes == nil {
		c.prefixes = map[string]bool{}
	}
	c.prefixes[p] = true
}

func (c *changes) key(k string) {
	if c.keys == nil {
		c.keys = map[string]bool{}
	}
	c.keys[k] = true
}

func (c *changes) cols(dir string, z int, minX, maxX int64) {
	if c.sets == nil {
		c.sets = map[string]*levelRange{}
	}
	lv, ok := c.sets[dir]
	if !ok {
		lv = &levelRange{}
		c.sets[dir] = lv
	}
	if r, ok := (*lv)[z]; ok {
		minX, maxX = min(minX, r[0]), max(maxX, r[1])
	}
	(*lv)[z] = [2]int64{minX, maxX}
}

// rel cuts the key prefix from a key; ok is false for a key outside it
// (not served by the CDN).
func (p *Purger) rel(key string) (string, bool) {
	if p.opts.KeyPrefix == "" {
		return key, true
	}
	return strings.CutPrefix(key, p.opts.KeyPrefix+"/")
}

// TilesChanged records that tiles of set at level z in columns minX..maxX
// were replaced or deleted.
func (p *Purger) TilesChanged(set tilestore.TileSet, z int, minX, maxX int64) {
	if p == nil || p.off {
		return
	}
	dir, ok := p.rel(set.Dir())
	if !ok {
		return
	}
	p.mu.Lock()
	p.pending.cols(dir, z, minX, maxX)
	p.mu.Unlock()
}

// PrefixChanged records that objects under a key prefix (ending in "/",
// such as tilestore.LayerPrefix) changed or were removed.
func (p *Purger) PrefixChanged(prefix string) {
	if p == nil || p.off {
		return
	}
	rel, ok := p.rel(prefix)
	if !ok {
		return
	}
	p.mu.Lock()
	p.pending.prefix(rel)
	p.mu.Unlock()
}

// KeysChanged records that single objects (documents) changed.
func (p *Purger) KeysChanged(keys ...string) {
	if p == nil || p.off {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range keys {
		if rel, ok := p.rel(k); ok {
			p.pending.key(rel)
		}
	}
}

// Run sends what changed every Every until ctx ends, then sends what is
// left with a short grace period.
func (p *Purger) Run(ctx context.Context) {
	if p == nil || p.off {
		return
	}
	tick := time.NewTicker(p.opts.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			p.Flush(fctx)
			cancel()
			return
		case <-tick.C:
			p.Flush(ctx)
		}
	}
}

// Flush sends what changed now, retrying throttled attempts within ctx.
// It never returns an error: failures are logged, and changes whose
// invalidation could not be sent stay pending for the next Flush.
func (p *Purger) Flush(ctx context.Context) {
	if p == nil || p.off {
		return
	}
	p.sendMu.Lock()
	defer p.sendMu.Unlock()
	p.mu.Lock()
	batch := p.pending
	p.pending = changes{}
	p.mu.Unlock()
	if batch.empty() {
		return
	}
	ps := paths(batch, p.opts.MaxPaths, p.opts.MaxExact)
	if err := p.send(ctx, ps); err != nil {
		if apperr.Is(err, apperr.Unavailable) || ctx.Err() != nil {
			p.log.Warn("cdn invalidation not sent; kept for the next attempt", "paths", len(ps), "err", err)
			p.mu.Lock()
			p.pending.merge(batch)
			p.mu.Unlock()
			return
		}
		p.log.Error("cdn invalidation refused; cached copies expire by their max-age", "paths", ps, "err", err)
	}
}

func (p *Purger) send(ctx context.Context, paths []string) error {
	ref := callerRef()
	wait := p.opts.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		var id string
		id, err = p.inv.Invalidate(ctx, ref, paths)
		if err == nil {
			p.log.Info("cdn invalidation created", "invalidation_id", id, "paths", paths, "attempt", attempt)
			return nil
		}
		if !apperr.Is(err, apperr.Unavailable) || attempt >= p.opts.Attempts {
			return err
		}
		p.log.Warn("cdn invalidation throttled; retrying", "attempt", attempt, "wait", wait.String(), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("invalidate %d paths: %w", len(paths), ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// callerRef is unique per batch and reused by the batch's retries, so a
// retry after a lost answer does not invalidate twice.
func callerRef() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "tilecache-" + strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + hex.EncodeToString(b)
}

// paths turns changes into at most limit wildcard paths (limit ≥ 1) and
// exact ones of single objects, at most maxExact, sorted: one wildcard per
// changed tile set and level if they fit, else one per tile set, else one
// per layer (the single objects under a layer too), else everything. A
// document that changed is never widened to its tile set or layer while
// the exact paths fit: that would evict every tile under it.
func paths(c changes, limit, maxExact int) []string {
	for _, level := range []func(changes) []string{fine, perSet, perLayer} {
		ps := level(c)
		wild := 0
		for _, p := range ps {
			if strings.HasSuffix(p, "*") {
				wild++
			}
		}
		if wild <= limit && len(ps)-wild <= maxExact {
			return ps
		}
	}
	return []string{"/*"}
}

// covered reports whether key lies under one of the prefixes.
func covered(prefixes map[string]bool, key string) bool {
	for p := range prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

func fine(c changes) []string {
	out := map[string]bool{}
	for p := range c.prefixes {
		out[wildcard(p)] = true
	}
	for dir, lv := range c.sets {
		if covered(c.prefixes, dir) {
			continue
		}
		for z, r := range *lv {
			level := dir + strconv.Itoa(z) + "/"
			if r[0] == r[1] {
				level += strconv.FormatInt(r[0], 10) + "/"
			}
			out[wildcard(level)] = true
		}
	}
	for k := range c.keys {
		if !covered(c.prefixes, k) {
			out[escape(k)] = true
		}
	}
	return slices.Sorted(maps.Keys(out))
}

// perSet describes each changed tile set with one path.
func perSet(c changes) []string {
	d := changes{prefixes: maps.Clone(c.prefixes), keys: c.keys}
	for dir := range c.sets {
		d.prefix(dir)
	}
	return fine(d)
}

// perLayer describes each changed layer with one path (objects at the
// root, such as the index, keep their own).
func perLayer(c changes) []string {
	d := changes{}
	first := func(k string) (string, bool) {
		i := strings.IndexByte(k, '/')
		return k[:i+1], i >= 0
	}
	for p := range c.prefixes {
		if l, ok := first(p); ok {
			d.prefix(l)
		} else {
			d.key(p)
		}
	}
	for dir := range c.sets {
		if l, ok := first(dir); ok {
			d.prefix(l)
		}
	}
	for k := range c.keys {
		if l, ok := first(k); ok {
			d.prefix(l)
		} else {
			d.key(k)
		}
	}
	return fine(d)
}

func wildcard(prefix string) string { return escape(prefix) + "*" }

// escape turns a key into a CDN path: "/" and each segment
// percent-encoded as a browser sends it; "*" is encoded, since the CDN
// reads a literal one as a wildcard.
func escape(key string) string {
	var b strings.Builder
	b.WriteByte('/')
	for i, seg := range strings.Split(key, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(strings.ReplaceAll(url.PathEscape(seg), "*", "%2A"))
	}
	return b.String()
}
