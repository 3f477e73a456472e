package gwc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
)

// Root names of a disk-quota document: the contract's, then GeoWebCache's,
// which is accepted on input only.
const (
	quotaRoot      = "cacheQuotaConfiguration"
	quotaRootAlias = "gwcQuotaConfiguration"
)

// QuotaConfigXML encodes c as the GET /rest/diskquota.xml document (contract
// §8.2): an XML declaration line, then the document indented by two spaces,
// with <layerQuotas/> when there are no layer quotas and otherwise one
// <LayerQuota> element per entry, laid out like <globalQuota>. Quotas are
// written with quota.FormatQuota. There is no trailing newline.
func QuotaConfigXML(c quota.Config) []byte {
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
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<" + quotaRoot + ">\n")
	elem("  ", "enabled", strconv.FormatBool(c.Enabled))
	elem("  ", "diskBlockSize", strconv.FormatInt(c.DiskBlockSize, 10))
	elem("  ", "cacheCleanUpFrequency", strconv.FormatInt(c.CleanUpFrequency, 10))
	elem("  ", "cacheCleanUpUnits", c.CleanUpUnits)
	elem("  ", "maxConcurrentCleanUps", strconv.FormatInt(c.MaxConcurrentCleanUps, 10))
	elem("  ", "globalExpirationPolicyName", c.GlobalPolicy)
	quotaElem("  ", "globalQuota", c.GlobalQuota)
	if len(c.LayerQuotas) == 0 {
		b.WriteString("  <layerQuotas/>\n")
	} else {
		b.WriteString("  <layerQuotas>\n")
		for _, lq := range c.LayerQuotas {
			b.WriteString("    <LayerQuota>\n")
			elem("      ", "layer", lq.Layer)
			elem("      ", "expirationPolicyName", lq.Policy)
			quotaElem("      ", "quota", lq.Quota)
			b.WriteString("    </LayerQuota>\n")
		}
		b.WriteString("  </layerQuotas>\n")
	}
	b.WriteString("</" + quotaRoot + ">")
	return []byte(b.String())
}

// QuotaConfigJSON encodes c as the compact JSON document of contract §8.2,
// fields in the contract's order. layerQuotas is written as an array when
// there are layer quotas or when alwaysLayerQuotas is set (the PUT response,
// §8.3, then shows "layerQuotas":[]); otherwise it is omitted (GET).
func QuotaConfigJSON(c quota.Config, alwaysLayerQuotas bool) []byte {
	doc := quotaConfigJSON{
		Enabled:               c.Enabled,
		DiskBlockSize:         c.DiskBlockSize,
		CleanUpFrequency:      c.CleanUpFrequency,
		CleanUpUnits:          jsonText(c.CleanUpUnits),
		MaxConcurrentCleanUps: c.MaxConcurrentCleanUps,
		GlobalPolicy:          jsonText(c.GlobalPolicy),
		GlobalQuota:           newJSONQuota(c.GlobalQuota),
	}
	if len(c.LayerQuotas) > 0 || alwaysLayerQuotas {
		lqs := make([]layerQuotaJSON, 0, len(c.LayerQuotas))
		for _, lq := range c.LayerQuotas {
			lqs = append(lqs, layerQuotaJSON{Layer: jsonText(lq.Layer), Policy: jsonText(lq.Policy), Quota: newJSONQuota(lq.Quota)})
		}
		doc.LayerQuotas = &lqs
	}
	return marshalJSON(struct {
		Config quotaConfigJSON `json:"cacheQuotaConfiguration"`
	}{doc})
}

// quotaConfigJSON is the body of the JSON disk-quota document; fields are
// in the contract's order.
type quotaConfigJSON struct {
	Enabled               bool      `json:"enabled"`
	DiskBlockSize         int64     `json:"diskBlockSize"`
	CleanUpFrequency      int64     `json:"cacheCleanUpFrequency"`
	CleanUpUnits          jsonText  `json:"cacheCleanUpUnits"`
	MaxConcurrentCleanUps int64     `json:"maxConcurrentCleanUps"`
	GlobalPolicy          jsonText  `json:"globalExpirationPolicyName"`
	GlobalQuota           jsonQuota `json:"globalQuota"`
	// LayerQuotas is nil to leave the member out and points to a non-nil,
	// possibly empty, slice to write an array.
	LayerQuotas *[]layerQuotaJSON `json:"layerQuotas,omitempty"`
}

