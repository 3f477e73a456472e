package rest

// The kill of one task, an extension of this project: GeoWebCache's seed
// form posts kill_thread=1&thread_id=<id> to /rest/seed/{layer} to kill
// one task, though its REST documentation lists only kill_all. The same
// form is taken here on /rest/seed/{layer} (the task must be of that
// layer) and on /rest/seed (any layer), with the kill machinery of
// kill_all and answers a client can act on: 404 for an id no task has,
// 400 for a bad id or a task of another layer (GeoWebCache: 500, or a
// 200 "Sorry" page).

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/audit"
	"tilecache/internal/seed"
	"tilecache/internal/task"
)

// OneTaskKiller terminates one task (seed.Engine does).
type OneTaskKiller interface {
	// KillTask terminates task id when PENDING or RUNNING, of layer (any
	// when ""); it returns the task as it was before, or as it is when it
	// had already finished (killed false). An unknown id is NotFound, a
	// task of another layer Invalid.
	KillTask(ctx context.Context, layer string, id int64) (t task.Task, killed bool, err error)
}

// isKillThread reports whether a kill request names one task: a
// kill_thread parameter in the query string or the form.
func isKillThread(r *http.Request, body []byte) bool {
	if r.URL.Query().Has("kill_thread") {
		return true
	}
	form, _ := url.ParseQuery(string(body))
	return form.Has("kill_thread")
}

// killThread answers a kill request of one task: kill_thread=<anything>
// and thread_id=<task id>, in the form or the query string, with the kill
// page of kill_all listing the task.
func (ts tasksResource) killThread(w http.ResponseWriter, r *http.Request, layer string, body []byte) error {
	q := r.URL.Query()
	form, _ := url.ParseQuery(string(body))
	for k, v := range form {
		q[k] = v
	}
	if q.Has("kill_all") {
		return apperr.Invalidf("Give kill_all (tasks by state) or kill_thread with thread_id (one task), not both")
	}
	raw, ok := q["thread_id"]
	if !ok || len(raw) == 0 || strings.TrimSpace(raw[0]) == "" {
		return apperr.Invalidf("Missing form parameter thread_id: kill_thread kills the task whose id thread_id gives")
	}
	s := strings.TrimSpace(raw[0])
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return apperr.Invalidf("Bad thread_id '%s': a task id is a positive integer", apperr.Show(s))
	}
	t, killed, err := ts.tasks.KillTask(r.Context(), layer, id)
	if err != nil {
		return err
	}
	audit.Note(r.Context(), t.Layer, t.ID)
	var terminated, finished []task.Task
	if killed {
		terminated = []task.Task{t}
	} else {
		finished = []task.Task{t}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, killTaskPage(id, layer, terminated, finished))
	return nil
}

// killTaskPage is the kill page of one task: GeoWebCache's "Requested to
// terminate task <id>." and the lists of kill_all's page.
func killTaskPage(id int64, layer string, killed, finished []task.Task) string {
	page := killPage(seed.KillAll, layer, killed, finished)
	head, rest, _ := strings.Cut(page, "<p>Requested to terminate all tasks.</p>\n")
	return head + fmt.Sprintf("<p>Requested to terminate task %d.</p>\n", id) + rest
}
