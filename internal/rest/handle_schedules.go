package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/schedule"
)

// Schedules of saved requests, an extension of this project (GeoWebCache
// has none):
//
//	POST   /rest/schedules.json         save one: {"name", "cron", ["timezone"], "request"}
//	GET    /rest/schedules.json         list them: {"schedules": […]}
//	GET    /rest/schedules/{name}.json  one
//	DELETE /rest/schedules/{name}.json  remove one (a run it started goes on)
//
// "request" is a seed request exactly as POST /rest/seed/{layer}.json takes
// it, with its layer beside it: {"layer": "topp:states", "seedRequest": {…}}.
// It is validated (prepared, as a dry run) when it is saved, so a bad layer
// or zoom level is a 400 then, not a failed run later.

// schedulesResource serves /rest/schedules.json and
// /rest/schedules/{name}.json.
type schedulesResource struct {
	store    ScheduleStore
	planner  Preparer // checks a schedule's request when it is saved
	basePath string
	log      *slog.Logger
}

// scheduleBody is the body of POST /rest/schedules.json.
type scheduleBody struct {
	Name     string          `json:"name"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone"`
	Request  json.RawMessage `json:"request"`
}

// createSchedule answers POST /rest/schedules.json: 201 with the saved
// schedule, 409 when its name is taken.
func (res schedulesResource) create(w http.ResponseWriter, r *http.Request) error {
	if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		// As for seed requests: a type a page on another site cannot send
		// without the server's consent (CORS).
		if mt == "" {
			mt = "none"
		}
		return apperr.New(apperr.Unsupported, "Unsupported Content-Type %s: a schedule must be sent as application/json", apperr.Show(mt))
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	var b scheduleBody
	if err := decodeStrict(body, &b); err != nil {
		return err
	}
	layer, seedBody, err := splitScheduledRequest(b.Request)
	if err != nil {
		return err
	}
	s, err := schedule.New(b.Name, b.Cron, b.Timezone, layer, seedBody, time.Now())
	if err != nil {
		return err
	}
	req, err := gwc.DecodeScheduledSeedRequest(layer, seedBody)
	if err != nil {
		return err
	}
	if _, err := res.planner.Prepare(req); err != nil {
		return err
	}
	if err := res.store.CreateSchedule(r.Context(), s); err != nil {
		return err
	}
	w.Header().Set("Location", res.basePath+"/rest/schedules/"+url.PathEscape(s.Name)+".json")
	return writeJSON(w, http.StatusCreated, scheduleJSONOf(s), "schedule "+strconv.Quote(s.Name))
}

// decodeStrict decodes the JSON object body into v, refusing unknown
// fields and trailing text, with messages that name the problem.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return apperr.Invalidf("Malformed JSON: text after the schedule object")
		}
		return nil
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return apperr.Invalidf("Unknown field: %s", apperr.Show(strings.Trim(f, `"`)))
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return apperr.Invalidf("A schedule is a JSON object {\"name\", \"cron\", \"timezone\", \"request\"}, not %s", te.Value)
		}
		return apperr.Invalidf("Field %s must be a %s, not %s", apperr.Show(te.Field), te.Type.Kind(), te.Value)
	}
	if errors.Is(err, io.EOF) {
		return apperr.Invalidf("Empty body: a schedule is a JSON object {\"name\", \"cron\", \"timezone\", \"request\"}")
	}
	return apperr.Wrap(apperr.Invalid, err, "Malformed JSON: %s", apperr.Show(strings.TrimPrefix(err.Error(), "json: ")))
}

// splitScheduledRequest splits {"layer": …, "seedRequest": {…}} into the
// layer and the body of POST /rest/seed/{layer}.json, {"seedRequest": {…}}.
func splitScheduledRequest(raw json.RawMessage) (string, json.RawMessage, error) {
	const shape = `{"layer": "topp:states", "seedRequest": {…}}`
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, apperr.Invalidf("A schedule needs a request: %s", shape)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "", nil, apperr.Invalidf("The request of a schedule is a JSON object %s", shape)
	}
	var layer string
	if err := json.Unmarshal(fields["layer"], &layer); err != nil || strings.TrimSpace(layer) == "" {
		return "", nil, apperr.Invalidf("The request of a schedule needs its layer, a string: %s", shape)
	}
	delete(fields, "layer")
	for k := range fields {
		if k != "seedRequest" {
			return "", nil, apperr.Invalidf("Unknown field of the request of a schedule: %s (it holds layer and seedRequest: %s)", apperr.Show(k), shape)
		}
	}
	if _, ok := fields["seedRequest"]; !ok {
		return "", nil, apperr.Invalidf("The request of a schedule needs its seedRequest: %s", shape)
	}
	// The rest is the seed request body, for its own decoder to judge.
	body, err := json.Marshal(fields)
	if err != nil {
		return "", nil, fmt.Errorf("encode seed request: %w", err)
	}
	return layer, body, nil
}

