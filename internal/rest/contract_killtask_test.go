package rest_test

// An extension of this project: the kill of one task by id, with
// GeoWebCache's seed-form parameters kill_thread and thread_id.

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
)

func statusOf(t testing.TB, a *apptest.App) map[int64]int64 {
	t.Helper()
	out := map[int64]int64{}
	for _, r := range list(t, a, "/rest/seed.json") {
		out[r[3]] = r[4]
	}
	return out
}

func TestKillOneTask(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	form := []string{"Content-Type", ctForm}
	rows := seedJSON(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":5,"threadCount":3}}`)
	defer killAll(t, a)
	wantIDs(t, rows, 1, 3) // 1 and 2 run, 3 pends
	testenv.Eventually(t, 10*time.Second, "task 2 to make progress", func() bool {
		tk, err := a.Local.Tasks.Get(t.Context(), 2)
		return err == nil && tk.Done > 0
	})

	// The refusals change nothing.
	for _, c := range []struct {
		name, path, body string
		headers          []string
		status           int
		msg              string
	}{
		{"not a number", "/rest/seed/slow:world", "kill_thread=1&thread_id=abc", form, 400, "Bad thread_id 'abc': a task id is a positive integer"},
		{"zero", "/rest/seed", "kill_thread=1&thread_id=0", form, 400, "Bad thread_id '0': a task id is a positive integer"},
		{"negative in the query string", "/rest/seed?kill_thread=1&thread_id=-2", "", nil, 400, "Bad thread_id '-2': a task id is a positive integer"},
		{"missing id", "/rest/seed/slow:world", "kill_thread=1", form, 400, "Missing form parameter thread_id: kill_thread kills the task whose id thread_id gives"},
		{"with kill_all", "/rest/seed/slow:world", "kill_all=all&kill_thread=1&thread_id=2", form, 400, "Give kill_all (tasks by state) or kill_thread with thread_id (one task), not both"},
		{"another layer's task", "/rest/seed/demo:world", "kill_thread=1&thread_id=2", form, 400, "Task 2 is a task of layer slow:world, not of demo:world"},
		{"unknown layer", "/rest/seed/nope:nope", "kill_thread=1&thread_id=2", form, 400, "Unknown layer: nope:nope"},
		{"unknown id", "/rest/seed/slow:world", "kill_thread=1&thread_id=999", form, 404, "Unknown task: 999"},
		{"unknown id, all layers", "/rest/seed", "kill_thread=1&thread_id=4", form, 404, "Unknown task: 4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, a.Do(t, "POST", c.path, c.body, c.headers...), c.status, c.msg)
		})
	}
	t.Run("text/plain body", func(t *testing.T) {
		wantUnsupported(t, a.Do(t, "POST", "/rest/seed/slow:world", "kill_thread=1&thread_id=2", "Content-Type", "text/plain"))
	})
	t.Run("cross-site", func(t *testing.T) {
		res := a.Do(t, "POST", "/rest/seed/slow:world", "kill_thread=1&thread_id=2", "Content-Type", ctForm, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
		if res.Status != http.StatusForbidden {
			t.Errorf("cross-site kill: got %d %q, want 403", res.Status, res.Body)
		}
	})
	t.Run("no account", func(t *testing.T) {
		req, _ := http.NewRequest("POST", a.URL+"/rest/seed/slow:world", strings.NewReader("kill_thread=1&thread_id=2"))
		req.Header.Set("Content-Type", ctForm)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("kill without an account: got %d, want 401", res.StatusCode)
		}
	})
	if st := statusOf(t, a); st[1] != 1 || st[2] != 1 || st[3] != 0 {
		t.Fatalf("after the refusals: got %v, want 1 and 2 RUNNING, 3 PENDING", st)
	}

	// Kill running task 2 of its layer: only it goes, and task 3 takes
	// its thread.
	res := a.Do(t, "POST", "/rest/seed/slow:world", "kill_thread=1&thread_id=2", form...)
	wantPage(t, res, pageHead+"<p>Requested to terminate task 2.</p>\n"+
		"<p>Terminated tasks:</p><ul><li>[2: slow:world, SEED, RUNNING]</li></ul>\n<p>Tasks already finished:</p><ul></ul>\n"+
		`<p><a href="./slow:world">Go back</a></p>`+"\n"+pageTail)
	st := statusOf(t, a)
	if st[1] != 1 || st[2] == 0 || st[2] == 1 {
		t.Fatalf("after killing task 2: got %v, want 1 RUNNING and 2 gone or -1", st)
	}
	testenv.Eventually(t, 5*time.Second, "task 3 to take the freed thread", func() bool { return statusOf(t, a)[3] == 1 })
	// While task 1 goes on, the killed task stands still (once its lane,
	// stopped within about a second, recorded how far it got).
	testenv.Eventually(t, 5*time.Second, "the lane of killed task 2 to stop", func() bool { return !a.Local.Engine.Worker.Working(2) })
	before, _ := a.Local.Tasks.Get(t.Context(), 2)
	one, _ := a.Local.Tasks.Get(t.Context(), 1)
	testenv.Eventually(t, 10*time.Second, "task 1 to go on", func() bool {
		now, _ := a.Local.Tasks.Get(t.Context(), 1)
		return now.Done > one.Done
	})
	after, _ := a.Local.Tasks.Get(t.Context(), 2)
	if after.Status != task.Aborted || !after.Killed || after.Done != before.Done {
		t.Errorf("killed task 2 moved on or is not ABORTED+killed: %+v then %+v", before, after)
	}

	// Task 3 by the query-string spelling on the all-layers path.
	res = a.Do(t, "POST", "/rest/seed?kill_thread=1&thread_id=3", "")
	wantPageContains(t, res, "<p>Requested to terminate task 3.</p>\n", "<p>Terminated tasks:</p><ul><li>[3: slow:world, SEED, RUNNING]</li></ul>\n")
	if strings.Contains(res.Body, "Go back") {
		t.Errorf("kill page of the all-layers path %q: got a link back, want none", res.Body)
	}
	// Task 2 again: already finished, nothing terminated.
	res = a.Do(t, "POST", "/rest/seed/slow:world", "thread_id=2&kill_thread=1", form...)
	wantPageContains(t, res, "<p>Terminated tasks:</p><ul></ul>\n", "<p>Tasks already finished:</p><ul><li>[2: slow:world, SEED, ABORTED]</li></ul>\n")
	if st := statusOf(t, a); st[1] != 1 {
		t.Errorf("task 1 after the other kills: got status %d, want RUNNING", st[1])
	}
}
