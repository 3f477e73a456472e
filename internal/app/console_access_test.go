package app_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"tilecache/internal/apitoken"
	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/browsertest"
)

// consolePass is the reason the console's access tests run on one
// backend: the pages read and write through the REST interface, which
// its own suites check on both.
const consolePass = "a console page in Chromium (it reads and writes through the REST interface, which the REST suite checks on both backends)"

// shownState is an expression telling whether the element sel (or the
// closest ancestor marked data-needs) is "shown", "hidden" or "absent".
func shownState(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !e ? 'absent' : getComputedStyle(e.closest('[data-needs]') || e).display === 'none' ? 'hidden' : 'shown'; })()`, sel)
}

// aheadClock is the real clock put ahead by the test (Skip): the clock of
// what an app remembers of API tokens and of accounts added at run time
// (apptest.Options.AuthClock), moved past apitoken.CacheFor or
// auth.StoredFor rather than waited for.
type aheadClock struct{ ahead atomic.Int64 }

func (c *aheadClock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

func (c *aheadClock) Skip(d time.Duration) { c.ahead.Add(int64(d)) }

// TestConsoleAdminLinks: the audit trail, API tokens and accounts links
// of the navigation show to an administrator only (whoami's role); a
// viewer and an operator see none of them.
func TestConsoleAdminLinks(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	a := apptest.Start(t, apptest.Options{})
	for _, c := range []struct {
		user, want string
	}{
		{apptest.User, "shown"},
		{apptest.OperatorUser, "hidden"},
		{apptest.ViewerUser, "hidden"},
	} {
		t.Run(c.user, func(t *testing.T) {
			page := openConsoleAs(t, a, c.user, "#tasks")
			waitEval(t, page, `document.body.dataset.role`, 10*time.Second)
			for _, link := range []string{"audit", "tokens", "accounts"} {
				if got := page.Eval(t, shownState(`nav a[href="#`+link+`"]`)); got != c.want {
					t.Errorf("%s: the %s link is %s, want %s", c.user, link, got, c.want)
				}
			}
			for _, link := range []string{"tasks", "seed", "layers", "quota", "schedules"} {
				if got := page.Eval(t, shownState(`nav a[href="#`+link+`"]`)); got != "shown" {
					t.Errorf("%s: the %s link is %s, want shown", c.user, link, got)
				}
			}
			noConsoleErrors(t, page)
		})
	}
}

// TestConsoleTokens: an administrator issues an API token from the page
// (a viewer's, limited to a layer, with a label): its bearer value is
// shown once, with a copy button and the warning, and nowhere once
// dismissed; the token authenticates as a viewer limited to its layer;
// the list shows it without its secret; revoking it asks for a
// confirmation (Cancel revokes nothing), after which the token is
// refused once apitoken.CacheFor has passed (on the clock of the app's
// token cache, moved by the test).
func TestConsoleTokens(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	clock := &aheadClock{}
	a := apptest.Start(t, apptest.Options{AuthClock: clock.Now})
	page := openConsole(t, a, "#tokens")
	waitEval(t, page, `document.querySelectorAll('#token-role option').length === 3 && document.querySelector('#token-layers input[value="demo:world"]') && document.querySelector('#tokens-list p, #tokens-table')`, 10*time.Second)
	var roles []string
	evalJSON(t, page, `Array.from(document.querySelectorAll('#token-role option')).map(o => o.value)`, &roles)
	if strings.Join(roles, ",") != "viewer,operator,admin" {
		t.Errorf("roles offered to an administrator: %q", roles)
	}
	setValue(t, page, `#token-role`, "viewer")
	setValue(t, page, `#token-lifetime`, "24h")
	setValue(t, page, `#token-label`, "console test")
	page.Do(t, "issue a token", chromedp.Click(chromedp.CSS(`#token-layers input[value="demo:world"]`)), chromedp.Click(chromedp.CSS(`#token-issue`)))
	waitEval(t, page, `document.querySelector('#token-value') && document.querySelector('#tokens-table tbody tr[data-state="active"]')`, 10*time.Second)
	bearer := page.Eval(t, `document.querySelector('#token-value').value`)
	if note := page.Eval(t, `document.getElementById('token-result').textContent`); !strings.Contains(note, "you will not see it again") {
		t.Errorf("the issued token's note %q lacks the warning", note)
	}
	if got := page.Eval(t, shownState(`#token-copy`)); got != "shown" {
		t.Errorf("the copy button is %s", got)
	}
	page.Do(t, "copy", chromedp.Click(chromedp.CSS(`#token-copy`)))
	waitEval(t, page, `document.querySelector('#token-result [role=status]').textContent !== ''`, 5*time.Second)
	var row []string
	evalJSON(t, page, `Array.from(document.querySelector('#tokens-table tbody tr').cells).map(c => c.textContent)`, &row)
	id := page.Eval(t, `document.querySelector('#tokens-table tbody tr').dataset.token`)
	if len(row) != 9 || row[0] != id || row[1] != "viewer" || row[2] != "demo:world" || row[3] != "console test" || row[4] != apptest.User || row[7] != "active" {
		t.Errorf("the token's row: %q", row)
	}
	if !strings.HasPrefix(bearer, id+".") || len(bearer) < len(id)+20 {
		t.Errorf("bearer value shown %q, want token %s's <id>.<secret>", bearer, id)
	}
	if note := page.Eval(t, `document.getElementById('token-result').textContent`); !strings.Contains(note, "Token "+id+" issued") {
		t.Errorf("the note %q does not name token %s", note, id)
	}
	// The token is what the page said: a viewer's, limited to demo:world.
	bearerAuth := []string{"Authorization", "Bearer " + bearer}
	if r := a.DoAuth(t, "", "", http.MethodGet, "/rest/whoami.json", "", bearerAuth...); r.Status != 200 || !strings.Contains(r.Body, `"role":"viewer"`) || !strings.Contains(r.Body, `"layers":["demo:world"]`) {
		t.Errorf("whoami with the token: %d %s", r.Status, r.Body)
	}
	if r := a.DoAuth(t, "", "", http.MethodPost, "/rest/seed/demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":0}}`, bearerAuth...); r.Status != http.StatusForbidden {
		t.Errorf("a seed with the viewer's token: %d %s, want 403", r.Status, r.Body)
	}
	// Shown once: dismissed, it is nowhere in the page, nor in the list.
	page.Do(t, "dismiss", chromedp.Click(chromedp.CSS(`#token-done`)))
	page.Eval(t, `(location.hash = '#seed', '')`)
	page.Eval(t, `(location.hash = '#tokens', '')`)
	waitEval(t, page, `!document.getElementById('page-tokens').hidden && document.querySelector('#tokens-table tbody tr')`, 10*time.Second)
	if got := page.Eval(t, fmt.Sprintf(`String(document.documentElement.outerHTML.includes(%[1]q) || document.body.innerText.includes(%[1]q) || Array.from(document.querySelectorAll('input')).some(i => i.value.includes(%[1]q)))`, bearer)); got != "false" {
		t.Errorf("the bearer value is still in the page after it was dismissed")
	}
	if r := a.Do(t, http.MethodGet, "/rest/tokens.json", ""); strings.Contains(r.Body, bearer) {
		t.Errorf("the token list holds the bearer value")
	}
	// Revoke: Cancel first (nothing happens), then confirm.
	revoke := fmt.Sprintf(`button[aria-label="Revoke token %s"]`, id)
	page.Do(t, "revoke, then cancel", chromedp.Click(chromedp.CSS(revoke)))
	waitEval(t, page, `document.querySelector('dialog[open] #confirm-no')`, 5*time.Second)
	page.Do(t, "cancel", chromedp.Click(chromedp.CSS(`dialog[open] #confirm-no`)))
	waitEval(t, page, `!document.querySelector('dialog')`, 5*time.Second)
	if r := a.DoAuth(t, "", "", http.MethodGet, "/rest/seed.json", "", bearerAuth...); r.Status != 200 {
		t.Errorf("the token after a cancelled revocation: %d %s, want 200", r.Status, r.Body)
	}
	page.Do(t, "revoke", chromedp.Click(chromedp.CSS(revoke)))
	waitEval(t, page, `document.querySelector('dialog[open] #confirm-yes')`, 5*time.Second)
	page.Do(t, "confirm", chromedp.Click(chromedp.CSS(`dialog[open] #confirm-yes`)))
	waitEval(t, page, fmt.Sprintf(`document.querySelector('#tokens-table tr[data-token=%q][data-state="revoked"]') && !document.querySelector(%q)`, id, revoke), 10*time.Second)
	clock.Skip(apitoken.CacheFor)
	if last := a.DoAuth(t, "", "", http.MethodGet, "/rest/seed.json", "", bearerAuth...); last.Status != http.StatusUnauthorized {
		t.Errorf("the revoked token, apitoken.CacheFor after its revocation: %d %s, want 401", last.Status, last.Body)
	}
	noConsoleErrors(t, page)
}

