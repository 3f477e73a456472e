package quota

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"tilecache/internal/tilestore"
)

// PageShift sets the size of a tile page: 1<<PageShift tiles on each side
// (64×64), as GeoWebCache's page pyramids group tiles. The quota owns this
// geometry: the access log mapper below it is given it
// (accesslog.MapperConfig.PageShift).
const PageShift = 6

// PageKey identifies a tile page: tiles (X<<PageShift … +63, Y<<PageShift …
// +63) of level Z of a tile set, rows counted from the bottom as in tile
// keys. It is comparable, so it can key maps.
type PageKey struct {
	Set  tilestore.SetName
	Z    int
	X, Y int64
}

// PageOf returns the page holding tile z/x/y of set.
func PageOf(set tilestore.SetName, z int, x, y int64) PageKey {
	return PageKey{Set: set, Z: z, X: x >> PageShift, Y: y >> PageShift}
}

// ID returns the page's identifier within its layer:
// "layer|gridSet|formatId|parametersId|z|x|y".
func (k PageKey) ID() string {
	var b strings.Builder
	b.Grow(64)
	b.WriteString(k.Set.ID())
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(k.Z))
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(k.X, 10))
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(k.Y, 10))
	return b.String()
}

// LevelPrefix returns the prefix of the ids of the pages of level z of
// set: "layer|gridSet|formatId|parametersId|z|". Page ids sort by set,
// then level, so a level's pages are one run of ids.
func LevelPrefix(set tilestore.SetName, z int) string {
	return set.ID() + "|" + strconv.Itoa(z) + "|"
}

// TileRange returns the first and last tile column and row of the page.
func (k PageKey) TileRange() (minX, minY, maxX, maxY int64) {
	const side = 1 << PageShift
	return k.X << PageShift, k.Y << PageShift, k.X<<PageShift + side - 1, k.Y<<PageShift + side - 1
}

// Blocks returns size rounded up to a whole number of blockSize blocks: the
// space a tile of size bytes is counted for. A non-positive blockSize counts
// bytes as they are.
func Blocks(size, blockSize int64) int64 {
	if size <= 0 {
		return 0
	}
	if blockSize <= 0 {
		return size
	}
	return (size + blockSize - 1) / blockSize * blockSize
}

// PageDelta is a change of a page's tile count and used bytes; in a recount
// (ReplaceLayer) it carries absolute values instead.
type PageDelta struct {
	Page  PageKey
	Tiles int64
	Bytes int64 // block-rounded
}

// Deltas aggregates page changes in memory. The zero value is not usable;
// make one with make(Deltas).
type Deltas map[PageKey]PageDelta

// Add adds a change to page k. A change of zero still records the page, so
// that len counts the pages a batch touched.
func (d Deltas) Add(k PageKey, tiles, bytes int64) {
	c := d[k]
	c.Page = k
	c.Tiles += tiles
	c.Bytes += bytes
	d[k] = c
}

// List returns the non-zero changes ordered by page id.
func (d Deltas) List() []PageDelta {
	out := make([]PageDelta, 0, len(d))
	for _, c := range d {
		if c.Tiles != 0 || c.Bytes != 0 {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b PageDelta) int { return cmp.Compare(a.Page.ID(), b.Page.ID()) })
	return out
}

// Page is a tile page's record: how many tiles and bytes of the cache it
// holds, and how its tiles are used.
type Page struct {
	Key   PageKey
	Tiles int64
	Bytes int64 // block-rounded
	// Created is when the page first held a tile (since it was last removed).
	Created time.Time
	// LastAccess is when a client last read one of its tiles; zero if never.
	LastAccess time.Time
	// Hits counts the client reads of its tiles.
	Hits int64
}

// Used returns the time the LRU policy orders by: the last access, or the
// creation for a page never read.
func (p Page) Used() time.Time {
	if p.LastAccess.After(p.Created) {
		return p.LastAccess
	}
	return p.Created
}

// Frequency returns the page's frequency of use as GeoWebCache computes it
// (without its fill factor): hits per minute over the page's life from its
// creation to its last access, counting that life as at least one minute.
func (p Page) Frequency() float64 {
	age := p.Used().Sub(p.Created)
	return float64(p.Hits) / (1 + age.Minutes())
}

// LayerUsage is a layer's usage totals: the sums over its pages.
type LayerUsage struct {
	Layer string
	Tiles int64
	Bytes int64 // block-rounded
	// Dirty says the totals may be wrong (work was lost in a crash, or two
	// writers raced on one tile set) and a recount is pending.
	Dirty bool
	// Version changes with every change to the layer's pages or totals; a
	// recount applies only if it has not changed since the recount began.
	Version int64
}

// State is the usage store's bookkeeping.
type State struct {
	// Counted is set once usage has been set up to be counted (every layer
	// known then was marked for a recount); before that, usage is missing.
	Counted bool
	// BlockSize is the diskBlockSize usage is counted in.
	BlockSize int64
	// LastCleanUp is when the last clean-up started; zero if never.
	LastCleanUp time.Time
	// LeaseUntil is when the running clean-up's claim expires; a clean-up
	// cannot start before (zero when none runs).
	LeaseUntil time.Time
}

