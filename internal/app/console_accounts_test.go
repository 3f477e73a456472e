package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/app/apptest"
	"tilecache/internal/auth"
)

// TestConsoleAccounts drives the accounts page: configured accounts are
// shown read-only with a note; an account is added (a mistyped second
// password is caught on the page, sending nothing), its role changed, a
// new password set, and it is removed after a confirmation (Cancel
// removes nothing); the server's own message is shown when it refuses
// (an existing name, a bad name). What the page did is what the server
// holds: the account signs in with its password and role, then with the
// new ones, and not once removed (each change seen once auth.StoredFor
// has passed, on the clock of the app's accounts cache, moved by the
// test).
func TestConsoleAccounts(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	clock := &aheadClock{}
	a := apptest.Start(t, apptest.Options{AuthClock: clock.Now})
	page := openConsole(t, a, "#accounts")
	waitEval(t, page, `document.querySelector('#accounts-table tr[data-account="admin"]')`, 10*time.Second)
	// whoami moves the app's accounts clock past auth.StoredFor and asks
	// the server, as name with password: it must answer want (a status,
	// and the role for a 200).
	whoami := func(name, password string, want int, role string) {
		t.Helper()
		clock.Skip(auth.StoredFor)
		if r := a.DoAuth(t, name, password, http.MethodGet, "/rest/whoami.json", ""); r.Status != want || want == 200 && !strings.Contains(r.Body, `"role":"`+role+`"`) {
			t.Errorf("%s signing in, auth.StoredFor after the change: %d %s, want %d %s", name, r.Status, r.Body, want, role)
		}
	}
	// refusal is the server's own message for a request.
	refusal := func(method, path, body string) string {
		t.Helper()
		r := a.Do(t, method, path, body, "Content-Type", "application/json")
		if r.Status < 400 || r.Status >= 500 {
			t.Fatalf("%s %s %s: %d %s, want a 4xx", method, path, body, r.Status, r.Body)
		}
		return strings.TrimSpace(r.Body)
	}

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
	if fmt.Sprint(got[apptest.User]) != "[admin configured 0]" || fmt.Sprint(got[apptest.ViewerUser]) != "[viewer configured 0]" || len(got) != 4 {
		t.Errorf("rows %q: want the four configured accounts, without a button", got)
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
	posts := func() int {
		return strings.Count(page.Eval(t, `JSON.stringify(window.consoleStats.requests.filter(r => r.method === 'POST' && r.path === 'accounts.json'))`), "accounts.json")
	}
	if msg := add("bob", "operator", "bob's password", "bobs password"); !strings.Contains(msg, "The two passwords differ") || posts() != 0 {
		t.Errorf("mistyped password: %q, %d requests sent", msg, posts())
	}
	if msg := add("bob", "operator", "bob's password", "bob's password"); !strings.Contains(msg, "Account bob added (operator)") {
		t.Errorf("add bob: %q", msg)
	}
	waitEval(t, page, `document.querySelector('#accounts-table tr[data-account="bob"]')`, 10*time.Second)
	if got := rows()["bob"]; fmt.Sprint(got) != "[operator added here 3]" {
		t.Errorf("bob's row: %q", got)
	}
	whoami("bob", "bob's password", 200, "operator")
	// The server's refusals, in its words.
	for _, c := range []struct{ name, password, body string }{
		{"bob", "another password", `{"name":"bob","password":"another password","role":"viewer"}`},
		{"bad name!", "another password", `{"name":"bad name!","password":"another password","role":"viewer"}`},
		{"carol", "short", `{"name":"carol","password":"short","role":"viewer"}`},
	} {
		want := refusal(http.MethodPost, "/rest/accounts.json", c.body)
		if msg := add(c.name, "viewer", c.password, c.password); msg != "Not added: "+want {
			t.Errorf("%s: the page says %q, want %q", c.body, msg, "Not added: "+want)
		}
	}

	// Change bob's role.
	// Chosen and sent in one step: a refresh of the list between the two
	// would draw a new select holding bob's old role (seen once under load).
	page.Eval(t, `(() => { document.querySelector('select[aria-label="Role of bob"]').value = 'viewer';
		document.querySelector('button[aria-label="Change the role of bob"]').click(); return ''; })()`)
	waitEval(t, page, `document.querySelector('#accounts-table tr[data-account="bob"] .role').textContent === 'viewer'`, 10*time.Second)
	whoami("bob", "bob's password", 200, "viewer")
	// A new password, typed twice.
	page.Do(t, "new password for bob", chromedp.Click(chromedp.CSS(`button[aria-label="Set a new password for bob"]`)))
	waitEval(t, page, `document.querySelector('tr[data-password-for="bob"]')`, 5*time.Second)
	setValue(t, page, `input[aria-label="New password for bob"]`, "bob's new password")
	setValue(t, page, `input[aria-label="New password for bob, again"]`, "bob's new password")
	page.Do(t, "set it", chromedp.Click(chromedp.CSS(`tr[data-password-for="bob"] button[type=submit]`)))
	waitEval(t, page, `!document.querySelector('tr[data-password-for="bob"]')`, 10*time.Second)
	whoami("bob", "bob's new password", 200, "viewer")
	whoami("bob", "bob's password", 401, "")
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
	if r := a.Do(t, http.MethodGet, "/rest/accounts/bob.json", ""); r.Status != 200 {
		t.Fatalf("bob after Cancel: %d %s", r.Status, r.Body)
	}
	page.Do(t, "remove bob", chromedp.Click(chromedp.CSS(`button[aria-label="Remove bob"]`)))
	waitEval(t, page, `document.querySelector('dialog[open] #confirm-yes')`, 5*time.Second)
	page.Do(t, "confirm", chromedp.Click(chromedp.CSS(`dialog[open] #confirm-yes`)))
	waitEval(t, page, `!document.querySelector('#accounts-table tr[data-account="bob"]')`, 10*time.Second)
	if r := a.Do(t, http.MethodGet, "/rest/accounts/bob.json", ""); r.Status != 404 {
		t.Errorf("bob after the removal: %d %s, want 404", r.Status, r.Body)
	}
	whoami("bob", "bob's new password", 401, "")
	noConsoleErrors(t, page)
}
