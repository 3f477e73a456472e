package gwc

import (
	"strconv"
	"strings"
	"time"

	"tilecache/internal/quota"
)

const usageRoot = "diskQuotaUsage"

// usageTime writes a report time: RFC 3339 in UTC with milliseconds.
func usageTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// UsageJSON encodes the usage report of GET /rest/diskquota/usage.json:
//
//	{"diskQuotaUsage":{"enabled":true,"diskBlockSize":4096,"usedBytes":8192,"usedTiles":2,
//	 "globalQuota":{"value":"500","units":"MiB"},"globalExpirationPolicyName":"LFU",
//	 "lastCleanUp":"2026-01-02T03:04:05.000Z","recountPending":false,
//	 "layers":[{"layer":"topp:states","usedBytes":8192,"usedTiles":2,
//	   "quota":{"value":"10","units":"MiB"},"expirationPolicyName":"LRU","recountPending":false}]}}
//
// lastCleanUp is null before the first clean-up; a layer without a quota
// of its own has no quota and expirationPolicyName. Compact, no trailing
// newline.
func UsageJSON(r quota.Report) []byte {
	doc := usageJSON{
		Enabled:        r.Enabled,
		DiskBlockSize:  r.BlockSize,
		UsedBytes:      r.UsedBytes,
		UsedTiles:      r.UsedTiles,
		GlobalQuota:    newJSONQuota(r.GlobalQuota),
		GlobalPolicy:   jsonText(r.GlobalPolicy),
		RecountPending: recountPending(r),
		Layers:         make([]layerUsageJSON, 0, len(r.Layers)),
	}
	if !r.LastCleanUp.IsZero() {
		t := usageTime(r.LastCleanUp)
		doc.LastCleanUp = &t
	}
	for _, l := range r.Layers {
		lu := layerUsageJSON{
			Layer:          jsonText(l.Layer),
			UsedBytes:      l.UsedBytes,
			UsedTiles:      l.UsedTiles,
			RecountPending: l.RecountPending,
		}
		if l.HasQuota() {
			q, policy := newJSONQuota(l.Quota), jsonText(l.Policy)
			lu.Quota, lu.Policy = &q, &policy
		}
		doc.Layers = append(doc.Layers, lu)
	}
	return marshalJSON(struct {
		Usage usageJSON `json:"diskQuotaUsage"`
	}{doc})
}

// usageJSON is the body of the JSON usage report, fields in the order of
// the documented example.
type usageJSON struct {
	Enabled       bool      `json:"enabled"`
	DiskBlockSize int64     `json:"diskBlockSize"`
	UsedBytes     int64     `json:"usedBytes"`
	UsedTiles     int64     `json:"usedTiles"`
	GlobalQuota   jsonQuota `json:"globalQuota"`
	GlobalPolicy  jsonText  `json:"globalExpirationPolicyName"`
	// LastCleanUp is nil (null) before the first clean-up. It is text from
	// usageTime rather than a time.Time, whose MarshalJSON keeps the zone
	// offset, writes up to nine fraction digits and fails past year 9999.
	LastCleanUp    *string          `json:"lastCleanUp"`
	RecountPending bool             `json:"recountPending"`
	Layers         []layerUsageJSON `json:"layers"` // never nil: [] without layers
}

// layerUsageJSON is one layer's usage; quota and expirationPolicyName are
// both set when the layer has a quota of its own
// (quota.LayerReport.HasQuota) and both left out otherwise.
type layerUsageJSON struct {
	Layer          jsonText   `json:"layer"`
	UsedBytes      int64      `json:"usedBytes"`
	UsedTiles      int64      `json:"usedTiles"`
	Quota          *jsonQuota `json:"quota,omitempty"`
	Policy         *jsonText  `json:"expirationPolicyName,omitempty"`
	RecountPending bool       `json:"recountPending"`
}

// recountPending is the report-wide flag: usage was never counted or some
// layer waits for a recount.
func recountPending(r quota.Report) bool {
	pending := !r.Counted
	for _, l := range r.Layers {
		pending = pending || l.RecountPending
	}
	return pending
}

// UsageXML encodes the usage report of GET /rest/diskquota/usage.xml, the
// same fields as UsageJSON in an indented document with a declaration:
// <diskQuotaUsage> … <layers><layerUsage>…</layerUsage></layers>, where
// <lastCleanUp> is absent before the first clean-up and <layers/> is empty
// without layers. No trailing newline.
func UsageXML(r quota.Report) []byte {
	var b strings.Builder
	elem := func(indent, name, value string) {
		b.WriteString(indent + "<" + name + ">" + xmlEscape(value) + "</" + name + ">\n")
	}
	quotaElem := func(indent, name string, bytes int64) {
		v, u := quota.FormatQuota(bytes)
		b.WriteString(indent + "<" + name + ">\n")
		elem(indent+"  ", "value", v)
		elem(indent+"  ", "units", u)
		b.WriteString(indent + "</" + name + ">\n")
	}
	pending := recountPending(r)
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + usageRoot + ">\n")
	elem("  ", "enabled", strconv.FormatBool(r.Enabled))
	elem("  ", "diskBlockSize", strconv.FormatInt(r.BlockSize, 10))
	elem("  ", "usedBytes", strconv.FormatInt(r.UsedBytes, 10))
	elem("  ", "usedTiles", strconv.FormatInt(r.UsedTiles, 10))
	quotaElem("  ", "globalQuota", r.GlobalQuota)
	elem("  ", "globalExpirationPolicyName", r.GlobalPolicy)
	if !r.LastCleanUp.IsZero() {
		elem("  ", "lastCleanUp", usageTime(r.LastCleanUp))
	}
	elem("  ", "recountPending", strconv.FormatBool(pending))
	if len(r.Layers) == 0 {
		b.WriteString("  <layers/>\n")
	} else {
		b.WriteString("  <layers>\n")
		for _, l := range r.Layers {
			b.WriteString("    <layerUsage>\n")
			elem("      ", "layer", l.Layer)
			elem("      ", "usedBytes", strconv.FormatInt(l.UsedBytes, 10))
			elem("      ", "usedTiles", strconv.FormatInt(l.UsedTiles, 10))
			if l.HasQuota() {
				quotaElem("      ", "quota", l.Quota)
				elem("      ", "expirationPolicyName", l.Policy)
			}
			elem("      ", "recountPending", strconv.FormatBool(l.RecountPending))
			b.WriteString("    </layerUsage>\n")
		}
		b.WriteString("  </layers>\n")
	}
	b.WriteString("</" + usageRoot + ">")
	return []byte(b.String())
}
