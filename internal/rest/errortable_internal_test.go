package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/auth"
	"tilecache/internal/onmiss"
	"tilecache/internal/task"
)

// TestErrorTable pins what each kind of operation answers for each kind of
// error: the one table, worded per operation.
func TestErrorTable(t *testing.T) {
	upstreamFailure := func(sentinel error) error {
		return apperr.Wrap(apperr.Unavailable, fmt.Errorf("%w: %w", sentinel, errors.New("HTTP 500 from https://wms.example.org/")), "%s", sentinel)
	}
	const (
		generic        = "Internal server error; see the server log"
		notRendered    = "The tile could not be rendered"
		notRenderedNow = "The tile could not be rendered now; retry shortly"
		notRead        = "The tile store could not be read"
		busy           = "too many tiles are being rendered; retry shortly"
	)
	tests := []struct {
		name   string
		f      failing
		err    error
		status int
		msg    string
		logged bool
	}{
		{"request: invalid", failedRequest, apperr.Invalidf("Unknown layer: x"), http.StatusBadRequest, "Unknown layer: x", false},
		{"request: not found", failedRequest, apperr.New(apperr.NotFound, "no task 3"), http.StatusNotFound, "no task 3", false},
		{"request: conflict", failedRequest, apperr.New(apperr.Conflict, "changed"), http.StatusConflict, "changed", false},
		{"request: too large", failedRequest, apperr.New(apperr.TooLarge, "big"), http.StatusRequestEntityTooLarge, "big", false},
		{"request: unsupported", failedRequest, apperr.New(apperr.Unsupported, "text/plain"), http.StatusUnsupportedMediaType, "text/plain", false},
		{"request: unavailable", failedRequest, fmt.Errorf("list tasks: %w", apperr.New(apperr.Unavailable, "The task store is unreachable")),
			http.StatusServiceUnavailable, "The task store is unreachable", true},
		{"request: internal", failedRequest, errors.New("secret detail"), http.StatusInternalServerError, generic, true},
		{"render: timeout", failedRender, upstreamFailure(onmiss.ErrUpstreamTimeout), http.StatusGatewayTimeout, "upstream timeout", false},
		{"render: not an image", failedRender, upstreamFailure(onmiss.ErrUpstreamNoImage), http.StatusBadGateway, "upstream answered no valid tile", false},
		{"render: upstream error", failedRender, upstreamFailure(onmiss.ErrUpstreamError), http.StatusBadGateway, "upstream error", false},
		{"render: remembered failure", failedRender, onmiss.ErrUpstreamError, http.StatusBadGateway, "upstream error", false},
		{"render: busy", failedRender, onmiss.ErrBusy, http.StatusServiceUnavailable, busy, false},
		{"render: busy wrapped", failedRender, fmt.Errorf("wait: %w", onmiss.ErrBusy), http.StatusServiceUnavailable, busy, false},
		{"render: unavailable", failedRender, apperr.New(apperr.Unavailable, "claims unreachable"), http.StatusServiceUnavailable, notRenderedNow, true},
		{"render: invalid is ours", failedRender, apperr.Invalidf("bad"), http.StatusInternalServerError, notRendered, true},
		{"render: internal", failedRender, context.Canceled, http.StatusInternalServerError, notRendered, true},
		{"store read: unavailable", failedStoreRead, apperr.New(apperr.Unavailable, "S3 unreachable"), http.StatusServiceUnavailable, notRead, true},
		{"store read: invalid is ours", failedStoreRead, apperr.Invalidf("bad key"), http.StatusInternalServerError, notRead, true},
		{"store read: internal", failedStoreRead, errors.New("disk"), http.StatusInternalServerError, notRead, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, msg, logged := tt.f.answer(tt.err)
			if status != tt.status || msg != tt.msg || logged != tt.logged {
				t.Errorf("got %d %q logged=%v, want %d %q logged=%v", status, msg, logged, tt.status, tt.msg, tt.logged)
			}
		})
	}
}

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
