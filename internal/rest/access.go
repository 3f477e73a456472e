package rest

import (
	"net/http"
	"slices"

	"tilecache/internal/auth"
)

// routeKind names a row of the authorization table (a path pattern);
// every route (routes.go) carries one, and access says what each of its
// methods needs.
type routeKind int

const (
	kindTasks            routeKind = iota // /rest/seed.json
	kindKillAll                           // /rest/seed
	kindLayerTasks                        // /rest/seed/{layer}.{json,xml}
	kindLayerForm                         // /rest/seed/{layer}
	kindEstimate                          // /rest/estimate/{layer}.{json,xml}
	kindMassTruncate                      // /rest/masstruncate
	kindQuota                             // /rest/diskquota.{json,xml}
	kindUsage                             // /rest/diskquota/usage.{json,xml}
	kindQuotaPages                        // /rest/diskquota/pages/{layer}.json
	kindAccessLog                         // /rest/diskquota/access.json
	kindOverview                          // /rest/overview.json
	kindFailures                          // /rest/failures.json
	kindLayers                            // /rest/layers[.xml]
	kindLayer                             // /rest/layers/{layer}.{xml,json}
	kindFromCapabilities                  // /rest/layers/from-capabilities.json
	kindGridSets                          // /rest/gridsets[.xml]
	kindGridSet                           // /rest/gridsets/{gridset}.{xml,json}
	kindSchedules                         // /rest/schedules.json
	kindSchedule                          // /rest/schedules/{name}.json
	kindWhoAmI                            // /rest/whoami.json
	kindTokens                            // /rest/tokens.json
	kindToken                             // /rest/tokens/{id}.json
	kindAccounts                          // /rest/accounts.json
	kindAccount                           // /rest/accounts/{name}.json
	kindExport                            // /rest/export/{layer}.{json,xml}
	kindImport                            // /rest/import/{layer}.json
	numKinds                              // not a route: the count
)

// permission is what one method of a route needs: the lowest role that
// may send it, and what it does, in words whoami.json reports.
type permission struct {
	need auth.Role
	does []string
}

// The capabilities whoami.json reports, each allowed from one role up.
var (
	read          = permission{auth.Viewer, []string{"read"}}
	estimate      = permission{auth.Viewer, []string{"estimate"}}
	seedOrKill    = permission{auth.Operator, []string{"seed", "kill"}}
	importArchive = permission{auth.Operator, []string{"seed"}}
	kill          = permission{auth.Operator, []string{"kill"}}
	schedules     = permission{auth.Operator, []string{"schedules"}}
	massTruncate  = permission{auth.Admin, []string{"masstruncate"}}
	editQuota     = permission{auth.Admin, []string{"quota"}}
	postAccessLog = permission{auth.Admin, []string{"accesslog"}}
	editLayers    = permission{auth.Admin, []string{"layers"}}
	editGridSets  = permission{auth.Admin, []string{"gridsets"}}
	tokens        = permission{auth.Admin, []string{"tokens"}}
	accounts      = permission{auth.Admin, []string{"accounts"}}
	exportArchive = permission{auth.Operator, []string{"export"}}
)

// routeAccess is one row of the authorization table.
type routeAccess struct {
	path    string // the route's pattern, as the security guide's table (docs/security.md) names it
	methods map[string]permission
}

