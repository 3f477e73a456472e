package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"tilecache/internal/apitoken"
	"tilecache/internal/apperr"
	"tilecache/internal/auth"
)

// An extension of this project: the API tokens (internal/apitoken), an
// administrator's to issue, list and revoke.
//
//	POST   /rest/tokens.json        {"role", "layers", "lifetime" | "expires", "label"}
//	                                → 201 with the token's bearer value, shown once
//	GET    /rest/tokens.json        → {"tokens": [...]}, without secrets
//	DELETE /rest/tokens/{id}.json   → 204; the token stops authenticating in
//	                                  every process within apitoken.CacheFor

// tokensResource serves /rest/tokens.json and /rest/tokens/{id}.json.
type tokensResource struct {
	store    TokenStore // nil: 404, no tokens are kept
	layers   Layers     // which layers a token may be limited to
	basePath string
}

// DefaultTokenLifetime is the lifetime of a token issued without one.
const DefaultTokenLifetime = 30 * 24 * time.Hour

// tokenBody is the body of POST /rest/tokens.json.
type tokenBody struct {
	Role     string    `json:"role"`
	Layers   []string  `json:"layers"`
	Lifetime string    `json:"lifetime"`
	Expires  time.Time `json:"expires"`
	Label    string    `json:"label"`
}

// tokenJSON is a token as the interface shows it.
type tokenJSON struct {
	ID      string    `json:"id"`
	Token   string    `json:"token,omitempty"`
	Role    string    `json:"role"`
	Layers  []string  `json:"layers,omitempty"`
	Expires time.Time `json:"expires"`
	Label   string    `json:"label,omitempty"`
	Creator string    `json:"creator"`
	Created time.Time `json:"created"`
	Revoked time.Time `json:"revoked,omitzero"`
	// State is "active", "revoked" or "expired".
	State string `json:"state"`
}

func tokenJSONOf(t apitoken.Token, now time.Time) tokenJSON {
	state := "active"
	switch {
	case !t.Revoked.IsZero():
		state = "revoked"
	case !now.Before(t.Expires):
		state = "expired"
	}
	return tokenJSON{ID: t.ID, Role: t.Role.String(), Layers: t.Layers, Expires: t.Expires, Label: t.Label,
		Creator: t.Creator, Created: t.Created, Revoked: t.Revoked, State: state}
}

func (res tokensResource) storeOr404() (TokenStore, error) {
	if res.store == nil {
		return nil, apperr.New(apperr.NotFound, "API tokens are not kept by this server")
	}
	return res.store, nil
}

// createToken answers POST /rest/tokens.json: 201 with the token and its
// bearer value, which is shown this once.
func (res tokensResource) create(w http.ResponseWriter, r *http.Request) error {
	store, err := res.storeOr404()
	if err != nil {
		return err
	}
	if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		if mt == "" {
			mt = "none"
		}
		return apperr.New(apperr.Unsupported, "Unsupported Content-Type %s: a token request must be sent as application/json", apperr.Show(mt))
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var b tokenBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return apperr.Invalidf("A token request is a JSON object {\"role\", \"layers\", \"lifetime\" or \"expires\", \"label\"}: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	role, err := auth.ParseRole(b.Role)
	if err != nil || role == auth.RoleNone {
		return apperr.Invalidf("Field role must be viewer, operator or admin, not %s", apperr.Show(b.Role))
	}
	for _, l := range b.Layers {
		if _, ok := res.layers.Layer(l); !ok {
			return apperr.Invalidf("Unknown layer %s in field layers", apperr.Show(l))
		}
	}
	if b.Layers != nil && len(b.Layers) == 0 {
		return apperr.Invalidf("Field layers is empty: leave it out for a token of every layer")
	}
	now := time.Now()
	expires := now.Add(DefaultTokenLifetime)
	switch {
	case b.Lifetime != "" && !b.Expires.IsZero():
		return apperr.Invalidf("Give lifetime or expires, not both")
	case b.Lifetime != "":
		d, err := time.ParseDuration(b.Lifetime)
		if err != nil {
			return apperr.Invalidf("Field lifetime must be a duration such as 720h, not %s", apperr.Show(b.Lifetime))
		}
		expires = now.Add(d)
	case !b.Expires.IsZero():
		expires = b.Expires
	}
	p, _ := auth.PrincipalOf(r.Context())
	t, bearer, err := apitoken.Issue(p, role, b.Layers, expires, b.Label, now)
	if err != nil {
		return err
	}
	if err := store.Create(r.Context(), t); err != nil {
		return err
	}
	out := tokenJSONOf(t, now)
	out.Token = bearer
	w.Header().Set("Location", res.basePath+"/rest/tokens/"+t.ID+".json")
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, http.StatusCreated, out, "token "+t.ID)
}

// listTokens answers GET /rest/tokens.json: every token, oldest first,
// without secrets.
func (res tokensResource) list(w http.ResponseWriter, r *http.Request) error {
	store, err := res.storeOr404()
	if err != nil {
		return err
	}
	l, err := store.List(r.Context())
	if err != nil {
		return err
	}
	now := time.Now()
	out := struct {
		Tokens []tokenJSON `json:"tokens"`
	}{Tokens: []tokenJSON{}}
	for _, t := range l {
		out.Tokens = append(out.Tokens, tokenJSONOf(t, now))
	}
	return writeJSON(w, http.StatusOK, out, "tokens")
}

// revokeToken answers DELETE /rest/tokens/{id}.json: 204, 404 for an
// unknown id.
func (res tokensResource) revoke(id string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		store, err := res.storeOr404()
		if err != nil {
			return err
		}
		if err := store.Revoke(r.Context(), id, time.Now()); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}
