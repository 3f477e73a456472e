package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"tilecache/internal/account"
	"tilecache/internal/apperr"
	"tilecache/internal/auth"
)

// An extension of this project: the accounts administrators add, change
// and remove at run time (internal/account), beside the configured ones
// (the accounts file or secret), which are listed but cannot be changed
// here.
//
//	GET    /rest/accounts.json          → {"accounts": [...]}, without hashes
//	POST   /rest/accounts.json          {"name", "password", "role"} → 201
//	PUT    /rest/accounts/{name}.json   {"password"?, "role"?} → 200
//	DELETE /rest/accounts/{name}.json   → 204; the tokens it issued are revoked
//
// A change reaches every process within auth.StoredFor. An administrator
// cannot remove their own account or change its role (409), so that the
// last administrator cannot lock everyone out by a slip; lowering an
// account's role revokes its tokens above the new role.

// accountsResource serves /rest/accounts.json and
// /rest/accounts/{name}.json.
type accountsResource struct {
	store      AccountStore       // nil: 404, no accounts are kept
	configured ConfiguredAccounts // nil: none
	tokens     TokenStore         // the tokens revoked with their account (nil: none)
	cost       int                // bcrypt cost of new passwords
	basePath   string
	log        *slog.Logger
}

// accountJSON is an account as the interface shows it.
type accountJSON struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// Source is "configured" (the accounts file or secret) or "stored"
	// (added at run time).
	Source  string    `json:"source"`
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
	By      string    `json:"by,omitempty"`
}

func storedJSON(a account.Account) accountJSON {
	return accountJSON{Name: a.Name, Role: a.Role.String(), Source: "stored", Created: a.Created, Updated: a.Updated, By: a.By}
}

func (res accountsResource) storeOr404() (AccountStore, error) {
	if res.store == nil {
		return nil, apperr.New(apperr.NotFound, "Accounts are not kept by this server")
	}
	return res.store, nil
}

// configured reports whether name is a configured account.
func (res accountsResource) isConfigured(name string) bool {
	return res.configured != nil && res.configured.IsConfigured(name)
}

func errConfigured(name string) error {
	return apperr.New(apperr.Conflict, "Account %s is configured (the accounts file or secret): change it there", apperr.Show(name))
}

// listAccounts answers GET /rest/accounts.json: the configured accounts,
// then the stored ones, each by name.
func (res accountsResource) list(w http.ResponseWriter, r *http.Request) error {
	store, err := res.storeOr404()
	if err != nil {
		return err
	}
	l, err := store.List(r.Context())
	if err != nil {
		return err
	}
	out := struct {
		Accounts []accountJSON `json:"accounts"`
	}{Accounts: []accountJSON{}}
	if res.configured != nil {
		for _, a := range res.configured.Configured() {
			role := a.Role.String()
			if a.Role == auth.RoleNone {
				role = "user"
			}
			out.Accounts = append(out.Accounts, accountJSON{Name: a.Name, Role: role, Source: "configured"})
		}
	}
	for _, a := range l {
		if !res.isConfigured(a.Name) { // a configured account wins
			out.Accounts = append(out.Accounts, storedJSON(a))
		}
	}
	return writeAccountJSON(w, http.StatusOK, out)
}

// getAccount answers GET /rest/accounts/{name}.json.
func (res accountsResource) get(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		store, err := res.storeOr404()
		if err != nil {
			return err
		}
		if res.isConfigured(name) {
			for _, a := range res.configured.Configured() {
				if a.Name == name {
					return writeAccountJSON(w, http.StatusOK, accountJSON{Name: a.Name, Role: a.Role.String(), Source: "configured"})
				}
			}
		}
		a, err := store.Get(r.Context(), name)
		if err != nil {
			return err
		}
		return writeAccountJSON(w, http.StatusOK, storedJSON(a))
	}
}

// accountBody is the body of POST /rest/accounts.json and PUT
// /rest/accounts/{name}.json.
type accountBody struct {
	Name     string  `json:"name"`
	Password *string `json:"password"`
	Role     string  `json:"role"`
}

// readAccountBody reads a JSON account body.
func readAccountBody(w http.ResponseWriter, r *http.Request, what string) (accountBody, error) {
	var b accountBody
	if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		if mt == "" {
			mt = "none"
		}
		return b, apperr.New(apperr.Unsupported, "Unsupported Content-Type %s: an account must be sent as application/json", apperr.Show(mt))
	}
	body, err := readBody(w, r)
	if err != nil {
		return b, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, apperr.Invalidf("%s is a JSON object %s: %s", what, map[bool]string{true: `{"name", "password", "role"}`, false: `{"password", "role"}`}[r.Method == http.MethodPost], strings.TrimPrefix(err.Error(), "json: "))
	}
	return b, nil
}

