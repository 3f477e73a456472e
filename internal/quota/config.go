// Package quota enforces the disk quota: the configuration model (REST
// contract §8.1), usage accounting in tile pages, the LRU/LFU clean-up, the
// recount that rebuilds usage from the tile store, and the usage report.
//
// # Usage
//
// Usage is kept per tile page, as GeoWebCache keeps it: the tiles of one
// tile set (layer, grid set, format, parameters id) and level are grouped
// into pages of 64×64 tiles (PageKey), and each page records its tiles, its
// bytes (each tile rounded up to diskBlockSize), its creation, last access
// and hits. Layer totals are kept with the pages. The store is the
// consumer-side UsageStore, implemented by the state adapters (Usage), and
// every implementation passes quotatest.Run.
//
// Writers never write per tile: the seed engine adds a lane's changes up in
// memory and hands them to its checkpoint, which applies them in the same
// atomic step as the cursor (see seed.Usage); client reads are aggregated
// by a Recorder and flushed every few seconds. Work that may have been lost
// uncounted (a crash, a takeover, two writers on one tile set) marks the
// layer dirty, and the Cleaner recounts a dirty layer from a listing of its
// tiles once none of its tasks has worked for a while; usage missing or
// counted in another block size marks every layer.
//
// # Clean-up
//
// Cleaner.RunDue runs a clean-up when the quota is enabled and the interval
// has passed since the last one of any process (the time is claimed in the
// store): one clean-up per layer over its layer quota, at most
// maxConcurrentCleanUps at once, then one for the global quota, which
// counts all layers and expires pages of the layers without a quota of
// their own. A clean-up deletes whole pages in policy order (Order) until
// usage is back under the quota.
//
// This file is the configuration: its defaults, the all-or-nothing patch that
// the REST layer applies on PUT /rest/diskquota, and the quota value/units
// conversions used on the wire.
//
// Enumerated names (cacheCleanUpUnits, expiration policies, quota units) are
// accepted case-insensitively and with surrounding whitespace, and are stored
// in their canonical spelling: SECONDS, MINUTES, HOURS, DAYS; LRU, LFU; B,
// KiB, MiB, GiB, TiB. GeoWebCache itself is case-sensitive; being lenient here
// cannot change the meaning of a request that GeoWebCache accepts.
package quota

import (
	"context"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"tilecache/internal/apperr"
)

// Clean-up frequency units, in their canonical (stored) spelling.
const (
	UnitsSeconds = "SECONDS"
	UnitsMinutes = "MINUTES"
	UnitsHours   = "HOURS"
	UnitsDays    = "DAYS"
)

// Expiration policies, in their canonical (stored) spelling.
const (
	PolicyLRU = "LRU" // least recently used pages expire first
	PolicyLFU = "LFU" // least frequently used pages expire first
)

// ConfigStore keeps the disk-quota configuration (the state adapters'
// Usage implements it).
type ConfigStore interface {
	// QuotaConfig returns the stored configuration, or Default() if none
	// was ever stored.
	QuotaConfig(ctx context.Context) (Config, error)
	// UpdateQuotaConfig atomically replaces the configuration with
	// fn(current); an error from fn changes nothing and is returned.
	UpdateQuotaConfig(ctx context.Context, fn func(Config) (Config, error)) (Config, error)
}

// Config is the disk-quota configuration. Sizes are in bytes. The JSON tags
// are the storage form, not the wire form (see package gwc for that).
type Config struct {
	Enabled bool `json:"enabled"`
	// DiskBlockSize is the allocation unit, in bytes, that tile sizes are
	// rounded up to when usage is counted.
	DiskBlockSize         int64        `json:"diskBlockSize"`
	CleanUpFrequency      int64        `json:"cacheCleanUpFrequency"`
	CleanUpUnits          string       `json:"cacheCleanUpUnits"` // SECONDS|MINUTES|HOURS|DAYS
	MaxConcurrentCleanUps int64        `json:"maxConcurrentCleanUps"`
	GlobalPolicy          string       `json:"globalExpirationPolicyName"` // LRU|LFU
	GlobalQuota           int64        `json:"globalQuotaBytes"`
	LayerQuotas           []LayerQuota `json:"layerQuotas"` // nil when there are none
}

// LayerQuota limits the space used by one layer's tiles. Layer names are not
// checked against the catalogue (GeoWebCache does not check them either).
type LayerQuota struct {
	Layer  string `json:"layer"`
	Policy string `json:"expirationPolicyName"` // LRU|LFU
	Quota  int64  `json:"quotaBytes"`
}

