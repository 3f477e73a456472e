package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// Path is the audit trail's path in the administration interface (an
// extension of this project).
const Path = "/rest/audit.json"

// Handler answers GET Path: the records matching the query's layer,
// account, since (RFC 3339) and after (a previous answer's next), newest
// first, at most limit (1 to MaxLimit, DefaultLimit by default), as JSON
// {"records": [...], "next": "..."}. Refusals counted so far are flushed
// first, so the answer shows them.
func (rec *Recorder) Handler(log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET")
			http.Error(w, "Method "+r.Method+" not allowed on "+r.URL.Path, http.StatusMethodNotAllowed)
			return
		}
		q, err := parseQuery(r)
		if err != nil {
			http.Error(w, "Invalid "+err.Error(), http.StatusBadRequest)
			return
		}
		rec.Flush(context.WithoutCancel(r.Context()))
		page, err := rec.store.List(r.Context(), q)
		if err != nil {
			log.Error("list audit records", "err", err)
			http.Error(w, "The audit trail could not be read; see the server log", http.StatusServiceUnavailable)
			return
		}
		if page.Records == nil {
			page.Records = []Record{}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(page)
	})
}

func parseQuery(r *http.Request) (Query, error) {
	v := r.URL.Query()
	q := Query{Layer: v.Get("layer"), Account: v.Get("account"), After: v.Get("after")}
	if s := v.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return Query{}, fmt.Errorf("since %q: give a time in RFC 3339, such as 2026-12-02T00:00:00Z", s)
		}
		q.Since = t
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			return Query{}, fmt.Errorf("limit %q: give a number from 1 to %d", s, MaxLimit)
		}
		q.Limit = n
	}
	if q.After != "" {
		if _, ok := IDTime(q.After); !ok {
			return Query{}, fmt.Errorf("after %q: give the next of a previous answer", q.After)
		}
	}
	return q, nil
}
