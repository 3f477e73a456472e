package rest_test

// The roles (issue 51): every route and method of the contract and the
// extensions, sent by every kind of account, against the status its role
// earns, on both backends (apptest).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/auth"
	"tilecache/internal/rest"
)

// roleCase is one request of the matrix: the route's pattern in the
// authorization table, the request, and the role it needs, written down
// here independently of the table.
type roleCase struct {
	pattern, method, path, body string
	headers                     []string
	need                        string
}

// roleCases are the matrix's requests: every route and method the router
// answers. A request an account may send does something real (a seed,
// a kill, a change of the quota) or fails after the check (a layer that
// does not exist): anything but 401 and 403.
func roleCases() []roleCase {
	form := []string{"Content-Type", ctForm}
	js := []string{"Content-Type", ctJSON}
	xmlType := []string{"Content-Type", "text/xml"}
	schedule := scheduleBody("roles-nightly", "0 3 * * *", `{"layer":"demo:world","seedRequest":{"zoomStart":0,"zoomStop":0}}`)
	const (
		viewer, operator, admin = "viewer", "operator", "admin"
	)
	return []roleCase{
		{"/rest/seed.json", "GET", "/rest/seed.json", "", nil, viewer},
		{"/rest/seed", "POST", "/rest/seed", "kill_all=all", form, operator},
		{"/rest/seed", "POST", "/rest/seed", "kill_thread=1&thread_id=999", form, operator},
		{"/rest/seed/{layer}.{json,xml}", "GET", "/rest/seed/demo:world.json", "", nil, viewer},
		{"/rest/seed/{layer}.{json,xml}", "GET", "/rest/seed/demo:world.xml", "", nil, viewer},
		{"/rest/seed/{layer}.{json,xml}", "POST", "/rest/seed/demo:world.json", seedBodyJSON, nil, operator},
		{"/rest/seed/{layer}.{json,xml}", "POST", "/rest/seed/demo:world.xml", seedBodyXML, nil, operator},
		{"/rest/seed/{layer}.{json,xml}", "POST", "/rest/seed/demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"type":"reseed"}}`, nil, operator},
		{"/rest/seed/{layer}.{json,xml}", "POST", "/rest/seed/demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0,"type":"truncate"}}`, nil, operator},
		{"/rest/seed/{layer}", "POST", "/rest/seed/demo:world", seedBodyJSON, js, operator},
		{"/rest/seed/{layer}", "POST", "/rest/seed/demo:world", "0/0/0\n", []string{"Content-Type", rest.TileListType}, operator},
		{"/rest/seed/{layer}", "POST", "/rest/seed/demo:world", "kill_all=all", form, operator},
		{"/rest/seed/{layer}", "POST", "/rest/seed/demo:world", "kill_thread=1&thread_id=999", form, operator},
		{"/rest/estimate/{layer}.{json,xml}", "POST", "/rest/estimate/demo:world.json", seedBodyJSON, nil, viewer},
		{"/rest/masstruncate", "GET", "/rest/masstruncate", "", nil, viewer},
		{"/rest/masstruncate", "POST", "/rest/masstruncate", truncateBody, xmlType, admin},
		{"/rest/diskquota.{json,xml}", "GET", "/rest/diskquota.json", "", nil, viewer},
		{"/rest/diskquota.{json,xml}", "GET", "/rest/diskquota.xml", "", nil, viewer},
		{"/rest/diskquota.{json,xml}", "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true,"maxConcurrentCleanUps":7}}`, nil, admin},
		{"/rest/diskquota.{json,xml}", "PUT", "/rest/diskquota.xml", `<cacheQuotaConfiguration><maxConcurrentCleanUps>5</maxConcurrentCleanUps></cacheQuotaConfiguration>`, nil, admin},
		{"/rest/diskquota/usage.{json,xml}", "GET", "/rest/diskquota/usage.json", "", nil, viewer},
		{"/rest/diskquota/pages/{layer}.json", "GET", "/rest/diskquota/pages/demo:world.json?gridSet=EPSG:4326&format=image/png&z=0", "", nil, viewer},
		{"/rest/diskquota/access.json", "POST", "/rest/diskquota/access.json", `{"id":"roles","reads":[]}`, js, admin},
		{"/rest/overview.json", "GET", "/rest/overview.json", "", nil, viewer},
		{"/rest/failures.json", "GET", "/rest/failures.json", "", nil, viewer},
		{"/rest/layers[.xml]", "GET", "/rest/layers.xml", "", nil, viewer},
		{"/rest/layers[.xml]", "DELETE", "/rest/layers", "", nil, admin},
		{"/rest/layers/{layer}.{xml,json}", "GET", "/rest/layers/demo:world.xml", "", nil, viewer},
		{"/rest/layers/{layer}.{xml,json}", "PUT", "/rest/layers/roles:new.xml", "<wmsLayer/>", xmlType, admin},
		{"/rest/layers/{layer}.{xml,json}", "POST", "/rest/layers/roles:new.xml", "<wmsLayer/>", xmlType, admin},
		{"/rest/layers/{layer}.{xml,json}", "DELETE", "/rest/layers/roles:none.xml", "", nil, admin},
		{"/rest/layers/from-capabilities.json", "GET", "/rest/layers/from-capabilities.json", "", nil, viewer},
		{"/rest/layers/from-capabilities.json", "POST", "/rest/layers/from-capabilities.json", `{"url":"http://127.0.0.1:1/wms"}`, js, admin},
		{"/rest/layers/from-capabilities.json", "PUT", "/rest/layers/from-capabilities.json", "{}", js, admin},
		{"/rest/layers/from-capabilities.json", "DELETE", "/rest/layers/from-capabilities.json", "", nil, admin},
		{"/rest/gridsets[.xml]", "GET", "/rest/gridsets.xml", "", nil, viewer},
		{"/rest/gridsets[.xml]", "DELETE", "/rest/gridsets", "", nil, admin},
		{"/rest/gridsets/{gridset}.{xml,json}", "GET", "/rest/gridsets/TopLeft4326.xml", "", nil, viewer},
		{"/rest/gridsets/{gridset}.{xml,json}", "PUT", "/rest/gridsets/RolesGrid.xml", "<gridSet/>", xmlType, admin},
		{"/rest/gridsets/{gridset}.{xml,json}", "DELETE", "/rest/gridsets/NoSuchGrid.xml", "", nil, admin},
		{"/rest/schedules.json", "GET", "/rest/schedules.json", "", nil, viewer},
		{"/rest/schedules.json", "POST", "/rest/schedules.json", schedule, js, operator},
		{"/rest/schedules/{name}.json", "GET", "/rest/schedules/roles-nightly.json", "", nil, viewer},
		{"/rest/schedules/{name}.json", "DELETE", "/rest/schedules/roles-nightly.json", "", nil, operator},
		{"/rest/whoami.json", "GET", "/rest/whoami.json", "", nil, viewer},
		{"/rest/tokens.json", "GET", "/rest/tokens.json", "", nil, admin},
		{"/rest/tokens.json", "POST", "/rest/tokens.json", `{"role":"viewer","lifetime":"1h","label":"roles"}`, js, admin},
		{"/rest/tokens/{id}.json", "DELETE", "/rest/tokens/0123456789abcdef.json", "", nil, admin},
		{"/rest/accounts.json", "GET", "/rest/accounts.json", "", nil, admin},
		{"/rest/accounts.json", "POST", "/rest/accounts.json", `{"name":"roles-new","password":"password-1","role":"viewer"}`, js, admin},
		{"/rest/accounts/{name}.json", "GET", "/rest/accounts/roles-none.json", "", nil, admin},
		{"/rest/accounts/{name}.json", "PUT", "/rest/accounts/roles-new.json", `{"role":"operator"}`, js, admin},
		{"/rest/accounts/{name}.json", "DELETE", "/rest/accounts/roles-none.json", "", nil, admin},
		{"/rest/export/{layer}.{json,xml}", "POST", "/rest/export/demo:world.json", `{"exportRequest":{"gridSetId":"EPSG:900913","zoomStart":0,"zoomStop":0,"archive":"pmtiles"}}`, js, operator},
		{"/rest/export/{layer}.{json,xml}", "GET", "/rest/export/demo:world.json", "", nil, operator},
		{"/rest/export/{layer}.{json,xml}", "POST", "/rest/export/demo:world.xml", `<exportRequest><gridSetId>EPSG:900913</gridSetId><zoomStart>0</zoomStart><zoomStop>0</zoomStop><archive>mbtiles</archive></exportRequest>`, xmlType, operator},
		// An archive that is not there: refused after the check (400).
		{"/rest/import/{layer}.json", "POST", "/rest/import/demo:world.json", `{"archive":"s3://none/roles.pmtiles"}`, js, operator},
	}
}

// TestRoleTableCoversEveryRoute: every kind of route has a row in the
// authorization table and a request in the matrix, and every method of
// every route the matrix reaches is in the table with the role the matrix
// expects: a route or method added without a role fails here.
func TestRoleTableCoversEveryRoute(t *testing.T) {
	cases := roleCases()
	covered := map[string]bool{}
	for _, c := range cases {
		p, _, _ := strings.Cut(c.path, "?")
		pattern, methods, ok := rest.RoutedMethods(p)
		if !ok {
			t.Errorf("%s %s: no route, or a route without a row in the table", c.method, c.path)
			continue
		}
		if pattern != c.pattern {
			t.Errorf("%s %s: the table's row is %s, the matrix says %s", c.method, c.path, pattern, c.pattern)
		}
		for m, need := range methods {
			if need == "" {
				t.Errorf("%s %s: the route answers %s, which the table does not list", c.method, c.path, m)
			}
			if !slices.ContainsFunc(cases, func(o roleCase) bool { return o.pattern == c.pattern && o.method == m }) {
				t.Errorf("%s: the route answers %s, which the matrix does not send", c.pattern, m)
			}
		}
		if need, ok := methods[c.method]; !ok {
			t.Errorf("%s %s: the route does not answer %s", c.method, c.path, c.method)
		} else if need != c.need {
			t.Errorf("%s %s: the table needs %s, the matrix %s", c.method, c.path, need, c.need)
		}
		covered[pattern] = true
	}
	for k, pattern := range rest.TablePatterns() {
		if pattern == "" {
			t.Errorf("route kind %d has no row in the authorization table", k)
		} else if !covered[pattern] {
			t.Errorf("%s: in the table, never sent by the matrix", pattern)
		}
	}
}

// TestRoleMatrix sends every request of the matrix as anonymous, as a
// "user" account, and as each role, and checks the status class: 401
// without credentials, 403 naming the role needed and the one held below
// it, anything else at or above it. The refused requests run first, while
// a task runs, and change nothing: the task runs on, no task is added, no
// id consumed, no schedule, the quota, the layers and the grid sets as
// they were.
func TestRoleMatrix(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	accounts := []struct{ name, role string }{
		{"", "anonymous"}, {apptest.NoRoleUser, "user"}, {apptest.ViewerUser, "viewer"},
		{apptest.OperatorUser, "operator"}, {apptest.User, "admin"},
	}
	rank := map[string]int{"viewer": 1, "operator": 2, "admin": 3}
	allowed := func(role, need string) bool { return rank[role] >= rank[need] }
	snapshot := func() map[string]string {
		s := map[string]string{}
		for _, p := range []string{"/rest/diskquota.json", "/rest/schedules.json", "/rest/layers.xml", "/rest/gridsets.xml", "/rest/accounts.json", "/rest/tokens.json"} {
			res := a.Do(t, "GET", p, "")
			if res.Status != http.StatusOK {
				t.Fatalf("GET %s: %d %s", p, res.Status, res.Body)
			}
			s[p] = res.Body
		}
		return s
	}
	before := snapshot()
	running := seedJSON(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8,"threadCount":1}}`)
	defer killAll(t, a)
	cases := roleCases()
	send := func(t *testing.T, user string, c roleCase) apptest.Response {
		return a.DoAuth(t, user, apptest.Password, c.method, c.path, c.body, c.headers...)
	}
	t.Run("refused", func(t *testing.T) {
		for _, acc := range accounts {
			for _, c := range cases {
				if acc.role != "anonymous" && acc.role != "user" && allowed(acc.role, c.need) {
					continue
				}
				res := send(t, acc.name, c)
				switch acc.role {
				case "anonymous":
					wantError(t, res, 401, "Authentication required")
				case "user":
					wantError(t, res, 403, "Account "+acc.name+" has no role: the user role, kept for compatibility, allows no request")
				default:
					wantError(t, res, 403, fmt.Sprintf("This request needs the %s role; account %s has the %s role", c.need, acc.name, acc.role))
				}
				if t.Failed() {
					t.Fatalf("as %s: %s %s", acc.role, c.method, c.path)
				}
			}
		}
	})
	t.Run("nothing changed", func(t *testing.T) {
		after := snapshot()
		for p, b := range before {
			if after[p] != b {
				t.Errorf("GET %s after refused requests:\n%s\nwant\n%s", p, after[p], b)
			}
		}
		rows := list(t, a, "/rest/seed.json")
		if !slices.Equal(ids(rows), ids(running)) {
			t.Errorf("tasks after refused requests: %v, want %v", ids(rows), ids(running))
		}
		for _, r := range rows {
			if r[4] != 0 && r[4] != 1 {
				t.Errorf("task %d after refused kills: status %d, want pending or running", r[3], r[4])
			}
		}
		wantNextID(t, a, slices.Max(ids(running))+1)
	})
	t.Run("allowed", func(t *testing.T) {
		for _, acc := range accounts[2:] {
			for _, c := range cases {
				if !allowed(acc.role, c.need) {
					continue
				}
				res := send(t, acc.name, c)
				if res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden || res.Status >= 500 {
					t.Errorf("as %s: %s %s: got %d %q, want it served", acc.role, c.method, c.path, res.Status, res.Body)
				}
			}
		}
	})
	killAll(t, a)
}

// TestWhoAmI: each role is told its name, its role and what it may do,
// and what every role may do.
func TestWhoAmI(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	type doc struct {
		Name         string   `json:"name"`
		Role         string   `json:"role"`
		Capabilities []string `json:"capabilities"`
		Roles        []struct {
			Role         string   `json:"role"`
			Capabilities []string `json:"capabilities"`
		} `json:"roles"`
	}
	want := map[string][]string{
		"viewer":   {"estimate", "read"},
		"operator": {"estimate", "export", "kill", "read", "schedules", "seed"},
		"admin":    {"accesslog", "accounts", "estimate", "export", "gridsets", "kill", "layers", "masstruncate", "quota", "read", "schedules", "seed", "tokens"},
	}
	for _, acc := range []struct{ name, role string }{{apptest.ViewerUser, "viewer"}, {apptest.OperatorUser, "operator"}, {apptest.User, "admin"}} {
		res := a.DoAuth(t, acc.name, apptest.Password, "GET", "/rest/whoami.json", "")
		wantOK(t, res, ctJSON)
		var d doc
		if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
			t.Fatalf("%s: %v in %s", acc.name, err, res.Body)
		}
		if d.Name != acc.name || d.Role != acc.role || !slices.Equal(d.Capabilities, want[acc.role]) {
			t.Errorf("%s: got %+v, want role %s, capabilities %v", acc.name, d, acc.role, want[acc.role])
		}
		if len(d.Roles) != 3 {
			t.Fatalf("%s: roles %+v", acc.name, d.Roles)
		}
		for _, r := range d.Roles {
			if !slices.Equal(r.Capabilities, want[r.Role]) {
				t.Errorf("%s: role %s may %v, want %v", acc.name, r.Role, r.Capabilities, want[r.Role])
			}
		}
	}
}

// asAdmin serves next as if every request were an administrator's: for
// tests of the handler alone, without accounts.
func asAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), auth.Principal{Name: "admin", Role: auth.Admin})))
	})
}

// TestREADMESecurityTable: the security guide's (docs/security.md) table of routes and roles is the
// authorization table's, row by row.
func TestREADMESecurityTable(t *testing.T) {
	readme, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	cells := map[string][]string{}
	for _, p := range rest.AccessTable() {
		if _, ok := cells[p.Path]; !ok {
			order = append(order, p.Path)
		}
		cells[p.Path] = append(cells[p.Path], p.Method+" "+p.Role.String())
	}
	var want strings.Builder
	for _, path := range order {
		want.WriteString("| `" + path + "` | " + strings.Join(cells[path], ", ") + " |\n")
	}
	if !strings.Contains(string(readme), want.String()) {
		t.Errorf("docs/security.md lacks the table of routes and roles:\n%s", want.String())
	}
}