// Default returns the configuration used before any PUT: disabled, 4096-byte
// blocks, a clean-up every 10 SECONDS with at most 2 at once, LFU, a global
// quota of 500 MiB and no layer quotas.
func Default() Config {
	return Config{
		Enabled:               false,
		DiskBlockSize:         4096,
		CleanUpFrequency:      10,
		CleanUpUnits:          UnitsSeconds,
		MaxConcurrentCleanUps: 2,
		GlobalPolicy:          PolicyLFU,
		GlobalQuota:           500 << 20,
	}
}

var cleanUpUnits = map[string]time.Duration{
	UnitsSeconds: time.Second,
	UnitsMinutes: time.Minute,
	UnitsHours:   time.Hour,
	UnitsDays:    24 * time.Hour,
}

// CleanUpInterval is the time between two clean-up runs: CleanUpFrequency
// times CleanUpUnits. Units that are not one of the four known names count as
// SECONDS, a non-positive frequency gives 0 and a product that does not fit a
// time.Duration gives the largest Duration. Apply never produces the last
// three cases.
func (c Config) CleanUpInterval() time.Duration {
	unit, ok := cleanUpUnits[canonical(c.CleanUpUnits)]
	if !ok {
		unit = time.Second
	}
	if c.CleanUpFrequency <= 0 {
		return 0
	}
	if c.CleanUpFrequency > math.MaxInt64/int64(unit) {
		return math.MaxInt64
	}
	return time.Duration(c.CleanUpFrequency) * unit
}

// Patch is a partial configuration: every field is a pointer and nil means
// "keep the current value". LayerQuotas, when non-nil, replaces the whole
// list; a pointer to an empty slice clears it.
type Patch struct {
	Enabled               *bool
	DiskBlockSize         *int64
	CleanUpFrequency      *int64
	MaxConcurrentCleanUps *int64
	CleanUpUnits          *string
	GlobalPolicy          *string
	GlobalQuota           *int64 // bytes
	LayerQuotas           *[]LayerQuota
}

// Apply returns c with every present field of p applied. Validation is
// all-or-nothing: if any present field is invalid it returns the zero Config
// and an apperr.Invalid error carrying the contract's text (the first problem
// found, in field order), and c is untouched either way. Enumerated names are
// stored in canonical spelling, an empty layer quota list is stored as nil,
// and the result never shares its LayerQuotas backing array with c or p.
func (c Config) Apply(p Patch) (Config, error) {
	n := c
	n.LayerQuotas = slices.Clone(c.LayerQuotas)
	if p.Enabled != nil {
		n.Enabled = *p.Enabled
	}
	if p.DiskBlockSize != nil {
		if *p.DiskBlockSize <= 0 {
			return Config{}, apperr.Invalidf("diskBlockSize shall be a positive integer: %d", *p.DiskBlockSize)
		}
		n.DiskBlockSize = *p.DiskBlockSize
	}
	if p.CleanUpFrequency != nil {
		if *p.CleanUpFrequency <= 0 {
			return Config{}, apperr.Invalidf("cacheCleanUpFrequency shall be a positive integer: %d", *p.CleanUpFrequency)
		}
		n.CleanUpFrequency = *p.CleanUpFrequency
	}
	if p.CleanUpUnits != nil {
		u := canonical(*p.CleanUpUnits)
		if _, ok := cleanUpUnits[u]; !ok {
			return Config{}, apperr.Invalidf("Unknown cacheCleanUpUnits value: %s", apperr.Show(strings.TrimSpace(*p.CleanUpUnits)))
		}
		n.CleanUpUnits = u
	}
	if p.MaxConcurrentCleanUps != nil {
		if *p.MaxConcurrentCleanUps <= 0 {
			return Config{}, apperr.Invalidf("maxConcurrentCleanUps shall be a positive integer: %d", *p.MaxConcurrentCleanUps)
		}
		n.MaxConcurrentCleanUps = *p.MaxConcurrentCleanUps
	}
	if p.GlobalPolicy != nil {
		pol, err := parsePolicy(*p.GlobalPolicy)
		if err != nil {
			return Config{}, err
		}
		n.GlobalPolicy = pol
	}
	if p.GlobalQuota != nil {
		if *p.GlobalQuota < 0 {
			return Config{}, apperr.Invalidf("globalQuota shall not be negative: %d bytes", *p.GlobalQuota)
		}
		n.GlobalQuota = *p.GlobalQuota
	}
	if p.LayerQuotas != nil {
		lqs, err := validLayerQuotas(*p.LayerQuotas)
		if err != nil {
			return Config{}, err
		}
		n.LayerQuotas = lqs
	}
	if p.CleanUpFrequency != nil || p.CleanUpUnits != nil {
		unit, ok := cleanUpUnits[n.CleanUpUnits]
		if ok && n.CleanUpFrequency > math.MaxInt64/int64(unit) {
			return Config{}, apperr.Invalidf("cacheCleanUpFrequency is too large: %d %s", n.CleanUpFrequency, n.CleanUpUnits)
		}
	}
	return n, nil
}

