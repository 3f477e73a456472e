package httperr_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"tilecache/internal/apperr"
	"tilecache/internal/httperr"
	"tilecache/internal/onmiss"
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
		f      httperr.Failing
		err    error
		status int
		msg    string
		logged bool
	}{
		{"request: invalid", httperr.Request, apperr.Invalidf("Unknown layer: x"), http.StatusBadRequest, "Unknown layer: x", false},
		{"request: not found", httperr.Request, apperr.New(apperr.NotFound, "no task 3"), http.StatusNotFound, "no task 3", false},
		{"request: conflict", httperr.Request, apperr.New(apperr.Conflict, "changed"), http.StatusConflict, "changed", false},
		{"request: too large", httperr.Request, apperr.New(apperr.TooLarge, "big"), http.StatusRequestEntityTooLarge, "big", false},
		{"request: unsupported", httperr.Request, apperr.New(apperr.Unsupported, "text/plain"), http.StatusUnsupportedMediaType, "text/plain", false},
		{"request: unavailable", httperr.Request, fmt.Errorf("list tasks: %w", apperr.New(apperr.Unavailable, "The task store is unreachable")),
			http.StatusServiceUnavailable, "The task store is unreachable", true},
		{"request: internal", httperr.Request, errors.New("secret detail"), http.StatusInternalServerError, generic, true},
		{"render: timeout", httperr.Render, upstreamFailure(onmiss.ErrUpstreamTimeout), http.StatusGatewayTimeout, "upstream timeout", false},
		{"render: not an image", httperr.Render, upstreamFailure(onmiss.ErrUpstreamNoImage), http.StatusBadGateway, "upstream answered no valid tile", false},
		{"render: upstream error", httperr.Render, upstreamFailure(onmiss.ErrUpstreamError), http.StatusBadGateway, "upstream error", false},
		{"render: remembered failure", httperr.Render, onmiss.ErrUpstreamError, http.StatusBadGateway, "upstream error", false},
		{"render: busy", httperr.Render, onmiss.ErrBusy, http.StatusServiceUnavailable, busy, false},
		{"render: busy wrapped", httperr.Render, fmt.Errorf("wait: %w", onmiss.ErrBusy), http.StatusServiceUnavailable, busy, false},
		{"render: unavailable", httperr.Render, apperr.New(apperr.Unavailable, "claims unreachable"), http.StatusServiceUnavailable, notRenderedNow, true},
		{"render: invalid is ours", httperr.Render, apperr.Invalidf("bad"), http.StatusInternalServerError, notRendered, true},
		{"render: internal", httperr.Render, context.Canceled, http.StatusInternalServerError, notRendered, true},
		{"store read: unavailable", httperr.StoreRead, apperr.New(apperr.Unavailable, "S3 unreachable"), http.StatusServiceUnavailable, notRead, true},
		{"store read: invalid is ours", httperr.StoreRead, apperr.Invalidf("bad key"), http.StatusInternalServerError, notRead, true},
		{"store read: internal", httperr.StoreRead, errors.New("disk"), http.StatusInternalServerError, notRead, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, msg, logged := tt.f.Answer(tt.err)
			if status != tt.status || msg != tt.msg || logged != tt.logged {
				t.Errorf("got %d %q logged=%v, want %d %q logged=%v", status, msg, logged, tt.status, tt.msg, tt.logged)
			}
		})
	}
}
