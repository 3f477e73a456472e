package rest_test

// The API tokens (issue 51, item 2): issued, used with Bearer, limited to
// layers, listed without secrets and revoked, on both backends; and a
// revocation seen by another process on the same store.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"tilecache/internal/apitoken"
	"tilecache/internal/app/apptest"
)

type issuedToken struct {
	ID      string   `json:"id"`
	Token   string   `json:"token"`
	Role    string   `json:"role"`
	Layers  []string `json:"layers"`
	Creator string   `json:"creator"`
	State   string   `json:"state"`
}

func issueToken(t *testing.T, a *apptest.App, body string) issuedToken {
	t.Helper()
	res := a.Do(t, "POST", "/rest/tokens.json", body, "Content-Type", ctJSON)
	if res.Status != http.StatusCreated {
		t.Fatalf("POST /rest/tokens.json %s: %d %s", body, res.Status, res.Body)
	}
	var tok issuedToken
	if err := json.Unmarshal([]byte(res.Body), &tok); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.Token, tok.ID+".") || res.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("issued %+v, Cache-Control %q: want its bearer value <id>.<secret>, not stored", tok, res.Header.Get("Cache-Control"))
	}
	return tok
}

// bearer sends a request with the token's bearer value.
func bearer(t *testing.T, a *apptest.App, tok issuedToken, method, path, body string, headers ...string) apptest.Response {
	t.Helper()
	return a.DoAuth(t, "", "", method, path, body, append([]string{"Authorization", "Bearer " + tok.Token}, headers...)...)
}

// untilRefused sends GET /rest/seed.json with tok to a until it is
// refused (401), and returns how long that took; it fails the test when
// the token still works after bound.
func untilRefused(t *testing.T, a *apptest.App, tok issuedToken, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		res := bearer(t, a, tok, "GET", "/rest/seed.json", "")
		if res.Status == http.StatusUnauthorized {
			if ch := res.Header.Values("WWW-Authenticate"); len(ch) != 2 || !strings.HasPrefix(ch[1], "Bearer ") {
				t.Errorf("challenges %q; want Basic, then Bearer", ch)
			}
			return time.Since(start)
		}
		if res.Status != http.StatusOK {
			t.Fatalf("revoked token: %d %s", res.Status, res.Body)
		}
		if time.Since(start) > bound {
			t.Fatalf("revoked token still works after %v", bound)
		}
		<-tick.C
	}
}