// validLayerQuotas checks a replacement layer quota list and returns a
// canonical copy (nil when empty).
func validLayerQuotas(in []LayerQuota) ([]LayerQuota, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]LayerQuota, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, lq := range in {
		if strings.TrimSpace(lq.Layer) == "" {
			return nil, apperr.Invalidf("layerQuotas: layer is required")
		}
		if strings.TrimSpace(lq.Policy) == "" {
			return nil, apperr.Invalidf("layerQuotas: expirationPolicyName is required")
		}
		pol, err := parsePolicy(lq.Policy)
		if err != nil {
			return nil, err
		}
		if lq.Quota < 0 {
			return nil, apperr.Invalidf("layerQuotas: quota shall not be negative: %d bytes", lq.Quota)
		}
		// Two quotas for one layer would leave the clean-up guessing which
		// one holds; GeoWebCache silently keeps both.
		if seen[lq.Layer] {
			return nil, apperr.Invalidf("layerQuotas: more than one quota for layer %s", apperr.Show(lq.Layer))
		}
		seen[lq.Layer] = true
		out = append(out, LayerQuota{Layer: lq.Layer, Policy: pol, Quota: lq.Quota})
	}
	return out, nil
}

func parsePolicy(s string) (string, error) {
	switch p := canonical(s); p {
	case PolicyLRU, PolicyLFU:
		return p, nil
	}
	return "", apperr.Invalidf("Unknown expiration policy: %s", apperr.Show(strings.TrimSpace(s)))
}

func canonical(s string) string { return strings.ToUpper(strings.TrimSpace(s)) }

// quotaUnits lists the quota units from the largest down; each is 1024 times
// the next.
var quotaUnits = [...]struct {
	name  string
	shift uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// FormatQuota writes a byte count as the contract's quota value and units:
// the value is a string of digits and the units the largest of B, KiB, MiB,
// GiB, TiB that divides the count exactly (100 MiB is "100" "MiB", 1536 MiB is
// "1536" "MiB", 0 is "0" "B"). A negative count (never valid) is written the
// same way with a leading minus sign.
func FormatQuota(bytes int64) (value, units string) {
	if bytes == 0 {
		return "0", "B"
	}
	for _, u := range quotaUnits {
		if bytes%(int64(1)<<u.shift) == 0 {
			return strconv.FormatInt(bytes>>u.shift, 10), u.name
		}
	}
	panic("unreachable: every integer is a multiple of 1 B")
}

// maxFractionDigits is how many fraction digits can change ⌊value × unit⌋
// for a unit of at most 2^40 (see ParseQuota).
const maxFractionDigits = 40

// ParseQuota converts a quota value and units to bytes: ⌊value × unit⌋,
// computed exactly. Units are B, KiB, MiB, GiB or TiB, case-insensitively;
// anything else is "Unknown units value: ZZiB". The value is a non-negative
// decimal number, digits with an optional fraction (".5" and "5." included, no
// sign, no exponent), surrounded by optional whitespace; anything else is
// "Invalid quota value: -5". A result above math.MaxInt64 bytes is rejected.
// Errors are apperr.Invalid.
func ParseQuota(value, units string) (int64, error) {
	shift, unitName := -1, ""
	for _, u := range quotaUnits {
		if strings.EqualFold(strings.TrimSpace(units), u.name) {
			shift, unitName = int(u.shift), u.name
		}
	}
	if shift < 0 {
		return 0, apperr.Invalidf("Unknown units value: %s", apperr.Show(strings.TrimSpace(units)))
	}
	v := strings.TrimSpace(value)
	intPart, frac, _ := strings.Cut(v, ".")
	if intPart+frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return 0, apperr.Invalidf("Invalid quota value: %s", apperr.Show(v))
	}
	tooLarge := func() error {
		return apperr.Invalidf("Invalid quota value: %s %s is larger than %d bytes", apperr.Show(v), unitName, int64(math.MaxInt64))
	}
	intPart = strings.TrimLeft(intPart, "0")
	if len(intPart) > 19 { // 10^19 > MaxInt64 even in bytes
		return 0, tooLarge()
	}
	// value × 2^shift = (intPart·10^k + frac) × 2^shift / 10^k with k fraction
	// digits. Digits after the 40th cannot change the floor: the first 40
	// give a multiple of 2^shift/10^40, and the rest add less than that.
	frac = strings.TrimRight(frac, "0")
	if len(frac) > maxFractionDigits {
		frac = frac[:maxFractionDigits]
	}
	num, ok := new(big.Int).SetString("0"+intPart+frac, 10)
	if !ok {
		return 0, apperr.Invalidf("Invalid quota value: %s", apperr.Show(v))
	}
	num.Lsh(num, uint(shift))
	num.Quo(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil))
	if !num.IsInt64() {
		return 0, tooLarge()
	}
	return num.Int64(), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
