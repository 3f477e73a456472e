package auth

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Role is what an account may do, in increasing order: a role allows
// everything the roles below it allow. The zero Role, RoleNone, allows
// nothing.
type Role int8

const (
	// RoleNone allows nothing: the accounts file's "user" role, kept for
	// compatibility (such an account authenticates and is refused every
	// request with 403, as before roles existed).
	RoleNone Role = iota
	// Viewer reads: every GET under /rest, the console's pages, stored-only
	// tile reads, and the requests that change nothing (an estimate).
	Viewer
	// Operator also runs tasks: seed, reseed and truncate requests, kills,
	// schedules.
	Operator
	// Admin may do everything: also mass truncation, layers, grid sets,
	// the disk quota and the access log.
	Admin
)

// Roles lists the roles that allow something, lowest first.
var Roles = []Role{Viewer, Operator, Admin}

// The words of the accounts file's third field.
var roleWords = map[string]Role{"viewer": Viewer, "operator": Operator, "admin": Admin, roleUser: RoleNone}

// roleUser is the accounts file's role of an account without access.
const roleUser = "user"

// String is the role's word: "viewer", "operator", "admin", or "none".
func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	case Admin:
		return "admin"
	case RoleNone:
		return "none"
	}
	return fmt.Sprintf("Role(%d)", int8(r))
}

// ParseRole reads a role as the accounts file writes it: "viewer",
// "operator", "admin", or "user" (RoleNone, kept for compatibility).
func ParseRole(s string) (Role, error) {
	r, ok := roleWords[s]
	if !ok {
		return RoleNone, fmt.Errorf("unknown role %q (want viewer, operator, admin, or user for no access)", s)
	}
	return r, nil
}

// Allows reports whether r may make a request that needs the role need.
// RoleNone allows nothing, not even a request that needs RoleNone.
func (r Role) Allows(need Role) bool {
	return r != RoleNone && r >= need
}

// Principal is who makes a request, as the middleware authenticated it.
type Principal struct {
	// Name is the account's name.
	Name string
	// Role is what the request may do.
	Role Role
	// TokenID names the token the request carried; "" for an account's
	// password.
	TokenID string
	// Layers are the only layers the request may concern; nil means every
	// layer.
	Layers []string
}

// MayUseLayer reports whether the principal is not limited to layers other
// than name.
func (p Principal) MayUseLayer(name string) bool {
	return p.Layers == nil || slices.Contains(p.Layers, name)
}

// LayerRefusal is the 403 line of a request a layer-limited principal
// may not send: one concerning layer (or every layer, when layer is "").
func (p Principal) LayerRefusal(layer string) string {
	what := "every layer"
	if layer != "" {
		what = "layer " + layer
	}
	return "This request concerns " + what + "; " + p.String() + " is limited to layers " + strings.Join(p.Layers, ", ")
}

// String names the principal in messages: "account ann" or "token t1 of
// account ann".
func (p Principal) String() string {
	if p.TokenID != "" {
		return "token " + p.TokenID + " of account " + p.Name
	}
	return "account " + p.Name
}

// principalKey is the context key of the request's Principal.
type principalKey struct{}

// WithPrincipal returns ctx carrying p, as Middleware stores it.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalOf returns the Principal Middleware authenticated for the
// request whose context is ctx; ok is false if there is none.
func PrincipalOf(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Refusal is the one line that answers a request of p (ok false: none)
// that needs the role need.
func Refusal(need Role, p Principal, ok bool) string {
	switch {
	case !ok:
		return fmt.Sprintf("This request needs the %s role; it carries no account", need)
	case p.Role == RoleNone:
		return fmt.Sprintf("This request needs the %s role; %s has no role (user, kept for compatibility, allows nothing)", need, p)
	}
	return fmt.Sprintf("This request needs the %s role; %s has the %s role", need, p, p.Role)
}

// Forbid answers 403, text/plain, with Refusal's line.
func Forbid(w http.ResponseWriter, need Role, p Principal, ok bool) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.Error(w, Refusal(need, p, ok), http.StatusForbidden)
}

// Require lets a request through to next only if its Principal (stored by
// Middleware, which must run first) has a role that allows need; others
// are answered 403 by Forbid.
func Require(need Role, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalOf(r.Context())
		if !ok || !p.Role.Allows(need) {
			Forbid(w, need, p, ok)
			return
		}
		next.ServeHTTP(w, r)
	})
}
