package rest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"tilecache/internal/config"
)

// CrossSite refuses state-changing requests to the administration
// interface that a browser sent from another site's page. A browser keeps
// an administrator's Basic credentials and sends them with any site's form
// post; GeoWebCache's kill is a form post, so without this a page anywhere
// could kill every task. Browsers mark such requests: Sec-Fetch-Site says
// cross-site or same-site, Origin names the page's origin. Requests without
// those headers (curl, the CLI, GeoWebCache tooling) are not browsers' and
// pass as before.
type CrossSite struct {
	// BasePath is the mount prefix in front of the guarded paths.
	BasePath string
	// Own are the service's own origins besides the request's host (the
	// origin of TILECACHE_PUBLIC_URL), written as config.Origin writes them.
	Own []string
	// Allowed are other origins whose pages may change the service
	// (TILECACHE_ALLOWED_ORIGINS).
	Allowed []string
}

// NewCrossSite returns the guard of the paths under base: the service's
// own origins are the request's host and publicURL's origin, and allowed
// (origins as config.Origin writes them) may change it too.
func NewCrossSite(base, publicURL string, allowed []string) CrossSite {
	c := CrossSite{BasePath: base, Allowed: allowed}
	if u, err := url.Parse(publicURL); err == nil && u.Host != "" {
		if o, ok := config.Origin(u.Scheme + "://" + u.Host); ok {
			c.Own = append(c.Own, o)
		}
	}
	return c
}

// guardedPrefixes are the paths below the base path whose state-changing
// requests are guarded: the REST interface and the console.
var guardedPrefixes = []string{"/rest", "/console"}

// Wrap returns next behind the guard. Every answer under /rest (its
// refusals and its 401s included) also tells browsers not to sniff its
// content type.
func (c CrossSite) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, c.BasePath); ok && (rest == "/rest" || strings.HasPrefix(rest, "/rest/")) {
			w.Header().Set("X-Content-Type-Options", "nosniff")
		}
		if msg := c.refusal(r); msg != "" {
			writeText(w, http.StatusForbidden, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guarded reports whether r is a state-changing request to a guarded path.
func (c CrossSite) guarded(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
	default:
		return false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, c.BasePath)
	if !ok {
		return false
	}
	for _, p := range guardedPrefixes {
		if rest == p || strings.HasPrefix(rest, p+"/") {
			return true
		}
	}
	return false
}

// refusal returns why r is refused, "" when it is not.
func (c CrossSite) refusal(r *http.Request) string {
	if !c.guarded(r) {
		return ""
	}
	rawOrigin := r.Header.Get("Origin")
	origin, valid := config.Origin(rawOrigin)
	if rawOrigin != "" && valid && slices.Contains(c.Allowed, origin) {
		return ""
	}
	const how = "a state-changing request to the administration interface must come from this service's own pages, or from an origin listed in TILECACHE_ALLOWED_ORIGINS"
	site := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")))
	if site == "cross-site" || site == "same-site" {
		from := ""
		if rawOrigin != "" {
			from = " (Origin " + clip(rawOrigin) + ")"
		}
		return "Cross-site request refused: Sec-Fetch-Site is " + site + from + "; " + how
	}
	if rawOrigin == "" {
		return ""
	}
	own := c.own(r)
	if valid && slices.Contains(own, origin) {
		return ""
	}
	return "Cross-site request refused: Origin " + clip(rawOrigin) + " is not this service's origin (" + strings.Join(own, ", ") +
		"); add it to TILECACHE_ALLOWED_ORIGINS to allow it"
}

// own returns the service's origins for r: its host by either scheme (a
// proxy in front may end TLS, so the scheme the browser used is not known
// here), and the configured ones.
func (c CrossSite) own(r *http.Request) []string {
	var out []string
	if r.Host != "" {
		for _, scheme := range []string{"https", "http"} {
			if o, ok := config.Origin(scheme + "://" + r.Host); ok && !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
	}
	for _, o := range c.Own {
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// clip shortens a header's value for a message.
func clip(s string) string {
	const most = 200
	if len(s) > most {
		s = s[:most] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
