package app_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/app/apptest"
	"tilecache/internal/browsertest"
	"tilecache/internal/testenv"
)

// specAccounts answers /rest/accounts.json and /rest/accounts/{name}.json
// as the accounts interface is specified (GET lists, POST adds, PUT
// changes a password or role, DELETE removes; 409 for a configured
// account, an existing name or the caller's own role or account; 400
// naming a bad field; 404 for an unknown name), in memory: the console's
// page is tested against it until the interface is served by the
// program itself.
type specAccounts struct {
	mu       sync.Mutex
	accounts map[string]*specAccount
	posts    int
}

type specAccount struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Source   string `json:"source"`
	Created  string `json:"created,omitempty"`
	Updated  string `json:"updated,omitempty"`
	By       string `json:"by,omitempty"`
	password string
}

var specName = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

func (s *specAccounts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	caller, _, _ := r.BasicAuth()
	fail := func(status int, msg string) { http.Error(w, msg, status) }
	answer := func(status int, a *specAccount) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(a)
	}
	validRole := func(role string) bool { return role == "viewer" || role == "operator" || role == "admin" }
	now := time.Now().UTC().Format(time.RFC3339)
	if r.URL.Path == "/rest/accounts.json" {
		switch r.Method {
		case http.MethodGet:
			out := struct {
				Accounts []*specAccount `json:"accounts"`
			}{Accounts: []*specAccount{}}
			for _, a := range s.accounts {
				out.Accounts = append(out.Accounts, a)
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(out)
		case http.MethodPost:
			s.posts++
			var b struct{ Name, Password, Role string }
			if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
				fail(http.StatusBadRequest, "An account is a JSON object {\"name\", \"password\", \"role\"}: "+err.Error())
				return
			}
			switch {
			case !specName.MatchString(b.Name):
				fail(http.StatusBadRequest, fmt.Sprintf("Field name %q: 1 to 64 of A-Z a-z 0-9 . _ @ -", b.Name))
			case len(b.Password) < 8:
				fail(http.StatusBadRequest, "Field password: at least 8 characters")
			case !validRole(b.Role):
				fail(http.StatusBadRequest, fmt.Sprintf("Field role must be viewer, operator or admin, not %q", b.Role))
			case s.accounts[b.Name] != nil:
				fail(http.StatusConflict, fmt.Sprintf("Account %s exists", b.Name))
			default:
				a := &specAccount{Name: b.Name, Role: b.Role, Source: "stored", Created: now, Updated: now, By: caller, password: b.Password}
				s.accounts[b.Name] = a
				answer(http.StatusCreated, a)
			}
		default:
			fail(http.StatusMethodNotAllowed, "Method not allowed")
		}
		return
	}
	name, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(r.URL.EscapedPath(), "/rest/accounts/"), ".json"))
	a := s.accounts[name]
	if a == nil {
		fail(http.StatusNotFound, fmt.Sprintf("No account named %s", name))
		return
	}
	if a.Source == "configured" {
		fail(http.StatusConflict, fmt.Sprintf("Account %s is configured in the accounts file: change it there", name))
		return
	}
	switch r.Method {
	case http.MethodPut:
		var b struct {
			Password *string
			Role     *string
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			fail(http.StatusBadRequest, "A change is a JSON object {\"password\", \"role\"}: "+err.Error())
			return
		}
		switch {
		case b.Role != nil && name == caller && *b.Role != a.Role:
			fail(http.StatusConflict, "You cannot change your own role")
		case b.Role != nil && !validRole(*b.Role):
			fail(http.StatusBadRequest, fmt.Sprintf("Field role must be viewer, operator or admin, not %q", *b.Role))
		case b.Password != nil && len(*b.Password) < 8:
			fail(http.StatusBadRequest, "Field password: at least 8 characters")
		default:
			if b.Role != nil {
				a.Role = *b.Role
			}
			if b.Password != nil {
				a.password = *b.Password
			}
			a.Updated, a.By = now, caller
			answer(http.StatusOK, a)
		}
	case http.MethodDelete:
		if name == caller {
			fail(http.StatusConflict, "You cannot remove your own account")
			return
		}
		delete(s.accounts, name)
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(http.StatusMethodNotAllowed, "Method not allowed")
	}
}

