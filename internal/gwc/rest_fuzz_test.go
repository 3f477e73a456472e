package gwc

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"tilecache/internal/quota"
)

// The decoder fuzz targets assert that decoders never panic and either
// succeed or return a one-line apperr.Invalid, plus what a success promises.

func FuzzDecodeSeedRequestJSON(f *testing.F) {
	for _, s := range []string{
		contractSeedJSON, contractSeedCurlJSON,
		`{"seedRequest":{"srs":{"number":"4326"},"filterUpdate":"true","parameters":{"entry":{"string":["a","b"]}}}}}`,
		`{'seedRequest':{'bounds':{'coords':{'double':[1,2,3,4]}}}}`,
		`{"seedRequest":{"zoomStart":"1e3","bounds":{"coords":{"double":[1,2,1e999,4]}}}}`,
		`{"seedRequest":""}`, `[]`, ``,
		`{"seedRequest":{"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]},"buffer":10}}`,
		`{"seedRequest":{"geometries":[{"zoomStart":0,"zoomStop":3,"geometry":"POINT(1 2)","buffer":5}]}}`,
		`{"seedRequest":{"buffer":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeSeedRequestJSON(body)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		checkSeedRequest(t, r)
	})
}

func FuzzDecodeSeedRequestXML(f *testing.F) {
	for _, s := range []string{
		contractSeedXML,
		`<seedRequest><srs><number>4326</number></srs><filterUpdate>true</filterUpdate></seedRequest>`,
		`<seedRequest><bounds><coords><double>1</double><double>2</double><double>3</double><double>4</double></coords></bounds></seedRequest>`,
		`<seedRequest><geometry>POLYGON((0 0,1 0,1 1,0 0))</geometry><buffer>3</buffer><geometries><zoomGeometry><zoomStart>0</zoomStart><zoomStop>1</zoomStop><geometry>POINT(0 0)</geometry></zoomGeometry></geometries></seedRequest>`,
		`<!DOCTYPE x><seedRequest/>`, `<seedRequest><a>&amp;<![CDATA[x]]></a></seedRequest>`, `<seedRequest>`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeSeedRequestXML(body)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		checkSeedRequest(t, r)
	})
}

func checkSeedRequest(t *testing.T, r SeedRequest) {
	t.Helper()
	if b := r.Bounds; b != nil {
		for _, v := range b {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("bounds %v are not finite", *b)
			}
		}
		if !(b[0] < b[2] && b[1] < b[3]) {
			t.Fatalf("bounds %v are not ordered", *b)
		}
	}
	if r.HasGridSetID != (r.GridSetID != "") {
		t.Fatalf("HasGridSetID %v with GridSetID %q", r.HasGridSetID, r.GridSetID)
	}
}

func FuzzDecodeQuotaPatchJSON(f *testing.F) {
	for _, s := range []string{
		contractQuotaGetJSON, contractQuotaPutJSON,
		`{"gwcQuotaConfiguration":{"layerQuotas":{"LayerQuota":{"layer":"a","expirationPolicyName":"LRU","quota":{"value":1.5,"units":"KiB"}}}}}`,
		`{"cacheQuotaConfiguration":{"maxConcurrentCleanUps":"many"}}`, `{"cacheQuotaConfiguration":{}}}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := DecodeQuotaPatchJSON(body)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		checkPatch(t, p)
	})
}

func FuzzDecodeQuotaPatchXML(f *testing.F) {
	for _, s := range []string{
		contractQuotaXML,
		`<gwcQuotaConfiguration><layerQuotas>` + contractLayerQuotaXML + `</layerQuotas></gwcQuotaConfiguration>`,
		`<cacheQuotaConfiguration><globalQuota><value>-5</value><units>ZZiB</units></globalQuota></cacheQuotaConfiguration>`,
		`<cacheQuotaConfiguration/>`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := DecodeQuotaPatchXML(body)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		checkPatch(t, p)
	})
}