type layerQuotaJSON struct {
	Layer  jsonText  `json:"layer"`
	Policy jsonText  `json:"expirationPolicyName"`
	Quota  jsonQuota `json:"quota"`
}

// jsonQuota is a quota as {"value":"…","units":"…"}, in the largest unit
// that divides it exactly (quota.FormatQuota). Both are plain ASCII.
type jsonQuota struct {
	Value string `json:"value"`
	Units string `json:"units"`
}

func newJSONQuota(bytes int64) jsonQuota {
	v, u := quota.FormatQuota(bytes)
	return jsonQuota{Value: v, Units: u}
}

// jsonText is client-supplied text in a JSON document. It keeps the
// package's string escaping (appendJSONString): encoding/json would write
// \b and \f instead of \u0008 and \u000c and escape U+2028 and U+2029,
// which would change the bytes of the documents.
type jsonText string

// MarshalJSON implements json.Marshaler.
func (s jsonText) MarshalJSON() ([]byte, error) {
	return appendJSONString(nil, string(s)), nil
}

// marshalJSON encodes v compactly with encoding/json, without HTML escaping
// (which would also rewrite the output of jsonText) and without the
// Encoder's trailing newline. v holds only types of this package that cannot
// fail to encode.
func marshalJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("wire: encode %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// DecodeQuotaPatchXML decodes a PUT /rest/diskquota.xml body (contract §8.3)
// whose root is cacheQuotaConfiguration or gwcQuotaConfiguration into a
// patch; see DecodeQuotaPatchJSON for the rules.
func DecodeQuotaPatchXML(body []byte) (quota.Patch, error) {
	doc, err := parseXML(body, "a "+quotaRoot+" document")
	if err != nil {
		return quota.Patch{}, err
	}
	root, err := xmlRoot(doc, quotaRoot, quotaRootAlias)
	if err != nil {
		return quota.Patch{}, err
	}
	return decodeQuotaPatch(root)
}

// DecodeQuotaPatchJSON decodes a PUT /rest/diskquota.json body (contract
// §8.3), an object with the single key cacheQuotaConfiguration or
// gwcQuotaConfiguration, into a patch. Only the fields present are set;
// quotaStore is accepted and ignored; globalQuota and each layer quota need
// both value and units and are converted to bytes with quota.ParseQuota;
// layerQuotas may be an array, or GeoWebCache's {"LayerQuota":[…]} or
// {"LayerQuota":{…}}, and an empty one ([], "", {}) clears the list. Each
// layer quota needs layer, expirationPolicyName and quota. Enumerated values
// and ranges are checked by quota.Config.Apply, not here. Errors are
// apperr.Invalid.
func DecodeQuotaPatchJSON(body []byte) (quota.Patch, error) {
	doc, err := parseJSON(body, "a JSON object with the single key "+quotaRoot)
	if err != nil {
		return quota.Patch{}, err
	}
	root, err := jsonRoot(doc, quotaRoot, quotaRootAlias)
	if err != nil {
		return quota.Patch{}, err
	}
	return decodeQuotaPatch(root)
}

func decodeQuotaPatch(root *node) (quota.Patch, error) {
	fields, err := elems(root, root.name)
	if err != nil {
		return quota.Patch{}, err
	}
	var p quota.Patch
	seen := fieldSet{}
	for _, f := range fields {
		if err := seen.add(f.name); err != nil {
			return quota.Patch{}, err
		}
		switch f.name {
		case "enabled":
			p.Enabled, err = parseBool(f, f.name)
		case "diskBlockSize":
			p.DiskBlockSize, err = int64Field(f)
		case "cacheCleanUpFrequency":
			p.CleanUpFrequency, err = int64Field(f)
		case "cacheCleanUpUnits":
			p.CleanUpUnits, err = stringField(f)
		case "maxConcurrentCleanUps":
			p.MaxConcurrentCleanUps, err = int64Field(f)
		case "globalExpirationPolicyName":
			p.GlobalPolicy, err = stringField(f)
		case "globalQuota":
			var q int64
			q, err = decodeQuota(f, "globalQuota")
			p.GlobalQuota = &q
		case "layerQuotas":
			var lqs []quota.LayerQuota
			lqs, err = decodeLayerQuotas(f)
			p.LayerQuotas = &lqs
		case "quotaStore":
			// GeoWebCache's database choice; accepted and ignored (§8.1).
		default:
			err = unknownField(f.name)
		}
		if err != nil {
			return quota.Patch{}, err
		}
	}
	return p, nil
}

func int64Field(n *node) (*int64, error) {
	v, err := parseInt64(n, n.name)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func stringField(n *node) (*string, error) {
	s, err := trimmedText(n, n.name)
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// decodeQuota reads {value, units} and converts it to bytes; label names the
// quota in messages.
func decodeQuota(n *node, label string) (int64, error) {
	fields, err := elems(n, label)
	if err != nil {
		return 0, err
	}
	var value, units *string
	seen := fieldSet{}
	for _, f := range fields {
		if err := seen.add(f.name); err != nil {
			return 0, err
		}
		var s string
		switch f.name {
		case "value":
			s, err = text(f, label+" value", "a number")
			value = &s
		case "units":
			s, err = text(f, label+" units", "text")
			units = &s
		default:
			err = unknownField(f.name)
		}
		if err != nil {
			return 0, err
		}
	}
	if value == nil {
		return 0, apperr.Invalidf("%s value is required", label)
	}
	if units == nil {
		return 0, apperr.Invalidf("%s units is required", label)
	}
	return quota.ParseQuota(*value, *units)
}

// decodeLayerQuotas reads the replacement list; the result is never nil.
func decodeLayerQuotas(n *node) ([]quota.LayerQuota, error) {
	var entries []*node
	switch n.kind {
	case arrayNode: // "layerQuotas":[{…}, …]
		entries = n.children
	default: // <layerQuotas><LayerQuota>…, {"LayerQuota":[…]} or {"LayerQuota":{…}}, "" or <layerQuotas/>
		fields, err := elems(n, "layerQuotas")
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			if f.name != "LayerQuota" {
				return nil, unknownField(f.name)
			}
			entries = append(entries, items(f)...)
		}
	}
	lqs := make([]quota.LayerQuota, 0, len(entries))
	for _, e := range entries {
		lq, err := decodeLayerQuota(e)
		if err != nil {
			return nil, err
		}
		lqs = append(lqs, lq)
	}
	return lqs, nil
}

func decodeLayerQuota(n *node) (quota.LayerQuota, error) {
	fields, err := elems(n, "layerQuotas")
	if err != nil {
		return quota.LayerQuota{}, err
	}
	var (
		lq       quota.LayerQuota
		hasQuota bool
	)
	seen := fieldSet{}
	for _, f := range fields {
		if err := seen.add(f.name); err != nil {
			return quota.LayerQuota{}, err
		}
		switch f.name {
		case "layer":
			lq.Layer, err = trimmedText(f, "layerQuotas layer")
		case "expirationPolicyName":
			lq.Policy, err = trimmedText(f, "layerQuotas expirationPolicyName")
		case "quota":
			lq.Quota, err = decodeQuota(f, "layerQuotas quota")
			hasQuota = true
		default:
			err = unknownField(f.name)
		}
		if err != nil {
			return quota.LayerQuota{}, err
		}
	}
	switch {
	case lq.Layer == "":
		return quota.LayerQuota{}, apperr.Invalidf("layerQuotas: layer is required")
	case lq.Policy == "":
		return quota.LayerQuota{}, apperr.Invalidf("layerQuotas: expirationPolicyName is required")
	case !hasQuota:
		return quota.LayerQuota{}, apperr.Invalidf("layerQuotas: quota is required")
	}
	return lq, nil
}