// Access is the aggregated client reads of one page since the last flush.
type Access struct {
	Page PageKey
	Hits int64
	Last time.Time
}

// Accounting is what writers of tiles use to keep usage right. Deltas from
// a lane's checkpoint do not go through it: task.Checkpoint carries them, so
// that they are applied exactly once, atomically with the checkpoint.
type Accounting interface {
	// ApplyDeltas adds deltas to their pages and layer totals (creating
	// pages as needed), unconditionally.
	ApplyDeltas(ctx context.Context, deltas []PageDelta, now time.Time) error
	// MarkDirty flags layers for a recount.
	MarkDirty(ctx context.Context, layers []string) error
	// RemoveLayer forgets every page of a layer and zeroes its totals (mass
	// truncation, a deleted layer's truncation), leaving the layer dirty
	// if dirty is set and clearing a recount flagged before otherwise: the
	// caller deleted every tile of the layer, so zero is its exact count.
	RemoveLayer(ctx context.Context, layer string, dirty bool) error
}

// AccessStore records client reads.
type AccessStore interface {
	// RecordAccess adds hits to pages and moves their last access forward
	// to Last (never back). Pages that do not exist are skipped.
	RecordAccess(ctx context.Context, accesses []Access) error
}

// PageStore is what the clean-up reads and removes.
type PageStore interface {
	// Layers returns the totals of every layer that has usage recorded (or
	// was marked dirty), ordered by layer name.
	Layers(ctx context.Context) ([]LayerUsage, error)
	// Pages returns a layer's pages that hold tiles or bytes, in page id order.
	Pages(ctx context.Context, layer string) ([]Page, error)
	// LevelPages returns up to limit of the pages of tile set set at level
	// z that hold tiles or bytes, in page id order, starting after the
	// page whose id is after (at the first when after is empty), and the
	// after of the next call: "" when there are no more (a store may give
	// one more that leads to an empty last call). It reads the
	// level by its key prefix (LevelPrefix): about limit pages (plus empty
	// ones the store keeps) a call, however many the layer and the level
	// hold.
	LevelPages(ctx context.Context, set tilestore.SetName, z int, after string, limit int) (pages []Page, next string, err error)
	// PagesInOrder returns up to limit of a layer's pages that hold tiles
	// or bytes, in the expiration order of policy (by OrderKey), starting
	// after the page whose OrderKey is cursor (at the first when cursor is
	// empty), and the cursor of the next call: "" when there are no more.
	// It reads about as many pages as it returns (plus empty ones the
	// store keeps), however many the layer holds. A store that cannot
	// returns ErrUnordered.
	PagesInOrder(ctx context.Context, layer, policy, cursor string, limit int) (pages []Page, next string, err error)
	// DeletePage removes a page record and subtracts what it held from its
	// layer's totals, atomically, and returns the record as removed; found
	// is false when there was none.
	DeletePage(ctx context.Context, key PageKey) (removed Page, found bool, err error)
	// DeletePageAsRead is DeletePage of a page just read (by Pages or
	// PagesInOrder): it may spare reading the page again when the page
	// still holds what p says.
	DeletePageAsRead(ctx context.Context, p Page) (removed Page, found bool, err error)
}

// RecountStore replaces a layer's usage with a recount.
type RecountStore interface {
	// ReplaceLayer sets the layer's pages to counts (absolute tile and byte
	// counts per page; pages not listed are removed, access statistics of
	// pages that stay are kept), sets its totals to their sums and clears
	// its dirty flag, provided the layer's Version is still version; else
	// it fails with apperr.Conflict. A store that cannot apply a recount in
	// one atomic step may apply part of it before the conflict; the layer
	// then stays dirty.
	ReplaceLayer(ctx context.Context, layer string, version int64, counts []PageDelta, now time.Time) error
}

// StateStore holds the usage bookkeeping and the clean-up schedule, shared
// by every process.
type StateStore interface {
	// UsageState returns the state; the zero State when none was stored.
	UsageState(ctx context.Context) (State, error)
	// Rebase records that usage is counted in blockSize blocks (Counted
	// set) and marks layers dirty, so that each is recounted.
	Rebase(ctx context.Context, blockSize int64, layers []string) error
	// ClaimCleanUp starts a clean-up at now if the last one started at or
	// before now−interval and no claim is held (LeaseUntil ≤ now): it sets
	// LastCleanUp to now and LeaseUntil to now+lease, atomically, and
	// reports whether it did.
	ClaimCleanUp(ctx context.Context, now time.Time, interval, lease time.Duration) (bool, error)
	// ReleaseCleanUp clears the lease of the clean-up claimed at claimed.
	ReleaseCleanUp(ctx context.Context, claimed time.Time) error
}

// UsageStore is the whole usage store, implemented by the state adapters
// (bolt.Usage and dynamo.Usage in internal/state); every implementation
// must pass quotatest.Run.
type UsageStore interface {
	Accounting
	AccessStore
	PageStore
	RecountStore
	StateStore
}