// access is the authorization table: every route and method of the
// interface and the role it needs, in one place; every route (routes.go)
// is registered with its row's permission, checked before its handler
// runs, and a route whose method its row does not list is never served
// (newMux fails; TestEveryRouteHasItsRow). HEAD is no method of the
// contract (405). The matrix test (contract_roles_test.go) fails on any
// route or method missing here.
var access = [numKinds]routeAccess{
	kindTasks:      {"/rest/seed.json", map[string]permission{"GET": read}},
	kindKillAll:    {"/rest/seed", map[string]permission{"POST": kill}},
	kindLayerTasks: {"/rest/seed/{layer}.{json,xml}", map[string]permission{"GET": read, "POST": seedOrKill}},
	// A seed, reseed or truncate request by its Content-Type, else a kill
	// of the layer's tasks or of one task.
	kindLayerForm: {"/rest/seed/{layer}", map[string]permission{"POST": seedOrKill}},
	// A dry run: changes nothing.
	kindEstimate:     {"/rest/estimate/{layer}.{json,xml}", map[string]permission{"POST": estimate}},
	kindMassTruncate: {"/rest/masstruncate", map[string]permission{"GET": read, "POST": massTruncate}},
	kindQuota:        {"/rest/diskquota.{json,xml}", map[string]permission{"GET": read, "PUT": editQuota}},
	kindUsage:        {"/rest/diskquota/usage.{json,xml}", map[string]permission{"GET": read}},
	kindQuotaPages:   {"/rest/diskquota/pages/{layer}.json", map[string]permission{"GET": read}},
	// Tile reads counted from access logs: they steer the clean-up.
	kindAccessLog: {"/rest/diskquota/access.json", map[string]permission{"POST": postAccessLog}},
	kindOverview:  {"/rest/overview.json", map[string]permission{"GET": read}},
	kindFailures:  {"/rest/failures.json", map[string]permission{"GET": read}},
	kindLayers:    {"/rest/layers[.xml]", map[string]permission{"GET": read, "DELETE": editLayers}},
	kindLayer:     {"/rest/layers/{layer}.{xml,json}", map[string]permission{"GET": read, "PUT": editLayers, "POST": editLayers, "DELETE": editLayers}},
	// A proposal changes nothing, but it makes the server fetch the
	// capabilities of a URL the client chooses (20 s, 8 MiB), and only an
	// administrator can act on what it proposes: admin.
	kindFromCapabilities: {"/rest/layers/from-capabilities.json", map[string]permission{"GET": read, "PUT": editLayers, "POST": editLayers, "DELETE": editLayers}},
	kindGridSets:         {"/rest/gridsets[.xml]", map[string]permission{"GET": read, "DELETE": editGridSets}},
	kindGridSet:          {"/rest/gridsets/{gridset}.{xml,json}", map[string]permission{"GET": read, "PUT": editGridSets, "DELETE": editGridSets}},
	// POST creates a schedule or changes the one of its name.
	kindSchedules: {"/rest/schedules.json", map[string]permission{"GET": read, "POST": schedules}},
	kindSchedule:  {"/rest/schedules/{name}.json", map[string]permission{"GET": read, "DELETE": schedules}},
	kindWhoAmI:    {"/rest/whoami.json", map[string]permission{"GET": read}},
	// The API tokens, even their listing: an administrator's.
	kindTokens: {"/rest/tokens.json", map[string]permission{"GET": tokens, "POST": tokens}},
	kindToken:  {"/rest/tokens/{id}.json", map[string]permission{"DELETE": tokens}},
	// The accounts, even their listing: an administrator's.
	kindAccounts: {"/rest/accounts.json", map[string]permission{"GET": accounts, "POST": accounts}},
	kindAccount:  {"/rest/accounts/{name}.json", map[string]permission{"GET": accounts, "PUT": accounts, "DELETE": accounts}},
	// An export of stored tiles to an archive: a task, as a seed is.
	// Its archives are the layer's tiles: read by an operator, as they
	// were written.
	kindExport: {"/rest/export/{layer}.{json,xml}", map[string]permission{"POST": exportArchive, "GET": exportArchive}},
	// An archive copied into a layer: a seed from another source.
	kindImport: {"/rest/import/{layer}.json", map[string]permission{"POST": importArchive}},
}

// permissionOf is the permission a method of a route of kind k needs;
// ok is false when the table lists none: such a route is never served
// (newMux refuses it).
func permissionOf(k routeKind, method string) (permission, bool) {
	if k < 0 || k >= numKinds {
		return permission{}, false
	}
	p, ok := access[k].methods[method]
	return p, ok
}

// authorize reports whether the request may run a route needing perm,
// naming layer ("" for none), and answers 403 (one line naming the role
// needed and the one held) when it may not.
func authorize(w http.ResponseWriter, r *http.Request, perm permission, layer string) bool {
	p, ok := auth.PrincipalOf(r.Context())
	if !ok || !p.Role.Allows(perm.need) {
		writeText(w, http.StatusForbidden, auth.Refusal(perm.need, p, ok))
		return false
	}
	if p.Layers == nil {
		return true
	}
	// A layer-limited principal (a token limited to layers) may send
	// anything its role allows to a route naming one of its layers, and
	// only reads to a route naming none (a listing, the quota, kill all,
	// mass truncation, schedules, tokens span every layer).
	switch {
	case layer != "" && !p.MayUseLayer(layer):
		writeText(w, http.StatusForbidden, p.LayerRefusal(layer))
		return false
	case layer == "" && r.Method != http.MethodGet && r.Method != http.MethodHead:
		writeText(w, http.StatusForbidden, p.LayerRefusal(""))
		return false
	}
	return true
}

// layerOf is the layer a route of kind k names by its decoded name, ""
// for a route that names none (a grid set, a schedule, a token, an
// account are no layers).
func layerOf(k routeKind, name string) string {
	switch k {
	case kindLayerTasks, kindLayerForm, kindEstimate, kindQuotaPages, kindLayer, kindExport, kindImport:
		return name
	}
	return ""
}

// Capabilities lists what role may do, as whoami.json reports it: the
// words of the table's permissions its role allows, sorted.
func Capabilities(role auth.Role) []string {
	var out []string
	for _, ra := range access {
		for _, p := range ra.methods {
			if role.Allows(p.need) {
				for _, d := range p.does {
					if !slices.Contains(out, d) {
						out = append(out, d)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// Permission is one row of AccessTable.
type Permission struct {
	Method, Path string
	Role         auth.Role
}

// AccessTable is the authorization table, route by route (in the table's
// order) and method by method (GET, POST, PUT, DELETE).
func AccessTable() []Permission {
	var out []Permission
	for _, ra := range access {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			if p, ok := ra.methods[m]; ok {
				out = append(out, Permission{Method: m, Path: ra.path, Role: p.need})
			}
		}
	}
	return out
}
