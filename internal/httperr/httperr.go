// Package httperr is the one error table of every HTTP answer tilecache
// gives: the administration interface's (package rest) and the public
// tiles' and objects' (package tileserve) take the status and the one line
// they answer for an error from here, worded per kind of operation
// (Failing). Client mistakes are answered 4xx with the error's message;
// internal errors are logged with detail where they are answered and
// answered with a generic line.
package httperr

import (
	"errors"
	"io"
	"net/http"

	"tilecache/internal/apperr"
	"tilecache/internal/onmiss"
)

// The error table: causeStatus comes first: errors answered with a status
// and a fixed reason of their own whatever their kind (a failed render of
// a missing tile; the reason is the error's text, never the upstream's
// words, and the renderer logged the failure where it was made). Every
// other error is answered by its kind, through kindStatus; a kind missing
// there is a 500.
var (
	causeStatus = []struct {
		err    error
		status int
	}{
		{onmiss.ErrUpstreamTimeout, http.StatusGatewayTimeout},
		{onmiss.ErrUpstreamNoImage, http.StatusBadGateway},
		{onmiss.ErrUpstreamError, http.StatusBadGateway},
		{onmiss.ErrBusy, http.StatusServiceUnavailable},
	}
	kindStatus = map[apperr.Kind]int{
		apperr.Invalid:      http.StatusBadRequest,
		apperr.NotFound:     http.StatusNotFound,
		apperr.Conflict:     http.StatusConflict,
		apperr.Precondition: http.StatusPreconditionFailed,
		apperr.TooLarge:     http.StatusRequestEntityTooLarge,
		apperr.Unsupported:  http.StatusUnsupportedMediaType,
		apperr.Unavailable:  http.StatusServiceUnavailable,
		apperr.Internal:     http.StatusInternalServerError,
	}
)

// Failing words the failures of one kind of operation.
type Failing struct {
	// serverSide: the client cannot have caused the failure (a render, a
	// read of the tile store), so every kind but Unavailable is answered
	// as Internal.
	serverSide  bool
	internal    string // the line answered for an Internal error
	unavailable string // the line answered for an Unavailable error; "" for the error's own message
}

// The operations whose failures are answered.
var (
	// Request: a request the client may have got wrong (a handler of the
	// administration interface, a tile's parameters).
	Request = Failing{internal: "Internal server error; see the server log"}
	// Render: a render of a missing tile.
	Render = Failing{serverSide: true, internal: "The tile could not be rendered",
		unavailable: "The tile could not be rendered now; retry shortly"}
	// StoreRead: a read of the tile store.
	StoreRead = Failing{serverSide: true, internal: "The tile store could not be read",
		unavailable: "The tile store could not be read"}
)

// Answer looks err up in the error table: the status, the one line the
// client is told, and whether err is to be logged where it is answered
// (an Internal or Unavailable error; not a cause).
func (f Failing) Answer(err error) (status int, msg string, logIt bool) {
	for _, c := range causeStatus {
		if errors.Is(err, c.err) {
			return c.status, c.err.Error(), false
		}
	}
	kind := apperr.KindOf(err)
	if f.serverSide && kind != apperr.Unavailable {
		kind = apperr.Internal
	}
	status, ok := kindStatus[kind]
	if !ok {
		status = http.StatusInternalServerError
	}
	switch {
	case kind == apperr.Internal:
		return status, f.internal, true
	case kind == apperr.Unavailable && f.unavailable != "":
		return status, f.unavailable, true
	}
	return status, apperr.Message(err), kind == apperr.Unavailable
}

// WriteText writes a one-line text/plain answer.
func WriteText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, msg+"\n")
}
