package tiletoken

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// QueryParam is the query parameter a tile token is given in: a map
// library adds one to its tile URL template where it cannot set a header.
const QueryParam = "token"

// EdgeHeader is the header the edge function moves a checked token to,
// for the origin (the query string is not forwarded).
const EdgeHeader = "X-Tile-Token"

// FromRequest returns the tile token of r: the query parameter token,
// else an Authorization: Bearer header's, else EdgeHeader's; "" when it
// has none.
func FromRequest(r *http.Request) string {
	if t := r.URL.Query().Get(QueryParam); t != "" {
		return t
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return r.Header.Get(EdgeHeader)
}

// Guard lets a request for a private layer's tiles or documents through
// only with a valid tile token for that layer.
type Guard struct {
	// Keys is the keyring tokens are checked with (nil: none, and no
	// token is valid).
	Keys *Keyring
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// LayerOf names the layer a request is for (its id), and whether it
	// is private; ok is false for a request of no layer.
	LayerOf func(r *http.Request) (id string, private bool, ok bool)
}

// Wrap returns next behind the guard. A request of a private layer
// without a valid token for it is answered 401 (no token, or one that is
// malformed, signed by an unknown key, tampered with or expired) or 403
// (a valid token for other layers), text/plain naming the problem, never
// cached; with one, the token is taken off the query before next sees it.
// Other requests, and CORS preflights, pass as they are.
func (g Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		id, private, ok := g.LayerOf(r)
		if !ok || !private {
			next.ServeHTTP(w, r)
			return
		}
		now := time.Now()
		if g.Now != nil {
			now = g.Now()
		}
		secrets := func(string) (string, bool) { return "", false }
		if g.Keys != nil {
			secrets = g.Keys.Secret
		}
		_, err := Verify(FromRequest(r), secrets, id, now)
		if err != nil {
			refuse(w, id, err)
			return
		}
		if q := r.URL.Query(); q.Has(QueryParam) {
			r = r.Clone(r.Context())
			q.Del(QueryParam)
			r.URL.RawQuery = q.Encode()
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request of private layer id refused for err.
func refuse(w http.ResponseWriter, id string, err error) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Access-Control-Allow-Origin", "*")
	status, msg := http.StatusUnauthorized, ""
	switch {
	case errors.Is(err, ErrMissing):
		h.Set("WWW-Authenticate", `Bearer realm="tiles"`)
		msg = "Unauthorized: layer " + id + " is private: a tile token for it is needed (query parameter token= or Authorization: Bearer)"
	case errors.Is(err, ErrExpired):
		h.Set("WWW-Authenticate", `Bearer realm="tiles", error="invalid_token"`)
		msg = "Unauthorized: the tile token has expired (" + err.Error() + "): ask for a new one"
	case errors.Is(err, ErrWrongLayer):
		status = http.StatusForbidden
		msg = "Forbidden: the tile token is not for layer " + id
	default:
		h.Set("WWW-Authenticate", `Bearer realm="tiles", error="invalid_token"`)
		msg = "Unauthorized: the tile token is not valid (" + err.Error() + ")"
	}
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}
