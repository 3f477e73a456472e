package layer

import (
	"fmt"
	"time"
)

// ExpirationRule gives an expiry, in seconds, from zoom level MinZoom up to
// the next rule's MinZoom. The first rule of a list also covers the levels
// below its MinZoom, as GeoWebCache's rules do.
// It is also an entry of an expireClientsList or expireCacheList.
type ExpirationRule struct {
	MinZoom    int `yaml:"minZoom"`
	Expiration int `yaml:"expiration"` // seconds
}

// ClientMaxAge returns how many seconds a client may keep a tile of zoom
// level z (the max-age of its Cache-Control), from the layer's
// expireClients or expireClientsList; ok is false when the layer sets
// neither.
func (l *Layer) ClientMaxAge(z int) (seconds int, ok bool) {
	return ruleFor(l.ClientExpiry, z)
}

// TileCacheControl returns the Cache-Control stored with a tile of zoom
// level z, which a CDN serving the bucket and browsers honour: with
// expireClients rules, "public, max-age=N" for the rule's N seconds, and
// none for 0 (GeoWebCache's "disable the header"); else the layer's
// cacheControl.
func (l *Layer) TileCacheControl(z int) string {
	s, ok := l.ClientMaxAge(z)
	switch {
	case !ok:
		return l.CacheControl
	case s == 0:
		return ""
	}
	return fmt.Sprintf("public, max-age=%d", s)
}

// CacheExpiry returns how long a stored tile of zoom level z stays fresh,
// from the layer's expireCache or expireCacheList; ok is false when the
// layer sets neither or the rule for z is 0 (never stale).
func (l *Layer) CacheExpiry(z int) (time.Duration, bool) {
	s, ok := ruleFor(l.CacheExpiryRules, z)
	if !ok || s == 0 {
		return 0, false
	}
	return time.Duration(s) * time.Second, true
}

// ruleFor returns the expiration of the last rule whose MinZoom is at most
// z, or of the first rule when z lies below every MinZoom.
func ruleFor(rules []ExpirationRule, z int) (int, bool) {
	if len(rules) == 0 {
		return 0, false
	}
	e := rules[0].Expiration
	for _, r := range rules[1:] {
		if r.MinZoom > z {
			break
		}
		e = r.Expiration
	}
	return e, true
}

// buildExpiry checks one expiry setting given as a single number (key) or
// as a list of rules (key+"List"), not both: seconds ≥ 0 and minimum
// zooms that start at 0 or more and strictly increase.
func buildExpiry(key string, single *int, list []ExpirationRule) ([]ExpirationRule, error) {
	switch {
	case single != nil && list != nil:
		return nil, fmt.Errorf("give either %s or %sList, not both", key, key)
	case single != nil:
		list = []ExpirationRule{{MinZoom: 0, Expiration: *single}}
	case list == nil:
		return nil, nil
	case len(list) == 0:
		return nil, fmt.Errorf("%sList: at least one rule is required", key)
	}
	rules := make([]ExpirationRule, 0, len(list))
	for i, r := range list {
		switch {
		case r.Expiration < 0:
			return nil, fmt.Errorf("%s: expiration %d of rule %d is negative (seconds; GeoWebCache's special values -1, -2 and -4 are not supported)", key, r.Expiration, i)
		case r.MinZoom < 0 || r.MinZoom > 64:
			return nil, fmt.Errorf("%s: minZoom %d of rule %d must be 0..64", key, r.MinZoom, i)
		case i > 0 && r.MinZoom <= list[i-1].MinZoom:
			return nil, fmt.Errorf("%s: minZoom %d of rule %d does not follow %d (minimum zooms must increase)", key, r.MinZoom, i, list[i-1].MinZoom)
		}
		rules = append(rules, ExpirationRule{MinZoom: r.MinZoom, Expiration: r.Expiration})
	}
	return rules, nil
}
