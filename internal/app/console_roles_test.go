package app_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
)

// TestConsoleShowsEachRoleItsControls: the console asks who it is
// (GET /rest/whoami.json) and shows a viewer no control that changes
// anything (no kill, seed, schedule, truncate, layer or quota edit) and
// an operator its task controls but no layer or quota edit; a viewer's
// own REST call of a kill, sent from the page, is refused 403 and kills
// nothing.
func TestConsoleShowsEachRoleItsControls(t *testing.T) {
	t.Parallel()
	embeddedPass(t, "a console page in Chromium (it reads and writes through the REST interface, which the REST suite checks on both backends)")
	a := apptest.Start(t, apptest.Options{SeedThreads: 1})
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":8,"threadCount":1}}`)
	defer a.Do(t, http.MethodPost, "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	id := rows[0][3]
	controls := map[string]string{ // selector → capability
		`#kill-all`: "kill",
		fmt.Sprintf(`button[aria-label="Kill task %d"]`, id):    "kill",
		fmt.Sprintf(`button[aria-label="Kill request %d"]`, id): "kill",
		`#seed-submit`:   "seed",
		`#schedule-form`: "schedules",
		`button[aria-label="Truncate demo:world"]`: "masstruncate",
		`button[aria-label="Delete demo:world"]`:   "layers",
		`#caps-form`:                               "layers",
		`#quota-save`:                              "quota",
	}
	for _, c := range []struct {
		user, role string
		may        []string
	}{
		{apptest.ViewerUser, "viewer", nil},
		{apptest.OperatorUser, "operator", []string{"kill", "seed", "schedules"}},
	} {
		t.Run(c.role, func(t *testing.T) {
			page := openConsoleAs(t, a, c.user, "#tasks")
			waitEval(t, page, fmt.Sprintf(`document.querySelector('tr.lane[data-task="%d"]') && document.querySelector('button[aria-label="Delete demo:world"]')`, id), 20*time.Second)
			if got := page.Eval(t, `document.getElementById('whoami').textContent`); !strings.Contains(got, c.user+" ("+c.role+")") {
				t.Errorf("note: %q, want it to name %s (%s)", got, c.user, c.role)
			}
			for sel, capability := range controls {
				shown := page.Eval(t, fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !e ? 'absent' : getComputedStyle(e.closest('[data-needs]') || e).display === 'none' ? 'hidden' : 'shown'; })()`, sel))
				want := "hidden"
				for _, m := range c.may {
					if m == capability {
						want = "shown"
					}
				}
				if shown == "absent" || shown != want {
					t.Errorf("%s (%s) to a %s: %s, want %s", sel, capability, c.role, shown, want)
				}
			}
			noConsoleErrors(t, page)
			if c.role != "viewer" {
				return
			}
			// The page's own credentials, straight to the REST interface.
			page.Eval(t, `(window.killAnswer = '', fetch('../rest/seed', {method: 'POST', credentials: 'same-origin',
				headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: 'kill_all=all'})
				.then(async (r) => { window.killAnswer = r.status + ' ' + (await r.text()); }), '')`)
			waitEval(t, page, `window.killAnswer !== ''`, 10*time.Second)
			want := "403 This request needs the operator role; account " + apptest.ViewerUser + " has the viewer role\n"
			if got := page.Eval(t, `window.killAnswer`); got != want {
				t.Errorf("a viewer's kill from the page: %q, want %q", got, want)
			}
			for _, r := range listRows(t, a, "/rest/seed.json") {
				if r[3] == id && r[4] != 1 {
					t.Errorf("task %d after a viewer's refused kill: status %d, want RUNNING", id, r[4])
				}
			}
		})
	}
}
