package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/audit"
	"tilecache/internal/gwc"
	"tilecache/internal/seed"
	"tilecache/internal/task"
)

// tasksResource serves the seed tasks: seed, reseed and truncate requests
// (JSON, XML, tile lists), their estimates, the task lists, kills, and
// mass truncation.
type tasksResource struct {
	tasks    Tasks
	planner  Planner
	layers   Layers
	basePath string
	// recent and jobReader, when set, give the list folded by request
	// its finished tasks and the requests' fields
	// (handle_seed_requests.go); jobs caches the jobs read.
	recent    RecentTasks
	jobReader JobReader
	jobs      *jobCache
}

// listAll answers GET /rest/seed.json: every listed task of every layer
// (with requests=1, the list folded by request: handle_seed_requests.go).
func (ts tasksResource) listAll(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Has("requests") {
		return ts.listRequests(w, r)
	}
	tasks, err := ts.tasks.List(r.Context(), "")
	if err != nil {
		return err
	}
	writeTasks(w, formatJSON, tasks)
	return nil
}

// listLayer answers GET /rest/seed/{layer}.json|.xml.
func (ts tasksResource) listLayer(name string, f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if _, ok := ts.layers.Layer(name); !ok {
			if _, deleting := deletingOf(ts.layers, name); !deleting {
				return apperr.Invalidf("Unknown layer: %s", name)
			}
		}
		tasks, err := ts.tasks.List(r.Context(), name)
		if err != nil {
			return err
		}
		writeTasks(w, f, tasks)
		return nil
	}
}

func writeTasks(w http.ResponseWriter, f format, tasks []task.Task) {
	rows := make([][5]int64, len(tasks))
	for i, t := range tasks {
		rows[i] = t.Row()
	}
	if f == formatXML {
		writeBody(w, "application/xml", gwc.TaskListXML(rows))
		return
	}
	writeBody(w, "application/json", gwc.TaskListJSON(rows))
}

// readSeedRequest reads and decodes the body of a seed request of layer
// name, in format f.
func readSeedRequest(w http.ResponseWriter, r *http.Request, name string, f format) (gwc.SeedRequest, error) {
	if err := seedMediaType(r, f); err != nil {
		return gwc.SeedRequest{}, err
	}
	body, err := readBody(w, r)
	if err != nil {
		return gwc.SeedRequest{}, err
	}
	var req gwc.SeedRequest
	if f == formatXML {
		req, err = gwc.DecodeSeedRequestXML(body)
	} else {
		req, err = gwc.DecodeSeedRequestJSON(body)
	}
	if err != nil {
		return gwc.SeedRequest{}, err
	}
	req.Layer = name
	return req, nil
}

// seedMediaType refuses a seed request body whose Content-Type is not the
// format's (application/json; application/xml or text/xml): a form or a
// text/plain body is what a page on another site can make a browser post
// with the credentials it holds, so only the types such a page cannot send
// without the server's consent (CORS) are taken.
func seedMediaType(r *http.Request, f format) error { return requestMediaType(r, f, "a seed request") }

// requestMediaType is seedMediaType for a request body named what ("an
// export request").
func requestMediaType(r *http.Request, f format, what string) error {
	mt := mediaType(r.Header.Get("Content-Type"))
	want := "application/json"
	ok := mt == want
	if f == formatXML {
		want = "application/xml or text/xml"
		ok = mt == "application/xml" || mt == "text/xml"
	}
	if ok {
		return nil
	}
	if mt == "" {
		mt = "none"
	}
	return apperr.New(apperr.Unsupported, "Unsupported Content-Type %s: %s here must be sent as %s", apperr.Show(mt), what, want)
}

// seed answers POST /rest/seed/{layer}.json|.xml: a seed request.
func (ts tasksResource) seed(name string, f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		req, err := readSeedRequest(w, r, name, f)
		if err != nil {
			return err
		}
		tasks, err := ts.tasks.Submit(r.Context(), req)
		if err != nil {
			return err
		}
		noteTasks(r.Context(), name, tasks)
		writeTasks(w, f, tasks)
		return nil
	}
}

