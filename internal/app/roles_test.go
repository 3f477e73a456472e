package app_test

import (
	"net/http"
	"strings"
	"testing"

	"tilecache/internal/app/apptest"
	"tilecache/internal/tileserve"
)

// TestRolesOutsideTheRESTInterface: the console's pages, /metrics and a
// stored-only tile read are a viewer's (any role's); an account of the
// "user" role is refused them (403) and an anonymous client is
// challenged (401), while a plain tile read stays anonymous.
func TestRolesOutsideTheRESTInterface(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "who may read the console, /metrics and stored-only tiles (the same handlers on every backend)")
	a := apptest.Start(t, apptest.Options{})
	const tile = "/tiles/demo:world/EPSG:4326/png/0/0/0.png"
	for _, c := range []struct {
		user string
		want int
	}{
		{apptest.ViewerUser, 0}, {apptest.OperatorUser, 0}, {apptest.User, 0},
		{apptest.NoRoleUser, http.StatusForbidden}, {"", http.StatusUnauthorized},
	} {
		for _, r := range []struct {
			path    string
			headers []string
		}{
			{"/console/", nil},
			{"/metrics", nil},
			{tile, []string{tileserve.StoredOnlyHeader, "1"}},
		} {
			res := a.DoAuth(t, c.user, apptest.Password, "GET", r.path, "", r.headers...)
			switch {
			case c.want == 0 && (res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden):
				t.Errorf("%q: GET %s %v: %d %q, want it served", c.user, r.path, r.headers, res.Status, res.Body)
			case c.want != 0 && res.Status != c.want:
				t.Errorf("%q: GET %s %v: %d %q, want %d", c.user, r.path, r.headers, res.Status, res.Body, c.want)
			case c.want == http.StatusForbidden && !strings.Contains(res.Body, "has no role"):
				t.Errorf("%q: GET %s: body %q, want it to say the account has no role", c.user, r.path, res.Body)
			}
		}
	}
	if res := a.DoAuth(t, "", "", "GET", tile, ""); res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden {
		t.Errorf("anonymous plain tile read: %d %q, want it answered", res.Status, res.Body)
	}
}