func TestAPITokens(t *testing.T) {
	a := apptest.Start(t, apptest.Options{})
	t.Run("bad requests", func(t *testing.T) {
		for _, c := range []struct{ body, want string }{
			{`{"role":"root"}`, "Field role must be viewer, operator or admin"},
			{`{"role":"viewer","layers":["no:such"]}`, "Unknown layer"},
			{`{"role":"viewer","layers":[]}`, "Field layers is empty"},
			{`{"role":"viewer","lifetime":"1s"}`, "lifetime must be between"},
			{`{"role":"viewer","lifetime":"9000h"}`, "lifetime must be between"},
			{`{"role":"viewer","lifetime":"soon"}`, "Field lifetime must be a duration"},
			{`{"role":"viewer","colour":"red"}`, "unknown field"},
		} {
			wantBadRequest(t, a.Do(t, "POST", "/rest/tokens.json", c.body, "Content-Type", ctJSON), c.want)
		}
	})
	viewer := issueToken(t, a, `{"role":"viewer","lifetime":"1h","label":"watch"}`)
	op := issueToken(t, a, `{"role":"operator","layers":["demo:world"],"lifetime":"1h","label":"pipeline"}`)
	if viewer.Role != "viewer" || viewer.Creator != apptest.User || op.Role != "operator" || len(op.Layers) != 1 || op.State != "active" {
		t.Fatalf("issued %+v and %+v", viewer, op)
	}
	t.Run("viewer token", func(t *testing.T) {
		if res := bearer(t, a, viewer, "GET", "/rest/seed.json", ""); res.Status != 200 {
			t.Errorf("GET /rest/seed.json: %d %s", res.Status, res.Body)
		}
		wantError(t, bearer(t, a, viewer, "POST", "/rest/seed/demo:world.json", seedBodyJSON),
			403, "This request needs the operator role; token "+viewer.ID+" of account "+apptest.User+" has the viewer role")
		wantError(t, bearer(t, a, viewer, "GET", "/rest/tokens.json", ""),
			403, "This request needs the admin role; token "+viewer.ID+" of account "+apptest.User+" has the viewer role")
	})
	t.Run("layer-limited operator token", func(t *testing.T) {
		limited := "; token " + op.ID + " of account " + apptest.User + " is limited to layers demo:world"
		if res := bearer(t, a, op, "POST", "/rest/estimate/demo:world.json", seedBodyJSON, "Content-Type", ctJSON); res.Status != 200 {
			t.Errorf("estimate of its layer: %d %s", res.Status, res.Body)
		}
		if res := bearer(t, a, op, "GET", "/rest/seed.json", ""); res.Status != 200 {
			t.Errorf("GET /rest/seed.json (a read of every layer): %d %s", res.Status, res.Body)
		}
		wantError(t, bearer(t, a, op, "POST", "/rest/estimate/topp:states.json", seedBodyJSON, "Content-Type", ctJSON),
			403, "This request concerns layer topp:states"+limited)
		wantError(t, bearer(t, a, op, "POST", "/rest/seed/topp:states.json", seedBodyJSON),
			403, "This request concerns layer topp:states"+limited)
		wantError(t, bearer(t, a, op, "POST", "/rest/seed/topp:states", "kill_all=all", "Content-Type", ctForm),
			403, "This request concerns layer topp:states"+limited)
		wantError(t, bearer(t, a, op, "POST", "/rest/seed", "kill_all=all", "Content-Type", ctForm),
			403, "This request concerns every layer"+limited)
		rows := seedJSONBearer(t, a, op)
		if len(rows) == 0 {
			t.Errorf("seed of its layer: no task")
		}
		killAll(t, a)
	})
	t.Run("listed without secrets", func(t *testing.T) {
		res := a.Do(t, "GET", "/rest/tokens.json", "")
		wantOK(t, res, ctJSON)
		if strings.Contains(res.Body, viewer.Token) || strings.Contains(res.Body, op.Token) || strings.Contains(res.Body, `"token"`) {
			t.Errorf("listing shows a secret: %s", res.Body)
		}
		for _, id := range []string{viewer.ID, op.ID} {
			if !strings.Contains(res.Body, `"id":"`+id+`"`) {
				t.Errorf("listing lacks %s: %s", id, res.Body)
			}
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		wrong := viewer
		wrong.Token = viewer.ID + ".not-the-secret"
		if res := bearer(t, a, wrong, "GET", "/rest/seed.json", ""); res.Status != 401 {
			t.Errorf("wrong secret: %d %s", res.Status, res.Body)
		}
	})
	t.Run("revoked", func(t *testing.T) {
		if res := a.Do(t, "DELETE", "/rest/tokens/"+viewer.ID+".json", ""); res.Status != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", res.Status, res.Body)
		}
		if res := a.Do(t, "DELETE", "/rest/tokens/0123456789abcdef.json", ""); res.Status != http.StatusNotFound {
			t.Errorf("DELETE of an unknown token: %d %s", res.Status, res.Body)
		}
		d := untilRefused(t, a, viewer, apitoken.CacheFor+time.Second)
		t.Logf("revocation seen by the same process after %v", d.Round(time.Millisecond))
		if res := bearer(t, a, op, "GET", "/rest/seed.json", ""); res.Status != 200 {
			t.Errorf("another token after a revocation: %d %s", res.Status, res.Body)
		}
		if !strings.Contains(a.Do(t, "GET", "/rest/tokens.json", "").Body, `"state":"revoked"`) {
			t.Errorf("listing does not show the revocation")
		}
	})
}

func seedJSONBearer(t *testing.T, a *apptest.App, tok issuedToken) []json.RawMessage {
	t.Helper()
	res := bearer(t, a, tok, "POST", "/rest/seed/demo:world.json", seedBodyJSON)
	if res.Status != 200 {
		t.Fatalf("seed of its layer: %d %s", res.Status, res.Body)
	}
	rows := a.Do(t, "GET", "/rest/seed/demo:world.json", "")
	var doc struct {
		Tasks []json.RawMessage `json:"long-array-array"`
	}
	_ = json.Unmarshal([]byte(rows.Body), &doc)
	return doc.Tasks
}

// TestAPITokenRevokedAcrossProcesses: two programs on one DynamoDB table
// (the AWS backend: bbolt admits one process); a token revoked through
// one is refused by the other within apitoken.CacheFor.
func TestAPITokenRevokedAcrossProcesses(t *testing.T) {
	a := apptest.Start(t, apptest.Options{Backend: "aws"})
	b := apptest.Start(t, apptest.Options{Backend: "aws", DataDir: a.DataDir})
	tok := issueToken(t, a, `{"role":"viewer","lifetime":"1h"}`)
	for range 3 { // b reads the token and remembers it
		if res := bearer(t, b, tok, "GET", "/rest/seed.json", ""); res.Status != 200 {
			t.Fatalf("token issued by a, used on b: %d %s", res.Status, res.Body)
		}
	}
	if res := a.Do(t, "DELETE", "/rest/tokens/"+tok.ID+".json", ""); res.Status != http.StatusNoContent {
		t.Fatalf("DELETE on a: %d %s", res.Status, res.Body)
	}
	d := untilRefused(t, b, tok, apitoken.CacheFor+time.Second)
	t.Logf("revocation through a seen by b after %v (bound %v)", d.Round(time.Millisecond), apitoken.CacheFor)
}
