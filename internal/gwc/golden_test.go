package gwc

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tilecache/internal/quota"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// awkward holds every kind of character the JSON and XML encoders treat
// specially: the HTML-significant <, > and &, quotes and backslash, the
// solidus, each control character with a short JSON escape plus NUL, US and
// DEL, JavaScript's line separators U+2028 and U+2029, non-ASCII text, an
// astral character, U+FFFD and a byte that is not UTF-8.
const awkward = "<a&b>\"q\" 'a' \\ / \b\f\n\r\t\x00\x1f\x7f \u2028\u2029 é ü 東京 😀 \ufffd \xff end"

// checkGolden compares got with testdata/golden/name byte for byte, or
// rewrites the file when the test runs with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\ngot  %q\nwant %q", name, got, want)
	}
	if filepath.Ext(name) == ".json" && !json.Valid(got) {
		t.Errorf("%s: got invalid JSON %q", name, got)
	}
}

// TestQuotaConfigGolden pins the exact bytes of the disk-quota documents
// (GET and PUT JSON, and the XML) for representative configurations.
func TestQuotaConfigGolden(t *testing.T) {
	everyField := quota.Config{
		Enabled: true, DiskBlockSize: 512, CleanUpFrequency: 3, CleanUpUnits: "MINUTES",
		MaxConcurrentCleanUps: 7, GlobalPolicy: "LRU", GlobalQuota: 1536 << 20, // 1.5 GiB is written in MiB
		LayerQuotas: []quota.LayerQuota{
			statesQuota,
			{Layer: "empty quota", Policy: "LFU", Quota: 0},
			{Layer: "one byte over a KiB", Policy: "LRU", Quota: 1025},
			{Layer: "a TiB", Policy: "LFU", Quota: 1 << 40},
			{Layer: "1024 TiB", Policy: "LRU", Quota: 1 << 50},
			{Layer: "largest", Policy: "LFU", Quota: math.MaxInt64},
		},
	}
	tests := []struct {
		name string
		c    quota.Config
	}{
		{"defaults", quota.Default()},
		{"every_field", everyField},
		{"empty_layer_quotas", withLayerQuotas(contractQuota, []quota.LayerQuota{}...)},
		{"awkward_text", quota.Config{
			Enabled: false, DiskBlockSize: 1, CleanUpFrequency: 0, CleanUpUnits: awkward,
			MaxConcurrentCleanUps: 1, GlobalPolicy: awkward, GlobalQuota: 1,
			LayerQuotas: []quota.LayerQuota{{Layer: awkward, Policy: awkward, Quota: 3 << 30}, {Layer: "", Policy: "", Quota: 2048}},
		}},
		{"extreme_numbers", quota.Config{
			Enabled: true, DiskBlockSize: math.MaxInt64, CleanUpFrequency: math.MinInt64, CleanUpUnits: "DAYS",
			MaxConcurrentCleanUps: -1, GlobalPolicy: "LFU", GlobalQuota: -1 << 20,
			LayerQuotas: []quota.LayerQuota{{Layer: "negative", Policy: "LRU", Quota: math.MinInt64}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGolden(t, "quota_"+tt.name+"_get.json", QuotaConfigJSON(tt.c, false))
			checkGolden(t, "quota_"+tt.name+"_put.json", QuotaConfigJSON(tt.c, true))
			checkGolden(t, "quota_"+tt.name+".xml", QuotaConfigXML(tt.c))
		})
	}
}

// TestUsageGolden pins the exact bytes of the usage report documents for
// representative reports.
func TestUsageGolden(t *testing.T) {
	paris := time.FixedZone("CEST", 2*60*60)
	tests := []struct {
		name string
		r    quota.Report
	}{
		{"zero", quota.Report{}},
		{"counted_no_layers", quota.Report{
			Enabled: true, BlockSize: 4096, GlobalQuota: 500 << 20, GlobalPolicy: "LFU", Counted: true,
			Layers: []quota.LayerReport{},
		}},
		{"every_field", quota.Report{
			Enabled: true, BlockSize: 4096, GlobalQuota: 500 << 20, GlobalPolicy: "LFU",
			UsedBytes: 8192 + 3*4096, UsedTiles: 5,
			// Nanoseconds are cut to milliseconds, not rounded; the zone becomes Z.
			LastCleanUp: time.Date(2026, 1, 2, 5, 4, 5, 999_999_999, paris),
			Counted:     true,
			Layers: []quota.LayerReport{
				{Layer: "topp:states", UsedBytes: 8192, UsedTiles: 2, Quota: 10 << 20, Policy: "LRU"},
				{Layer: "no quota of its own", UsedBytes: 3 * 4096, UsedTiles: 3, RecountPending: true},
				{Layer: "zero quota", Quota: 0, Policy: "LFU"},
			},
		}},
		{"awkward_text", quota.Report{
			BlockSize: 1, GlobalQuota: 1, GlobalPolicy: awkward,
			LastCleanUp: time.Date(1970, 1, 1, 0, 0, 0, 1_000_000, time.UTC),
			Counted:     true,
			Layers: []quota.LayerReport{
				{Layer: awkward, UsedBytes: 1, UsedTiles: 1, Quota: 1 << 30, Policy: awkward},
				{Layer: "", Policy: ""},
			},
		}},
		{"extreme_numbers", quota.Report{
			Enabled: true, BlockSize: math.MaxInt64, GlobalQuota: math.MaxInt64, GlobalPolicy: "LRU",
			UsedBytes: math.MaxInt64, UsedTiles: math.MinInt64,
			LastCleanUp: time.Date(12345, 12, 31, 23, 59, 59, 0, time.UTC), // beyond what time.Time.MarshalJSON accepts
			Counted:     true,
			Layers: []quota.LayerReport{
				{Layer: "big", UsedBytes: math.MaxInt64, UsedTiles: -1, Quota: math.MinInt64, Policy: "LFU"},
			},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkGolden(t, "usage_"+tt.name+".json", UsageJSON(tt.r))
			checkGolden(t, "usage_"+tt.name+".xml", UsageXML(tt.r))
		})
	}
}
