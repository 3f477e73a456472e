package wire

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
	b := make([]byte, 0, 256+len(r.Layers)*160)
	pending := !r.Counted
	for _, l := range r.Layers {
		pending = pending || l.RecountPending
	}
	b = append(b, `{"`+usageRoot+`":{"enabled":`...)
	b = strconv.AppendBool(b, r.Enabled)
	b = append(b, `,"diskBlockSize":`...)
	b = strconv.AppendInt(b, r.BlockSize, 10)
	b = append(b, `,"usedBytes":`...)
	b = strconv.AppendInt(b, r.UsedBytes, 10)
	b = append(b, `,"usedTiles":`...)
	b = strconv.AppendInt(b, r.UsedTiles, 10)
	b = append(b, `,"globalQuota":`...)
	b = appendJSONQuota(b, r.GlobalQuota)
	b = append(b, `,"globalExpirationPolicyName":`...)
	b = appendJSONString(b, r.GlobalPolicy)
	b = append(b, `,"lastCleanUp":`...)
	if r.LastCleanUp.IsZero() {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, usageTime(r.LastCleanUp))
	}
	b = append(b, `,"recountPending":`...)
	b = strconv.AppendBool(b, pending)
	b = append(b, `,"layers":[`...)
	for i, l := range r.Layers {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"layer":`...)
		b = appendJSONString(b, l.Layer)
		b = append(b, `,"usedBytes":`...)
		b = strconv.AppendInt(b, l.UsedBytes, 10)
		b = append(b, `,"usedTiles":`...)
		b = strconv.AppendInt(b, l.UsedTiles, 10)
		if l.HasQuota() {
			b = append(b, `,"quota":`...)
			b = appendJSONQuota(b, l.Quota)
			b = append(b, `,"expirationPolicyName":`...)
			b = appendJSONString(b, l.Policy)
		}
		b = append(b, `,"recountPending":`...)
		b = strconv.AppendBool(b, l.RecountPending)
		b = append(b, '}')
	}
	return append(b, "]}}"...)
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
	pending := !r.Counted
	for _, l := range r.Layers {
		pending = pending || l.RecountPending
	}
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