// TestConsolePrivateLayerTiles: the console asks for a tile token for
// the private layers (POST /rest/tiletokens.json) and adds it to their
// tiles' URLs in the seed map, so a viewer sees a private layer's stored
// tiles (answered 200, each request carrying the token) while a public
// layer's URLs stay without one; the token is renewed before it expires
// (a lifetime of 3 s here), and the tiles asked after keep loading.
func TestConsolePrivateLayerTiles(t *testing.T) {
	t.Parallel()
	embeddedPass(t, consolePass)
	a := apptest.Start(t, apptest.Options{Layers: privateLayers, Env: map[string]string{"TILECACHE_TILE_TOKEN_KEYS": privateKeys}})
	wantDone(t, seedAndWait(t, a, "topp:states", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":3,"format":"image/png"}}`))
	wantDone(t, seedAndWait(t, a, "demo:world", `{"seedRequest":{"gridSetId":"EPSG:4326","zoomStart":0,"zoomStop":1,"format":"image/png"}}`))
	page := openConsoleAs(t, a, apptest.ViewerUser, "#seed")
	waitEval(t, page, `window.consoleTileToken.token !== ''`, 10*time.Second)
	if got := page.Eval(t, `window.consoleTileToken.layers.join(',')`); got != "topp:states" {
		t.Errorf("the console's token opens %q, want topp:states", got)
	}
	settled := `window.consoleBase.asked > 0 && window.consoleBase.asked === window.consoleBase.found + window.consoleBase.missing + window.consoleBase.failed`
	choose := func(layer string) {
		page.Eval(t, fmt.Sprintf(`(s => { s.value = %q; s.dispatchEvent(new Event('change')); return ''; })(document.querySelector('#seed-form select'))`, layer))
	}
	// tiles counts the page's requests of a layer's tiles from the n-th
	// on: by status, with and without a token, and the tokens sent.
	type count struct {
		ok, withToken, withoutToken int
		statuses                    map[int64]int
		tokens                      map[string]bool
	}
	tiles := func(layer string, from int) (count, int) {
		c := count{statuses: map[int64]int{}, tokens: map[string]bool{}}
		reqs := page.Requests()
		for _, r := range reqs[min(from, len(reqs)):] {
			u, err := url.Parse(r.URL)
			if err != nil || !strings.HasPrefix(u.Path, "/tiles/"+layer+"/") {
				continue
			}
			c.statuses[r.Status]++
			if tok := u.Query().Get("token"); tok != "" {
				c.withToken++
				c.tokens[tok] = true
				if r.Status == http.StatusOK {
					c.ok++
				}
			} else {
				c.withoutToken++
			}
		}
		return c, len(reqs)
	}
	// seen waits until the page has asked for a tile of layer (from the
	// n-th request on) and the base map has settled.
	seen := func(layer string, from int) {
		t.Helper()
		if !page.WaitRequests(20*time.Second, func([]browsertest.Request) bool {
			c, _ := tiles(layer, from)
			return c.withToken+c.withoutToken > 0
		}) {
			t.Fatalf("after 20 s, no tile of %s asked for (console: %q)", layer, page.Console())
		}
		waitEval(t, page, settled, 20*time.Second)
	}
	choose("topp:states")
	seen("topp:states", 0)
	c, n := tiles("topp:states", 0)
	t.Logf("topp:states tiles: %d with a token (%d answered 200), %d without; statuses %v", c.withToken, c.ok, c.withoutToken, c.statuses)
	if c.ok == 0 || c.withoutToken != 0 || c.statuses[http.StatusUnauthorized]+c.statuses[http.StatusForbidden] != 0 {
		t.Errorf("the private layer's tiles: %+v, want some answered 200, every one with a token", c)
	}

	// A public layer's tile URLs carry no token.
	choose("demo:world")
	seen("demo:world", n)
	if pub, _ := tiles("demo:world", n); pub.withToken != 0 || pub.withoutToken == 0 {
		t.Errorf("the public layer's tiles: %+v, want none with a token", pub)
	}

	// Renewal: with a lifetime of 3 s, the token is asked for again every
	// 2.4 s; the tiles asked after carry a valid one.
	page.Eval(t, `(window.consoleTileToken.lifetime = 3, window.consoleTileToken.renew(), '')`)
	issued := page.Eval(t, `String(window.consoleTileToken.issued)`)
	waitEval(t, page, `window.consoleTileToken.issued >= `+issued+` + 2`, 15*time.Second)
	var tok struct {
		ExpiresAt int64
		Error     string
	}
	evalJSON(t, page, `window.consoleTileToken`, &tok)
	if left := time.Until(time.Unix(tok.ExpiresAt, 0)); left > 4*time.Second || tok.Error != "" {
		t.Errorf("the renewed token expires in %v (error %q), want at most 3 s", left, tok.Error)
	}
	choose("topp:states")
	_, from := tiles("topp:states", 0)
	page.Eval(t, `(v => { v.setZoom(3); v.setCenter([-95, 37]); return ''; })(window.consoleSeed.map.getView())`)
	seen("topp:states", from)
	after, _ := tiles("topp:states", from)
	t.Logf("after renewals: %d tiles with a token (%d answered 200), %d without; statuses %v", after.withToken, after.ok, after.withoutToken, after.statuses)
	if after.ok == 0 || after.withoutToken != 0 || after.statuses[http.StatusUnauthorized]+after.statuses[http.StatusForbidden] != 0 {
		t.Errorf("the private layer's tiles after the renewals: %+v", after)
	}
	for tok := range after.tokens {
		if c.tokens[tok] {
			t.Errorf("a tile asked after the renewals carries the first token")
		}
	}
	page.Eval(t, `(window.consoleTileToken.lifetime = 3600, window.consoleTileToken.renew(), '')`)
	noConsoleErrors(t, page)
}
