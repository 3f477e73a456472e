package app

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"tilecache/internal/auth"
	"tilecache/internal/layer"
	"tilecache/internal/tiletoken"
)

// TileTokensPath is where tile tokens are issued, under the base path: an
// extension path of the REST interface, behind its accounts.
const TileTokensPath = "/rest/tiletokens.json"

// tileTokenRequest is the body of a POST to TileTokensPath.
type tileTokenRequest struct {
	// Layers are the names of the layers the token opens.
	Layers []string `json:"layers"`
	// Lifetime is how long the token is valid, in seconds (default 3600,
	// at most tiletoken.MaxLifetime).
	Lifetime *int64 `json:"lifetime"`
}

// tileTokenAnswer is the answer to a POST to TileTokensPath.
type tileTokenAnswer struct {
	Token     string   `json:"token"`
	Expires   string   `json:"expires"`   // RFC 3339, UTC
	ExpiresAt int64    `json:"expiresAt"` // Unix seconds
	LayerIDs  []string `json:"layerIds"`  // what the token names (the layers' stored keys' first segment)
	KeyID     string   `json:"keyId"`
}

// maxTileTokenLayers bounds the layers of one token (a token is at most
// tiletoken.MaxLen characters whatever their ids).
const maxTileTokenLayers = 100

// issueTileTokens answers POST TileTokensPath: a token for the layers
// named, signed with the current key, valid for the lifetime asked.
func issueTileTokens(layers *layer.Catalogue, keys *tiletoken.Keyring, now func() time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		text := func(status int, msg string) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(status)
			io.WriteString(w, msg+"\n")
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			text(http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed on "+TileTokensPath+": POST {\"layers\": [...], \"lifetime\": seconds}")
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			text(http.StatusUnsupportedMediaType, "Give the request as application/json: {\"layers\": [...], \"lifetime\": seconds}")
			return
		}
		var req tileTokenRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			text(http.StatusBadRequest, "Bad request: the body is not {\"layers\": [...], \"lifetime\": seconds}: "+err.Error())
			return
		}
		if len(req.Layers) == 0 || len(req.Layers) > maxTileTokenLayers {
			text(http.StatusBadRequest, fmt.Sprintf("Bad request: name 1 to %d layers, got %d", maxTileTokenLayers, len(req.Layers)))
			return
		}
		lifetime := int64(3600)
		if req.Lifetime != nil {
			lifetime = *req.Lifetime
		}
		if max := int64(tiletoken.MaxLifetime / time.Second); lifetime < 1 || lifetime > max {
			text(http.StatusBadRequest, fmt.Sprintf("Bad request: lifetime %d: give 1 to %d seconds", lifetime, max))
			return
		}
		var ids []string
		p, _ := auth.PrincipalOf(r.Context())
		for _, name := range req.Layers {
			l, ok := layers.Layer(name)
			if !ok {
				text(http.StatusBadRequest, "Bad request: no layer named "+strconv.Quote(name))
				return
			}
			if !p.MayUseLayer(name) {
				// An API token limited to layers opens only those.
				text(http.StatusForbidden, p.LayerRefusal(name))
				return
			}
			if !slices.Contains(ids, l.ID) {
				ids = append(ids, l.ID)
			}
		}
		exp := now().Add(time.Duration(lifetime) * time.Second)
		tok, err := keys.Issue(ids, exp)
		if err != nil {
			text(http.StatusBadRequest, "Bad request: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(tileTokenAnswer{Token: tok, Expires: time.Unix(exp.Unix(), 0).UTC().Format(time.RFC3339),
			ExpiresAt: exp.Unix(), LayerIDs: ids, KeyID: keys.Current()})
	})
}

// withTileTokens sends TileTokensPath (the base path stripped) to issue
// and every other request to api.
func withTileTokens(api, issue http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == TileTokensPath {
			issue.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
