package auth_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"tilecache/internal/auth"
)

// principalOf authenticates name and password against a and returns the
// status and, when next ran, the request's Principal.
func principalOf(t *testing.T, a *auth.Authenticator, name, password string) (int, auth.Principal, bool) {
	t.Helper()
	var p auth.Principal
	var ok bool
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/rest/seed.json", nil)
	req.SetBasicAuth(name, password)
	a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok = auth.PrincipalOf(r.Context())
		if u, _ := auth.User(r.Context()); u != p.Name {
			t.Errorf("User: got %q, want %q", u, p.Name)
		}
	})).ServeHTTP(rec, req)
	return rec.Code, p, ok
}

// TestRolesFromTheAccountsFile: the third field gives the role, none
// given is an administrator (a file written before roles keeps working),
// "user" authenticates and is refused everything.
func TestRolesFromTheAccountsFile(t *testing.T) {
	h := string(MustHash(t, "pw"))
	a, err := auth.Parse(strings.NewReader("old:"+h+"\nv:"+h+":viewer\no:"+h+":operator\nad:"+h+":admin\nu:"+h+":user\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		status int
		role   auth.Role
	}{
		{"old", 200, auth.Admin}, {"v", 200, auth.Viewer}, {"o", 200, auth.Operator}, {"ad", 200, auth.Admin}, {"u", 403, auth.RoleNone},
	} {
		status, p, ok := principalOf(t, a, tt.name, "pw")
		if status != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, status, tt.status)
		}
		if tt.status == 200 && (!ok || p.Name != tt.name || p.Role != tt.role || p.TokenID != "" || p.Layers != nil) {
			t.Errorf("%s: principal %+v (%v), want role %s", tt.name, p, ok, tt.role)
		}
	}
}

func TestRoleOrderAndWords(t *testing.T) {
	for _, w := range []string{"viewer", "operator", "admin"} {
		r, err := auth.ParseRole(w)
		if err != nil || r.String() != w {
			t.Errorf("ParseRole(%q) = %v, %v", w, r, err)
		}
	}
	if r, err := auth.ParseRole("user"); err != nil || r != auth.RoleNone {
		t.Errorf("ParseRole(user) = %v, %v; want none", r, err)
	}
	if _, err := auth.ParseRole("Admin"); err == nil {
		t.Error("ParseRole(Admin): no error")
	}
	allows := func(r, need auth.Role) bool { return r.Allows(need) }
	for _, tt := range []struct {
		r, need auth.Role
		want    bool
	}{
		{auth.Viewer, auth.Viewer, true}, {auth.Viewer, auth.Operator, false}, {auth.Operator, auth.Viewer, true},
		{auth.Operator, auth.Admin, false}, {auth.Admin, auth.Admin, true}, {auth.RoleNone, auth.RoleNone, false},
		{auth.RoleNone, auth.Viewer, false},
	} {
		if got := allows(tt.r, tt.need); got != tt.want {
			t.Errorf("%s allows %s: %v, want %v", tt.r, tt.need, got, tt.want)
		}
	}
}

// TestRequire: a role below the need is a 403 naming both, and next does
// not run.
func TestRequire(t *testing.T) {
	h := MustHash(t, "pw")
	a := auth.New([]auth.Account{{Name: "ann", Hash: h, Role: auth.Viewer}, {Name: "oz", Hash: h, Role: auth.Operator}})
	ran := 0
	srv := a.Middleware(auth.Require(auth.Operator, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ })))
	for _, tt := range []struct {
		name   string
		status int
		body   string
	}{
		{"ann", 403, "This request needs the operator role; account ann has the viewer role\n"},
		{"oz", 200, ""},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.SetBasicAuth(tt.name, "pw")
		srv.ServeHTTP(rec, req)
		if rec.Code != tt.status || rec.Body.String() != tt.body {
			t.Errorf("%s: got %d %q, want %d %q", tt.name, rec.Code, rec.Body.String(), tt.status, tt.body)
		}
		if tt.status == 403 && rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", tt.name, rec.Header().Get("Content-Type"))
		}
	}
	if ran != 1 {
		t.Errorf("next ran %d times, want 1", ran)
	}
	// Without the middleware in front there is no principal: refused.
	rec := httptest.NewRecorder()
	auth.Require(auth.Viewer, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran++ })).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != 403 || ran != 1 {
		t.Errorf("no principal: got %d, ran %d", rec.Code, ran)
	}
}

func TestAddAccountRole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	if err := auth.AddAccountRole(path, "ann", "pw", "viewer", bcrypt.MinCost); err != nil {
		t.Fatal(err)
	}
	if err := auth.AddAccount(path, "bob", "pw", bcrypt.MinCost); err != nil {
		t.Fatal(err)
	}
	if err := auth.AddAccountRole(path, "ann", "pw2", "", bcrypt.MinCost); err != nil { // keeps viewer
		t.Fatal(err)
	}
	if err := auth.AddAccountRole(path, "bob", "pw", "operator", bcrypt.MinCost); err != nil {
		t.Fatal(err)
	}
	if err := auth.AddAccountRole(path, "cy", "pw", "root", bcrypt.MinCost); err == nil || !strings.Contains(err.Error(), `unknown role "root"`) {
		t.Errorf("role root: %v", err)
	}
	a, err := auth.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, p, _ := principalOf(t, a, "ann", "pw2"); p.Role != auth.Viewer {
		t.Errorf("ann: %+v, want viewer", p)
	}
	if _, p, _ := principalOf(t, a, "bob", "pw"); p.Role != auth.Operator {
		t.Errorf("bob: %+v, want operator", p)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains("\n"+string(b), "\ncy:") { // a line of its own: a hash may hold "cy"
		t.Errorf("refused account written: %s", b)
	}
}