func (s *specAccounts) get(name string) (specAccount, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[name]
	if a == nil {
		return specAccount{}, false
	}
	return *a, true
}

// TestConsoleAccounts drives the accounts page: configured accounts are
// shown read-only with a note; an account is added (a mistyped second
// password is caught on the page, sending nothing), its role changed, a
// new password set, and it is removed after a confirmation (Cancel
// removes nothing); the server's own message is shown when it refuses
// (an existing name, a bad name). The accounts interface is the one
// specified (specAccounts) in front of a real server serving the rest.
func TestConsoleAccounts(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	testenv.RequireChromium(t)
	a := apptest.Start(t, apptest.Options{})
	spec := &specAccounts{accounts: map[string]*specAccount{
		apptest.User: {Name: apptest.User, Role: "admin", Source: "configured"},
		"ann":        {Name: "ann", Role: "viewer", Source: "stored", Created: "2026-12-02T03:00:00Z", Updated: "2026-12-02T03:00:00Z", By: apptest.User, password: "ann's password"},
	}}
	target, _ := url.Parse(a.URL)
	mux := http.NewServeMux()
	mux.Handle("/rest/accounts.json", spec)
	mux.Handle("/rest/accounts/", spec)
	mux.Handle("/", httputil.NewSingleHostReverseProxy(target))
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(apptest.User+":"+apptest.Password))
	page := browsertest.OpenWithHeaders(t, front.URL+"/console/#accounts", 120*time.Second, map[string]string{"Authorization": auth})
	page.WaitFor(t, `body[data-ready="1"]`)
	waitEval(t, page, `document.querySelector('#accounts-table tr[data-account="ann"]')`, 10*time.Second)

	rows := func() map[string][]string {
		var rs [][]string
		evalJSON(t, page, `Array.from(document.querySelectorAll('#accounts-table tbody tr[data-account]')).map(tr => [tr.dataset.account, tr.querySelector('.role').textContent, tr.cells[2].textContent, String(tr.querySelectorAll('button').length)])`, &rs)
		out := map[string][]string{}
		for _, r := range rs {
			out[r[0]] = r[1:]
		}
		return out
	}
	got := rows()
	if fmt.Sprint(got[apptest.User]) != "[admin configured 0]" || fmt.Sprint(got["ann"]) != "[viewer added here 3]" {
		t.Errorf("rows %q: want admin configured without a button, ann added here with 3", got)
	}
	if note := page.Eval(t, `document.getElementById('accounts-list').textContent`); !strings.Contains(note, "configured in the accounts file") {
		t.Errorf("no note on the configured account: %q", note)
	}

	// Add: the passwords typed twice must agree (nothing is sent).
	add := func(name, role, p1, p2 string) string {
		t.Helper()
		page.Eval(t, `(document.getElementById('account-result').textContent = '', '')`)
		setValue(t, page, `#account-name`, name)
		setValue(t, page, `#account-role`, role)
		setValue(t, page, `#account-password`, p1)
		setValue(t, page, `#account-password2`, p2)
		page.Do(t, "add "+name, chromedp.Click(chromedp.CSS(`#account-add`)))
		waitEval(t, page, `document.getElementById('account-result').textContent !== ''`, 10*time.Second)
		return page.Eval(t, `document.getElementById('account-result').textContent`)
	}
	if msg := add("bob", "operator", "bob's password", "bobs password"); !strings.Contains(msg, "The two passwords differ") || spec.posts != 0 {
		t.Errorf("mistyped password: %q, %d requests sent", msg, spec.posts)
	}
	if msg := add("bob", "operator", "bob's password", "bob's password"); !strings.Contains(msg, "Account bob added (operator)") {
		t.Errorf("add bob: %q", msg)
	}
	waitEval(t, page, `document.querySelector('#accounts-table tr[data-account="bob"]')`, 10*time.Second)
	if b, ok := spec.get("bob"); !ok || b.Role != "operator" || b.password != "bob's password" || b.By != apptest.User {
		t.Errorf("bob as the server has it: %+v", b)
	}
	// The server's refusals, in its words.
	if msg := add("bob", "viewer", "another password", "another password"); !strings.Contains(msg, "Not added: Account bob exists") {
		t.Errorf("an existing name: %q", msg)
	}
	if msg := add("bad name!", "viewer", "another password", "another password"); !strings.Contains(msg, `Field name "bad name!": 1 to 64 of`) {
		t.Errorf("a bad name: %q", msg)
	}

	// Change bob's role.
	page.Eval(t, `(s => { s.value = 'viewer'; return ''; })(document.querySelector('select[aria-label="Role of bob"]'))`)
	page.Do(t, "change bob's role", chromedp.Click(chromedp.CSS(`button[aria-label="Change the role of bob"]`)))
	waitEval(t, page, `document.querySelector('#accounts-table tr[data-account="bob"] .role').textContent === 'viewer'`, 10*time.Second)
	if b, _ := spec.get("bob"); b.Role != "viewer" {
		t.Errorf("bob's role on the server: %s, want viewer", b.Role)
	}
	// A new password, typed twice.
	page.Do(t, "new password for bob", chromedp.Click(chromedp.CSS(`button[aria-label="Set a new password for bob"]`)))
	waitEval(t, page, `document.querySelector('tr[data-password-for="bob"]')`, 5*time.Second)
	setValue(t, page, `input[aria-label="New password for bob"]`, "bob's new password")
	setValue(t, page, `input[aria-label="New password for bob, again"]`, "bob's new password")
	page.Do(t, "set it", chromedp.Click(chromedp.CSS(`tr[data-password-for="bob"] button[type=submit]`)))
	waitEval(t, page, `!document.querySelector('tr[data-password-for="bob"]')`, 10*time.Second)
	if b, _ := spec.get("bob"); b.password != "bob's new password" {
		t.Errorf("bob's password on the server: %q", b.password)
	}
	if s := page.Eval(t, `document.getElementById('status').textContent`); !strings.Contains(s, "password of bob is changed") {
		t.Errorf("status after the new password: %q", s)
	}

	// Remove bob: Cancel first, then confirm.
	page.Do(t, "remove bob, then cancel", chromedp.Click(chromedp.CSS(`button[aria-label="Remove bob"]`)))
	waitEval(t, page, `document.querySelector('dialog[open] #confirm-no')`, 5*time.Second)
	if text := page.Eval(t, `document.querySelector('dialog[open]').textContent`); !strings.Contains(text, "every API token it issued is revoked") {
		t.Errorf("the confirmation %q does not say the tokens are revoked", text)
	}
	page.Do(t, "cancel", chromedp.Click(chromedp.CSS(`dialog[open] #confirm-no`)))
	waitEval(t, page, `!document.querySelector('dialog')`, 5*time.Second)
	if _, ok := spec.get("bob"); !ok {
		t.Fatal("bob removed after Cancel")
	}
	page.Do(t, "remove bob", chromedp.Click(chromedp.CSS(`button[aria-label="Remove bob"]`)))
	waitEval(t, page, `document.querySelector('dialog[open] #confirm-yes')`, 5*time.Second)
	page.Do(t, "confirm", chromedp.Click(chromedp.CSS(`dialog[open] #confirm-yes`)))
	waitEval(t, page, `!document.querySelector('#accounts-table tr[data-account="bob"]')`, 10*time.Second)
	if _, ok := spec.get("bob"); ok {
		t.Error("bob is still on the server")
	}
	noConsoleErrors(t, page)
}