// listSchedules answers GET /rest/schedules.json.
func (res schedulesResource) list(w http.ResponseWriter, r *http.Request) error {
	all, bad, err := res.store.Schedules(r.Context())
	if err != nil {
		return err
	}
	doc := struct {
		Schedules []scheduleJSON `json:"schedules"`
		// Unreadable names the stored schedules that do not decode (left
		// out of the list; DELETE removes them).
		Unreadable []string `json:"unreadable,omitempty"`
	}{Schedules: make([]scheduleJSON, len(all))}
	for _, u := range bad {
		res.log.Error("stored schedule does not decode: left out of the list", "schedule", u.Name, "err", u.Err)
		doc.Unreadable = append(doc.Unreadable, u.Name)
	}
	for i, s := range all {
		doc.Schedules[i] = scheduleJSONOf(s)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode schedules: %w", err)
	}
	writeBody(w, "application/json", out)
	return nil
}

// getSchedule answers GET /rest/schedules/{name}.json.
func (res schedulesResource) get(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		s, err := res.store.Schedule(r.Context(), name)
		if errors.Is(err, schedule.ErrUnreadable) {
			res.log.Error("stored schedule does not decode", "schedule", name, "err", err)
			return apperr.New(apperr.Conflict, "Schedule %s is stored in a form that does not decode: delete it and create it again", apperr.Show(name))
		}
		if err != nil {
			return err
		}
		out, err := json.Marshal(scheduleJSONOf(s))
		if err != nil {
			return fmt.Errorf("encode schedule %q: %w", name, err)
		}
		writeBody(w, "application/json", out)
		return nil
	}
}

// deleteSchedule answers DELETE /rest/schedules/{name}.json: 204.
func (res schedulesResource) remove(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := res.store.DeleteSchedule(r.Context(), name); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
}

// scheduleJSON is a schedule as the interface shows it.
type scheduleJSON struct {
	Name     string          `json:"name"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone"`
	Request  json.RawMessage `json:"request"`
	Created  time.Time       `json:"created"`
	// NextRun is null when the expression fires no more.
	NextRun *time.Time `json:"nextRun"`
	// LastRun is the most recent run; LastStarted the most recent that
	// started a job (the one a run waits for); LastError the most recent
	// that failed. Each null when there is none.
	LastRun     *runJSON `json:"lastRun"`
	LastStarted *runJSON `json:"lastStarted"`
	LastError   *runJSON `json:"lastError"`
}

// runJSON is a run as the interface shows it.
type runJSON struct {
	Due     time.Time `json:"due"`
	At      time.Time `json:"at"`
	Outcome string    `json:"outcome"` // starting, started, skipped or failed
	Job     int64     `json:"job,omitempty"`
	Tasks   []int64   `json:"tasks,omitempty"`
	Reason  string    `json:"reason,omitempty"`
}

func runJSONOf(r *schedule.Run) *runJSON {
	if r == nil {
		return nil
	}
	outcome := string(r.Outcome)
	if r.Outcome == schedule.Claimed {
		outcome = "starting"
	}
	return &runJSON{Due: r.Due, At: r.At, Outcome: outcome, Job: r.Job, Tasks: r.Tasks, Reason: r.Reason}
}

func scheduleJSONOf(s schedule.Schedule) scheduleJSON {
	out := scheduleJSON{Name: s.Name, Cron: s.Cron, Timezone: s.Timezone, Request: s.Request, Created: s.Created,
		LastRun: runJSONOf(s.Last), LastStarted: runJSONOf(s.LastStarted), LastError: runJSONOf(s.LastFailed)}
	if out.Timezone == "" {
		out.Timezone = "UTC"
	}
	if !s.Next.IsZero() {
		out.NextRun = &s.Next
	}
	// The request as it was given: its layer beside the seed request.
	var fields map[string]json.RawMessage
	if json.Unmarshal(s.Request, &fields) == nil && fields != nil {
		fields["layer"], _ = json.Marshal(s.Layer)
		if b, err := json.Marshal(fields); err == nil {
			out.Request = b
		}
	}
	return out
}
