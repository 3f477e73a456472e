package quota

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"tilecache/internal/apperr"
)

func ptr[T any](v T) *T { return &v }

func TestDefault(t *testing.T) {
	got := Default()
	want := Config{
		Enabled:               false,
		DiskBlockSize:         4096,
		CleanUpFrequency:      10,
		CleanUpUnits:          "SECONDS",
		MaxConcurrentCleanUps: 2,
		GlobalPolicy:          "LFU",
		GlobalQuota:           500 * 1024 * 1024,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Default() = %+v, want %+v", got, want)
	}
	if d := got.CleanUpInterval(); d != 10*time.Second {
		t.Errorf("Default().CleanUpInterval() = %v, want 10s", d)
	}
}

func TestCleanUpInterval(t *testing.T) {
	tests := []struct {
		name  string
		freq  int64
		units string
		want  time.Duration
	}{
		{"seconds", 5, "SECONDS", 5 * time.Second},
		{"minutes", 2, "MINUTES", 2 * time.Minute},
		{"hours", 3, "HOURS", 3 * time.Hour},
		{"days", 1, "DAYS", 24 * time.Hour},
		{"lower case", 1, "minutes", time.Minute},
		{"unknown units read as seconds", 7, "FORTNIGHTS", 7 * time.Second},
		{"zero frequency", 0, "DAYS", 0},
		{"negative frequency", -3, "DAYS", 0},
		{"saturates", math.MaxInt64 / 2, "DAYS", math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.CleanUpFrequency, c.CleanUpUnits = tt.freq, tt.units
			if got := c.CleanUpInterval(); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	lq := []LayerQuota{{Layer: "topp:states", Policy: "lru", Quota: 10 << 20}}
	tests := []struct {
		name   string
		patch  Patch
		modify func(*Config)
	}{
		{"empty patch", Patch{}, func(*Config) {}},
		{"enabled", Patch{Enabled: ptr(true)}, func(c *Config) { c.Enabled = true }},
		{"disk block size", Patch{DiskBlockSize: ptr[int64](512)}, func(c *Config) { c.DiskBlockSize = 512 }},
		{"frequency", Patch{CleanUpFrequency: ptr[int64](5)}, func(c *Config) { c.CleanUpFrequency = 5 }},
		{"units canonicalised", Patch{CleanUpUnits: ptr(" minutes ")}, func(c *Config) { c.CleanUpUnits = "MINUTES" }},
		{"max concurrent", Patch{MaxConcurrentCleanUps: ptr[int64](5)}, func(c *Config) { c.MaxConcurrentCleanUps = 5 }},
		{"policy canonicalised", Patch{GlobalPolicy: ptr("lru")}, func(c *Config) { c.GlobalPolicy = "LRU" }},
		{"global quota", Patch{GlobalQuota: ptr[int64](100 << 20)}, func(c *Config) { c.GlobalQuota = 100 << 20 }},
		{"zero global quota", Patch{GlobalQuota: ptr[int64](0)}, func(c *Config) { c.GlobalQuota = 0 }},
		{"layer quotas", Patch{LayerQuotas: &lq}, func(c *Config) {
			c.LayerQuotas = []LayerQuota{{Layer: "topp:states", Policy: "LRU", Quota: 10 << 20}}
		}},
		{"clear layer quotas", Patch{LayerQuotas: &[]LayerQuota{}}, func(c *Config) { c.LayerQuotas = nil }},
		{"everything", Patch{
			Enabled: ptr(true), DiskBlockSize: ptr[int64](4096), CleanUpFrequency: ptr[int64](5),
			CleanUpUnits: ptr("SECONDS"), MaxConcurrentCleanUps: ptr[int64](5), GlobalPolicy: ptr("LRU"),
			GlobalQuota: ptr[int64](100 << 20),
		}, func(c *Config) {
			c.Enabled, c.CleanUpFrequency, c.MaxConcurrentCleanUps, c.GlobalPolicy, c.GlobalQuota = true, 5, 5, "LRU", 100<<20
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := Default()
			base.LayerQuotas = []LayerQuota{{Layer: "old", Policy: "LFU", Quota: 1}}
			want := Default()
			want.LayerQuotas = []LayerQuota{{Layer: "old", Policy: "LFU", Quota: 1}}
			tt.modify(&want)
			got, err := base.Apply(tt.patch)
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if len(got.LayerQuotas) > 0 && len(base.LayerQuotas) > 0 && &got.LayerQuotas[0] == &base.LayerQuotas[0] {
				t.Errorf("result shares its LayerQuotas with the receiver")
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name  string
		patch Patch
		want  string
	}{
		{"disk block size zero", Patch{DiskBlockSize: ptr[int64](0)}, "diskBlockSize shall be a positive integer: 0"},
		{"disk block size negative", Patch{DiskBlockSize: ptr[int64](-4)}, "diskBlockSize shall be a positive integer: -4"},
		{"frequency zero", Patch{CleanUpFrequency: ptr[int64](0)}, "cacheCleanUpFrequency shall be a positive integer: 0"},
		{"units", Patch{CleanUpUnits: ptr("FORTNIGHTS")}, "Unknown cacheCleanUpUnits value: FORTNIGHTS"},
		{"units empty", Patch{CleanUpUnits: ptr("")}, `Unknown cacheCleanUpUnits value: ""`},
		{"max concurrent", Patch{MaxConcurrentCleanUps: ptr[int64](-1)}, "maxConcurrentCleanUps shall be a positive integer: -1"},
		{"max concurrent zero", Patch{MaxConcurrentCleanUps: ptr[int64](0)}, "maxConcurrentCleanUps shall be a positive integer: 0"},
		{"policy", Patch{GlobalPolicy: ptr("FIFO")}, "Unknown expiration policy: FIFO"},
		{"policy with newline is quoted", Patch{GlobalPolicy: ptr("FI\nFO")}, `Unknown expiration policy: "FI\nFO"`},
		{"negative global quota", Patch{GlobalQuota: ptr[int64](-5)}, "globalQuota shall not be negative: -5 bytes"},
		{"layer missing", Patch{LayerQuotas: &[]LayerQuota{{Policy: "LRU"}}}, "layerQuotas: layer is required"},
		{"layer policy missing", Patch{LayerQuotas: &[]LayerQuota{{Layer: "a"}}}, "layerQuotas: expirationPolicyName is required"},
		{"layer policy unknown", Patch{LayerQuotas: &[]LayerQuota{{Layer: "a", Policy: "FIFO"}}}, "Unknown expiration policy: FIFO"},
		{"layer quota negative", Patch{LayerQuotas: &[]LayerQuota{{Layer: "a", Policy: "LRU", Quota: -1}}}, "layerQuotas: quota shall not be negative: -1 bytes"},
		{"layer twice", Patch{LayerQuotas: &[]LayerQuota{{Layer: "a", Policy: "LRU"}, {Layer: "a", Policy: "LFU"}}}, "layerQuotas: more than one quota for layer a"},
		{"interval overflow", Patch{CleanUpFrequency: ptr[int64](math.MaxInt64 / 1000), CleanUpUnits: ptr("DAYS")},
			"cacheCleanUpFrequency is too large: 9223372036854775 DAYS"},
		{"first error wins, all or nothing", Patch{Enabled: ptr(true), DiskBlockSize: ptr[int64](0), GlobalPolicy: ptr("FIFO")},
			"diskBlockSize shall be a positive integer: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := Default()
			before := base
			got, err := base.Apply(tt.patch)
			if err == nil {
				t.Fatalf("got %+v and no error, want error %q", got, tt.want)
			}
			if !apperr.Is(err, apperr.Invalid) {
				t.Errorf("got kind %v, want invalid", apperr.KindOf(err))
			}
			if msg := apperr.Message(err); msg != tt.want {
				t.Errorf("got message %q, want %q", msg, tt.want)
			}
			if !reflect.DeepEqual(got, Config{}) {
				t.Errorf("got config %+v with the error, want the zero Config", got)
			}
			if !reflect.DeepEqual(base, before) {
				t.Errorf("receiver changed to %+v", base)
			}
		})
	}
}

func TestFormatQuota(t *testing.T) {
	tests := []struct {
		name  string
		bytes int64
		value string
		units string
	}{
		{"zero", 0, "0", "B"},
		{"one byte", 1, "1", "B"},
		{"odd bytes", 1023, "1023", "B"},
		{"one KiB", 1024, "1", "KiB"},
		{"1.5 KiB", 1536, "1536", "B"},
		{"100 MiB", 100 << 20, "100", "MiB"},
		{"2048 MiB", 2048 << 20, "2", "GiB"},
		{"1536 MiB", 1536 << 20, "1536", "MiB"},
		{"500 MiB", 500 << 20, "500", "MiB"},
		{"1 TiB", 1 << 40, "1", "TiB"},
		{"2048 TiB stays TiB", 2048 << 40, "2048", "TiB"},
		{"max", math.MaxInt64, "9223372036854775807", "B"},
		{"min", math.MinInt64, "-8388608", "TiB"},
		{"negative", -2048, "-2", "KiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, u := FormatQuota(tt.bytes)
			if v != tt.value || u != tt.units {
				t.Errorf("got %q %q, want %q %q", v, u, tt.value, tt.units)
			}
			if tt.bytes >= 0 {
				back, err := ParseQuota(v, u)
				if err != nil || back != tt.bytes {
					t.Errorf("ParseQuota(%q, %q) = %d, %v, want %d", v, u, back, err, tt.bytes)
				}
			}
		})
	}
}

func TestParseQuota(t *testing.T) {
	tests := []struct {
		name  string
		value string
		units string
		want  int64
	}{
		{"bytes", "100", "B", 100},
		{"MiB", "100", "MiB", 100 << 20},
		{"fraction", "1.5", "GiB", 1536 << 20},
		{"lower-case units", "1", "mib", 1 << 20},
		{"whitespace", " 2 ", " KiB ", 2048},
		{"zero", "0", "TiB", 0},
		{"leading zeros", "007", "B", 7},
		{"trailing dot", "5.", "B", 5},
		{"leading dot", ".5", "KiB", 512},
		{"floor", "0.1", "KiB", 102},                       // 102.4
		{"floor of bytes", "1.999", "B", 1},                // never rounds up
		{"exact tenth of TiB", "0.1", "TiB", 109951162777}, // 109951162777.6
		{"beyond float64 precision", "9007199254740993", "B", 9007199254740993},
		{"fraction beyond float64 precision", "8388607.9999999999999", "TiB", 9223372036854775807},
		{"2^-40 TiB, 40 fraction digits", "0.0000000000009094947017729282379150390625", "TiB", 1},
		{"just below 2^-40 TiB", "0.0000000000009094947017729282379150390624999", "TiB", 0},
		{"fraction beyond 40 digits", "0.99999999999999999999999999999999999999999999999", "TiB", (1 << 40) - 1},
		{"trailing zeros in fraction", "1.50000000000000000000000000000000000000000000000000", "KiB", 1536},
		{"max int64", "9223372036854775807", "B", math.MaxInt64},
		{"max in TiB", "8388607.999999999999", "TiB", 9223372036854775806},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuota(tt.value, tt.units)
			if err != nil {
				t.Fatalf("got error %v, want %d", err, tt.want)
			}
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestParseQuotaErrors(t *testing.T) {
	tests := []struct {
		name  string
		value string
		units string
		want  string
	}{
		{"unknown units", "1", "ZZiB", "Unknown units value: ZZiB"},
		{"PiB not supported", "1", "PiB", "Unknown units value: PiB"},
		{"MB is not MiB", "1", "MB", "Unknown units value: MB"},
		{"empty units", "1", "", `Unknown units value: ""`},
		{"negative", "-5", "MiB", "Invalid quota value: -5"},
		{"plus sign", "+5", "MiB", "Invalid quota value: +5"},
		{"not a number", "lots", "MiB", "Invalid quota value: lots"},
		{"exponent", "1e3", "MiB", "Invalid quota value: 1e3"},
		{"empty", "", "MiB", `Invalid quota value: ""`},
		{"only a dot", ".", "MiB", "Invalid quota value: ."},
		{"two dots", "1.2.3", "MiB", "Invalid quota value: 1.2.3"},
		{"inner space", "1 0", "MiB", "Invalid quota value: 1 0"},
		{"overflow bytes", "9223372036854775808", "B", "Invalid quota value: 9223372036854775808 B is larger than 9223372036854775807 bytes"},
		{"overflow TiB", "8388608", "TiB", "Invalid quota value: 8388608 TiB is larger than 9223372036854775807 bytes"},
		{"overflow many digits", strings.Repeat("9", 30), "KiB", "Invalid quota value: " + strings.Repeat("9", 30) + " KiB is larger than 9223372036854775807 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseQuota(tt.value, tt.units)
			if err == nil {
				t.Fatalf("got %d and no error, want error %q", got, tt.want)
			}
			if !apperr.Is(err, apperr.Invalid) {
				t.Errorf("got kind %v, want invalid", apperr.KindOf(err))
			}
			if msg := apperr.Message(err); msg != tt.want {
				t.Errorf("got message %q, want %q", msg, tt.want)
			}
		})
	}
}

func FuzzParseQuota(f *testing.F) {
	for _, s := range []string{"100", "1.5", "-5", ".", "0.1", "9223372036854775807", "1e3"} {
		f.Add(s, "MiB")
	}
	f.Fuzz(func(t *testing.T, value, units string) {
		got, err := ParseQuota(value, units)
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("got error %v of kind %v, want invalid", err, apperr.KindOf(err))
			}
			if strings.ContainsAny(apperr.Message(err), "\r\n") {
				t.Fatalf("message %q is not one line", apperr.Message(err))
			}
			return
		}
		if got < 0 {
			t.Fatalf("got negative %d", got)
		}
		v, u := FormatQuota(got)
		back, err := ParseQuota(v, u)
		if err != nil || back != got {
			t.Fatalf("round trip of %d through %q %q gave %d, %v", got, v, u, back, err)
		}
	})
}