// checkPatch checks what the decoder promises, and that Apply either accepts
// the patch or rejects it as invalid.
func checkPatch(t *testing.T, p quota.Patch) {
	t.Helper()
	if p.GlobalQuota != nil && *p.GlobalQuota < 0 {
		t.Fatalf("negative global quota %d", *p.GlobalQuota)
	}
	if p.LayerQuotas != nil {
		for _, lq := range *p.LayerQuotas {
			if lq.Layer == "" || lq.Policy == "" || lq.Quota < 0 {
				t.Fatalf("invalid layer quota %+v", lq)
			}
		}
	}
	if _, err := quota.Default().Apply(p); err != nil {
		checkInvalid(t, err)
	}
}

func FuzzDecodeMassTruncate(f *testing.F) {
	for _, s := range []string{
		`<truncateLayer><layerName>topp:states</layerName></truncateLayer>`, `<truncateAll/>`, `<truncateLayer/>`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		name, err := DecodeMassTruncate(body)
		if err != nil {
			checkInvalid(t, err)
			return
		}
		if name == "" {
			t.Fatalf("got an empty layer name and no error")
		}
	})
}

// FuzzQuotaRoundTrip checks that any valid configuration survives being
// written and read back as a patch, in both formats.
func FuzzQuotaRoundTrip(f *testing.F) {
	f.Add(true, int64(4096), int64(5), uint8(0), int64(5), false, int64(100<<20), "topp:states", true, int64(10<<20))
	f.Fuzz(func(t *testing.T, enabled bool, block, freq int64, units uint8, maxCleanUps int64, lru bool, global int64, layer string, layerLRU bool, layerQuota int64) {
		policy := func(lru bool) string {
			if lru {
				return "LRU"
			}
			return "LFU"
		}
		c := quota.Config{
			Enabled: enabled, DiskBlockSize: block, CleanUpFrequency: freq,
			CleanUpUnits: []string{"SECONDS", "MINUTES", "HOURS", "DAYS"}[units%4], MaxConcurrentCleanUps: maxCleanUps,
			GlobalPolicy: policy(lru), GlobalQuota: global,
		}
		if layer != "" {
			c.LayerQuotas = []quota.LayerQuota{{Layer: layer, Policy: policy(layerLRU), Quota: layerQuota}}
		}
		want, err := quota.Default().Apply(quota.Patch{
			DiskBlockSize: &c.DiskBlockSize, CleanUpFrequency: &c.CleanUpFrequency, CleanUpUnits: &c.CleanUpUnits,
			MaxConcurrentCleanUps: &c.MaxConcurrentCleanUps, GlobalQuota: &c.GlobalQuota, LayerQuotas: &c.LayerQuotas,
		})
		if err != nil {
			return // not a valid configuration
		}
		want.Enabled, want.GlobalPolicy = c.Enabled, c.GlobalPolicy
		for _, tc := range []struct {
			format string
			body   []byte
			decode func([]byte) (quota.Patch, error)
		}{
			{"XML", QuotaConfigXML(want), DecodeQuotaPatchXML},
			{"JSON", QuotaConfigJSON(want, true), DecodeQuotaPatchJSON},
		} {
			p, err := tc.decode(tc.body)
			if err != nil {
				// Text that XML cannot carry (control characters, invalid
				// UTF-8) or that does not survive trimming may be rejected
				// or altered; everything else must round-trip.
				if cleanText(layer) {
					t.Fatalf("%s: decode %q: %v", tc.format, tc.body, err)
				}
				continue
			}
			got, err := quota.Config{LayerQuotas: []quota.LayerQuota{{Layer: "old"}}}.Apply(p)
			if err != nil {
				if cleanText(layer) {
					t.Fatalf("%s: apply: %v", tc.format, err)
				}
				continue
			}
			if cleanText(layer) && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: got %+v, want %+v", tc.format, got, want)
			}
		}
	})
}

// cleanText reports whether s round-trips through XML and JSON text fields:
// valid UTF-8 of XML characters without surrounding whitespace.
func cleanText(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0xFFFD || r == 0xFFFE || r == 0xFFFF || (r >= 0xD800 && r <= 0xDFFF) {
			return false
		}
	}
	return s == strings.TrimSpace(s)
}
