package rest_test

// The accounts added at run time (issue 51, item 2): added, listed
// without hashes, changed and removed through REST by an administrator,
// used at once with their role, on both backends; a change seen by
// another process on the same store within auth.StoredFor.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/auth"
)

type accountDoc struct {
	Name    string    `json:"name"`
	Role    string    `json:"role"`
	Source  string    `json:"source"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	By      string    `json:"by"`
}

func addAccount(t *testing.T, a *apptest.App, user, password, name, pw, role string) accountDoc {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name, "password": pw, "role": role})
	res := a.DoAuth(t, user, password, "POST", "/rest/accounts.json", string(body), "Content-Type", ctJSON)
	if res.Status != http.StatusCreated {
		t.Fatalf("POST /rest/accounts.json %s: %d %s", body, res.Status, res.Body)
	}
	var d accountDoc
	if err := json.Unmarshal([]byte(res.Body), &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != name || d.Role != role || d.Source != "stored" || d.By != user || d.Created.IsZero() ||
		res.Header.Get("Location") != "/rest/accounts/"+name+".json" || strings.Contains(res.Body, "$2") {
		t.Fatalf("created %s, Location %q", res.Body, res.Header.Get("Location"))
	}
	return d
}

// until sends GET /rest/seed.json as user/password until it answers
// want, and returns how long that took; it fails the test after bound.
func until(t *testing.T, a *apptest.App, user, password string, want int, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		res := a.DoAuth(t, user, password, "GET", "/rest/seed.json", "")
		if res.Status == want {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("%s: GET /rest/seed.json answers %d %q after %v, want %d", user, res.Status, res.Body, bound, want)
		}
		<-tick.C
	}
}

func TestAccountsAtRunTime(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	const pw = "carol's passphrase"
	t.Run("bad requests", func(t *testing.T) {
		for _, c := range []struct{ body, want string }{
			{`{"name":"a:b","password":"password-1","role":"viewer"}`, "contains ':'"},
			{`{"name":"a b","password":"password-1","role":"viewer"}`, "contains whitespace"},
			{`{"name":"","password":"password-1","role":"viewer"}`, "empty account name"},
			{`{"name":"` + strings.Repeat("n", 129) + `","password":"password-1","role":"viewer"}`, "at most 128 bytes"},
			{`{"name":"carol","password":"short","role":"viewer"}`, "at least 8 bytes"},
			{`{"name":"carol","password":"` + strings.Repeat("p", 73) + `","role":"viewer"}`, "at most 72 bytes"},
			{`{"name":"carol","role":"viewer"}`, "Field password is missing"},
			{`{"name":"carol","password":"password-1","role":"root"}`, "Field role must be viewer, operator or admin"},
			{`{"name":"carol","password":"password-1","role":"user"}`, "Field role must be viewer, operator or admin"},
			{`{"name":"carol","password":"password-1","role":"viewer","colour":"red"}`, "unknown field"},
			{`[]`, "An account is a JSON object"},
		} {
			wantBadRequest(t, a.Do(t, "POST", "/rest/accounts.json", c.body, "Content-Type", ctJSON), c.want)
		}
		if res := a.Do(t, "POST", "/rest/accounts.json", `{}`, "Content-Type", "text/plain"); res.Status != http.StatusUnsupportedMediaType {
			t.Errorf("text/plain body: %d %s", res.Status, res.Body)
		}
		wantError(t, a.Do(t, "POST", "/rest/accounts.json", `{"name":"`+apptest.User+`","password":"password-1","role":"viewer"}`, "Content-Type", ctJSON),
			409, "Account "+apptest.User+" is configured (the accounts file or secret): change it there")
	})
	carol := addAccount(t, a, apptest.User, apptest.Password, "carol", pw, "viewer")
	t.Run("duplicate", func(t *testing.T) {
		res := a.Do(t, "POST", "/rest/accounts.json", `{"name":"carol","password":"password-1","role":"admin"}`, "Content-Type", ctJSON)
		wantError(t, res, 409, "Account carol exists")
	})
	t.Run("logs in with its role", func(t *testing.T) {
		until(t, a, "carol", pw, 200, 0)
		wantError(t, a.DoAuth(t, "carol", pw, "POST", "/rest/seed/demo:world.json", seedBodyJSON),
			403, "This request needs the operator role; account carol has the viewer role")
		wantError(t, a.DoAuth(t, "carol", pw, "GET", "/rest/accounts.json", ""),
			403, "This request needs the admin role; account carol has the viewer role")
		if res := a.DoAuth(t, "carol", "wrong password", "GET", "/rest/seed.json", ""); res.Status != 401 {
			t.Errorf("wrong password: %d %s", res.Status, res.Body)
		}
	})
	t.Run("listed without hashes", func(t *testing.T) {
		res := a.Do(t, "GET", "/rest/accounts.json", "")
		wantOK(t, res, ctJSON)
		var doc struct{ Accounts []accountDoc }
		if err := json.Unmarshal([]byte(res.Body), &doc); err != nil {
			t.Fatal(err)
		}
		sources := map[string]string{}
		for _, d := range doc.Accounts {
			sources[d.Name] = d.Source + " " + d.Role
		}
		for name, want := range map[string]string{apptest.User: "configured admin", apptest.ViewerUser: "configured viewer", apptest.NoRoleUser: "configured user", "carol": "stored viewer"} {
			if sources[name] != want {
				t.Errorf("%s: %q, want %q in %s", name, sources[name], want, res.Body)
			}
		}
		if strings.Contains(res.Body, "$2") || strings.Contains(res.Body, "hash") {
			t.Errorf("listing shows a hash: %s", res.Body)
		}
		got := a.Do(t, "GET", "/rest/accounts/carol.json", "")
		wantOK(t, got, ctJSON)
		var d accountDoc
		if json.Unmarshal([]byte(got.Body), &d); d.Name != "carol" || !d.Created.Equal(carol.Created) {
			t.Errorf("GET carol: %s", got.Body)
		}
		if res := a.Do(t, "GET", "/rest/accounts/nobody.json", ""); res.Status != 404 {
			t.Errorf("GET nobody: %d %s", res.Status, res.Body)
		}
	})
	t.Run("role raised", func(t *testing.T) {
		res := a.Do(t, "PUT", "/rest/accounts/carol.json", `{"role":"operator"}`, "Content-Type", ctJSON)
		wantOK(t, res, ctJSON)
		d := time.Now()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for a.DoAuth(t, "carol", pw, "POST", "/rest/estimate/demo:world.json", seedBodyJSON, "Content-Type", ctJSON).Status != 200 ||
			a.DoAuth(t, "carol", pw, "POST", "/rest/seed/demo:world", "kill_all=all", "Content-Type", ctForm).Status != 200 {
			if time.Since(d) > auth.StoredFor+time.Second {
				t.Fatalf("carol is not an operator %v after the change", auth.StoredFor+time.Second)
			}
			<-tick.C
		}
		t.Logf("new role in effect after %v", time.Since(d).Round(time.Millisecond))
	})
	t.Run("password changed", func(t *testing.T) {
		const pw2 = "carol's new passphrase"
		wantOK(t, a.Do(t, "PUT", "/rest/accounts/carol.json", `{"password":"`+pw2+`"}`, "Content-Type", ctJSON), ctJSON)
		d := until(t, a, "carol", pw, 401, auth.StoredFor+time.Second)
		until(t, a, "carol", pw2, 200, 0)
		t.Logf("old password refused after %v", d.Round(time.Millisecond))
		wantBadRequest(t, a.Do(t, "PUT", "/rest/accounts/carol.json", `{"password":"short"}`, "Content-Type", ctJSON), "at least 8 bytes")
		wantBadRequest(t, a.Do(t, "PUT", "/rest/accounts/carol.json", `{}`, "Content-Type", ctJSON), "Nothing to change")
		wantBadRequest(t, a.Do(t, "PUT", "/rest/accounts/carol.json", `{"name":"dora","role":"viewer"}`, "Content-Type", ctJSON), "cannot be renamed")
		if res := a.Do(t, "PUT", "/rest/accounts/nobody.json", `{"role":"viewer"}`, "Content-Type", ctJSON); res.Status != 404 {
			t.Errorf("PUT nobody: %d %s", res.Status, res.Body)
		}
	})
	t.Run("configured accounts are read-only", func(t *testing.T) {
		for _, r := range []struct{ method, body string }{{"PUT", `{"role":"viewer"}`}, {"DELETE", ""}} {
			wantError(t, a.Do(t, r.method, "/rest/accounts/"+apptest.ViewerUser+".json", r.body, "Content-Type", ctJSON),
				409, "Account "+apptest.ViewerUser+" is configured (the accounts file or secret): change it there")
		}
	})
	t.Run("a stored admin", func(t *testing.T) {
		const dpw = "dora's passphrase"
		addAccount(t, a, apptest.User, apptest.Password, "dora", dpw, "admin")
		until(t, a, "dora", dpw, 200, 0)
		// dora cannot lock herself out, but may change her password.
		wantError(t, a.DoAuth(t, "dora", dpw, "DELETE", "/rest/accounts/dora.json", ""),
			409, "You cannot remove your own account dora: another administrator can")
		wantError(t, a.DoAuth(t, "dora", dpw, "PUT", "/rest/accounts/dora.json", `{"role":"viewer"}`, "Content-Type", ctJSON),
			409, "You cannot change the role of your own account dora: another administrator can")
		// Her tokens: an operator's and a viewer's.
		res := a.DoAuth(t, "dora", dpw, "POST", "/rest/tokens.json", `{"role":"operator","lifetime":"1h"}`, "Content-Type", ctJSON)
		var op, view issuedToken
		if res.Status != 201 || json.Unmarshal([]byte(res.Body), &op) != nil {
			t.Fatalf("dora's token: %d %s", res.Status, res.Body)
		}
		res = a.DoAuth(t, "dora", dpw, "POST", "/rest/tokens.json", `{"role":"viewer","lifetime":"1h"}`, "Content-Type", ctJSON)
		if res.Status != 201 || json.Unmarshal([]byte(res.Body), &view) != nil {
			t.Fatalf("dora's token: %d %s", res.Status, res.Body)
		}
		// dora made a viewer: her operator token is revoked, her viewer
		// token stays.
		wantOK(t, a.Do(t, "PUT", "/rest/accounts/dora.json", `{"role":"viewer"}`, "Content-Type", ctJSON), ctJSON)
		untilRefused(t, a, op, 2*time.Second+time.Second)
		if res := bearer(t, a, view, "GET", "/rest/seed.json", ""); res.Status != 200 {
			t.Errorf("dora's viewer token after her role was lowered: %d %s", res.Status, res.Body)
		}
		// dora removed: her login and her remaining token stop working.
		if res := a.Do(t, "DELETE", "/rest/accounts/dora.json", ""); res.Status != http.StatusNoContent {
			t.Fatalf("DELETE dora: %d %s", res.Status, res.Body)
		}
		d := until(t, a, "dora", dpw, 401, auth.StoredFor+time.Second)
		untilRefused(t, a, view, 2*time.Second+time.Second)
		t.Logf("removed account refused after %v", d.Round(time.Millisecond))
		if res := a.Do(t, "DELETE", "/rest/accounts/dora.json", ""); res.Status != 404 {
			t.Errorf("second DELETE dora: %d %s", res.Status, res.Body)
		}
		// The name is free again.
		addAccount(t, a, apptest.User, apptest.Password, "dora", "dora's third passphrase", "viewer")
	})
}

// TestAccountChangedAcrossProcesses: two programs on one DynamoDB table;
// an account added through one logs in on the other, and once removed
// through the first is refused by the other within auth.StoredFor.
func TestAccountChangedAcrossProcesses(t *testing.T) {
	a := apptest.Start(t, apptest.Options{Backend: "aws"})
	b := apptest.Start(t, apptest.Options{Backend: "aws", DataDir: a.DataDir})
	const pw = "erin's passphrase"
	addAccount(t, a, apptest.User, apptest.Password, "erin", pw, "viewer")
	until(t, b, "erin", pw, 200, auth.StoredFor+time.Second)
	if res := a.Do(t, "DELETE", "/rest/accounts/erin.json", ""); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE on a: %d %s", res.Status, res.Body)
	}
	d := until(t, b, "erin", pw, 401, auth.StoredFor+time.Second)
	t.Logf("removal through a seen by b after %v (bound %v)", d.Round(time.Millisecond), auth.StoredFor)
}
