package rest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/auth"
	"tilecache/internal/task"
)

// listFunc is a TaskLister whose answer the test chooses (an error path no
// real task store produces on demand).
type listFunc func(ctx context.Context, layer string) ([]task.Task, error)

func (f listFunc) List(ctx context.Context, layer string) ([]task.Task, error) { return f(ctx, layer) }

// listTasks is Tasks answering List with list; the route under test calls
// nothing else.
type listTasks struct {
	Tasks
	list listFunc
}

func (l listTasks) List(ctx context.Context, layer string) ([]task.Task, error) {
	return l.list(ctx, layer)
}

// TestHandlerAnswersErrorsFromTheTable: a handler's error is answered
// through the table, an internal one without its detail.
func TestHandlerAnswersErrorsFromTheTable(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
		body   string
	}{
		{apperr.New(apperr.Unavailable, "The task store is unreachable"), http.StatusServiceUnavailable, "The task store is unreachable\n"},
		{errors.New("secret detail"), http.StatusInternalServerError, "Internal server error; see the server log\n"},
	} {
		h := New(Services{Tasks: listTasks{list: func(context.Context, string) ([]task.Task, error) { return nil, tt.err }}},
			Options{}, slog.New(slog.DiscardHandler))
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/rest/seed.json", nil)
		h.ServeHTTP(rec, req.WithContext(auth.WithPrincipal(req.Context(), auth.Principal{Name: "admin", Role: auth.Admin})))
		if rec.Code != tt.status || rec.Body.String() != tt.body {
			t.Errorf("%v: got %d %q, want %d %q", tt.err, rec.Code, rec.Body.String(), tt.status, tt.body)
		}
	}
}
