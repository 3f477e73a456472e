package rest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"tilecache/internal/auth"
)

// whoAmIBody is the answer of GET /rest/whoami.json, an extension of this
// project: who the request is, its role, what that role may do, and what
// each role may do (the console shows each role only its controls).
type whoAmIBody struct {
	Name         string   `json:"name"`
	Role         string   `json:"role"`
	Token        string   `json:"token,omitempty"`
	Layers       []string `json:"layers,omitempty"`
	Capabilities []string `json:"capabilities"`
	// Roles are the capabilities of every role, lowest first.
	Roles []roleCapabilities `json:"roles"`
}

type roleCapabilities struct {
	Role         string   `json:"role"`
	Capabilities []string `json:"capabilities"`
}

// whoAmI answers GET /rest/whoami.json.
func whoAmI(w http.ResponseWriter, r *http.Request) error {
	p, _ := auth.PrincipalOf(r.Context()) // authorize let it through: there is one
	body := whoAmIBody{Name: p.Name, Role: p.Role.String(), Token: p.TokenID, Layers: p.Layers, Capabilities: Capabilities(p.Role)}
	for _, role := range auth.Roles {
		body.Roles = append(body.Roles, roleCapabilities{Role: role.String(), Capabilities: Capabilities(role)})
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("whoami: %w", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeBody(w, "application/json", b)
	return nil
}