// parseAccountRole reads the role of an account body.
func parseAccountRole(s string) (auth.Role, error) {
	role, err := auth.ParseRole(s)
	if err != nil || role == auth.RoleNone {
		return auth.RoleNone, apperr.Invalidf("Field role must be viewer, operator or admin, not %s", apperr.Show(s))
	}
	return role, nil
}

// createAccount answers POST /rest/accounts.json: 201 with the account.
func (res accountsResource) create(w http.ResponseWriter, r *http.Request) error {
	store, err := res.storeOr404()
	if err != nil {
		return err
	}
	b, err := readAccountBody(w, r, "An account")
	if err != nil {
		return err
	}
	if err := account.CheckName(b.Name); err != nil {
		return err
	}
	if b.Password == nil {
		return apperr.Invalidf("Field password is missing: a new account needs one")
	}
	role, err := parseAccountRole(b.Role)
	if err != nil {
		return err
	}
	if res.isConfigured(b.Name) {
		return errConfigured(b.Name)
	}
	hash, err := account.Hash(*b.Password, res.cost)
	if err != nil {
		return err
	}
	p, _ := auth.PrincipalOf(r.Context())
	now := time.Now().UTC()
	a := account.Account{Name: b.Name, Hash: hash, Role: role, Created: now, Updated: now, By: p.Name}
	if err := store.Create(r.Context(), a); err != nil {
		return err
	}
	w.Header().Set("Location", res.basePath+"/rest/accounts/"+url.PathEscape(a.Name)+".json")
	return writeAccountJSON(w, http.StatusCreated, storedJSON(a))
}

// changeAccount answers PUT /rest/accounts/{name}.json: a new password, a
// new role, or both; 200 with the account.
func (res accountsResource) change(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		store, err := res.storeOr404()
		if err != nil {
			return err
		}
		b, err := readAccountBody(w, r, "An account change")
		if err != nil {
			return err
		}
		switch {
		case b.Name != "" && b.Name != name:
			return apperr.Invalidf("Field name %s is not the account of the path, %s: an account cannot be renamed", apperr.Show(b.Name), apperr.Show(name))
		case b.Password == nil && b.Role == "":
			return apperr.Invalidf("Nothing to change: give a password, a role or both")
		case res.isConfigured(name):
			return errConfigured(name)
		}
		a, err := store.Get(r.Context(), name)
		if err != nil {
			return err
		}
		p, _ := auth.PrincipalOf(r.Context())
		old := a.Role
		if b.Role != "" {
			if a.Role, err = parseAccountRole(b.Role); err != nil {
				return err
			}
			if a.Role != old && p.Name == name {
				return apperr.New(apperr.Conflict, "You cannot change the role of your own account %s: another administrator can", apperr.Show(name))
			}
		}
		if b.Password != nil {
			if a.Hash, err = account.Hash(*b.Password, res.cost); err != nil {
				return err
			}
		}
		a.Updated, a.By = time.Now().UTC(), p.Name
		if err := store.Update(r.Context(), a); err != nil {
			return err
		}
		if a.Role < old {
			if err := res.revokeTokensOf(r.Context(), name, a.Role); err != nil {
				return err
			}
		}
		return writeAccountJSON(w, http.StatusOK, storedJSON(a))
	}
}

// removeAccount answers DELETE /rest/accounts/{name}.json: 204; the
// tokens the account issued are revoked.
func (res accountsResource) remove(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		store, err := res.storeOr404()
		if err != nil {
			return err
		}
		if res.isConfigured(name) {
			return errConfigured(name)
		}
		if p, _ := auth.PrincipalOf(r.Context()); p.Name == name {
			return apperr.New(apperr.Conflict, "You cannot remove your own account %s: another administrator can", apperr.Show(name))
		}
		if err := store.Delete(r.Context(), name); err != nil {
			return err
		}
		// Revoked after the account is gone: a token issued in between
		// would need the account's credentials, which no longer work
		// once every process has seen the removal.
		if err := res.revokeTokensOf(r.Context(), name, auth.RoleNone); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

// revokeTokensOf revokes the active tokens creator issued whose role is
// above keep (auth.RoleNone: every one).
func (res accountsResource) revokeTokensOf(ctx context.Context, creator string, keep auth.Role) error {
	if res.tokens == nil {
		return nil
	}
	l, err := res.tokens.List(ctx)
	if err != nil {
		return fmt.Errorf("list the tokens of account %s: %w", creator, err)
	}
	now := time.Now()
	for _, t := range l {
		if t.Creator != creator || !t.Revoked.IsZero() || (keep != auth.RoleNone && t.Role <= keep) {
			continue
		}
		if err := res.tokens.Revoke(ctx, t.ID, now); err != nil {
			return fmt.Errorf("revoke token %s of account %s: %w", t.ID, creator, err)
		}
		res.log.InfoContext(ctx, "token revoked with its account's change", "token", t.ID, "account", creator)
	}
	return nil
}

// writeAccountJSON answers status with an account document, never to be
// cached.
func writeAccountJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Cache-Control", "no-store")
	return writeJSON(w, status, v, "account")
}