// estimate answers POST /rest/estimate/{layer}.json|.xml: the body of a
// seed request (JSON or XML, as the suffix says), planned and validated as
// a seed request is, answered with what it would cost (JSON) without
// submitting anything.
func (ts tasksResource) estimate(name string, f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		var req gwc.SeedRequest
		var err error
		if mediaType(r.Header.Get("Content-Type")) == TileListType {
			req, err = ts.readTileListRequest(w, r, name)
		} else {
			req, err = readSeedRequest(w, r, name, f)
		}
		if err != nil {
			return err
		}
		est, err := ts.planner.Estimate(r.Context(), req)
		if err != nil {
			return err
		}
		b, err := json.Marshal(est)
		if err != nil {
			return err
		}
		writeBody(w, "application/json", b)
		return nil
	}
}

// postLayer answers POST /rest/seed/{layer}: a seed request when the body
// is JSON or XML by its Content-Type, else a kill request (contract §3).
func (ts tasksResource) postLayer(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		switch mediaType(r.Header.Get("Content-Type")) {
		case "application/json":
			return ts.seed(name, formatJSON)(w, r)
		case "application/xml", "text/xml":
			return ts.seed(name, formatXML)(w, r)
		case TileListType:
			return ts.seedTileList(name, formatJSON)(w, r)
		}
		if _, ok := ts.layers.Layer(name); !ok {
			if _, deleting := deletingOf(ts.layers, name); !deleting {
				return apperr.Invalidf("Unknown layer: %s", name)
			}
		}
		return ts.kill(w, r, name)
	}
}

// killAll answers POST /rest/seed: a kill request over all layers.
func (ts tasksResource) killAll(w http.ResponseWriter, r *http.Request) error {
	return ts.kill(w, r, "")
}

// kill terminates tasks per kill_all (contract §6), of one layer or all.
func (ts tasksResource) kill(w http.ResponseWriter, r *http.Request, layer string) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	// A kill is a form (or its code in the query string, without a body):
	// a text/plain body is what a page on another site can post without
	// the server's consent, so it is refused like any other type.
	if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" && (len(body) > 0 || mt != "") {
		if mt == "" {
			mt = "none"
		}
		return apperr.New(apperr.Unsupported, "Unsupported Content-Type %s: a kill request is a form, application/x-www-form-urlencoded with kill_all=<code>", apperr.Show(mt))
	}
	if isKillThread(r, body) {
		// An extension of this project: one task (handle_seed_killtask.go).
		return ts.killThread(w, r, layer, body)
	}
	code, ok := r.URL.Query()["kill_all"]
	// ParseQuery returns every well-formed pair even when another is
	// malformed; a stray bad pair must not hide kill_all.
	if form, _ := url.ParseQuery(string(body)); form.Has("kill_all") {
		code, ok = form["kill_all"], true
	}
	if !ok || len(code) == 0 {
		return apperr.Invalidf("Missing form parameter kill_all")
	}
	set, err := seed.ParseKillSet(strings.TrimSpace(code[0]))
	if err != nil {
		return err
	}
	killed, finished, err := ts.tasks.Kill(r.Context(), layer, set)
	if err != nil {
		return err
	}
	noteTasks(r.Context(), layer, killed)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, killPage(set, layer, killed, finished))
	return nil
}

func killPage(set seed.KillSet, layer string, killed, finished []task.Task) string {
	what := map[seed.KillSet]string{seed.KillAll: "all", seed.KillRunning: "running", seed.KillPending: "pending"}[set]
	var b strings.Builder
	b.WriteString("<html><head><title>GWC Seed Form</title></head><body>\n")
	fmt.Fprintf(&b, "<p>Requested to terminate %s tasks.</p>\n", what)
	list := func(title string, tasks []task.Task) {
		fmt.Fprintf(&b, "<p>%s</p><ul>", title)
		for _, t := range tasks {
			fmt.Fprintf(&b, "<li>[%d: %s, %s, %s]</li>", t.ID, html.EscapeString(t.Layer), t.Type, t.Status)
		}
		b.WriteString("</ul>\n")
	}
	list("Terminated tasks:", killed)
	list("Tasks already finished:", finished)
	if layer != "" {
		fmt.Fprintf(&b, "<p><a href=\"./%s\">Go back</a></p>\n", html.EscapeString(layer))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// noteTasks tells the audit trail the layer a request acted on and the
// tasks it created or killed.
func noteTasks(ctx context.Context, layer string, tasks []task.Task) {
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	audit.Note(ctx, layer, ids...)
}
