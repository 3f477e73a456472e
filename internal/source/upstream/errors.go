package upstream

import (
	"context"
	"errors"
	"net/http"
)

// Failure is why a fetch from an upstream, or the decoding of its answer,
// failed: what a caller may tell a client, which is never the upstream's
// own words.
type Failure int

// The failures. FailureError is the zero value: an error Classify does not
// recognise is an upstream error.
const (
	// FailureError: the upstream could not be reached, answered an HTTP
	// error status or redirected where it may not; any other failure.
	FailureError Failure = iota
	// FailureTimeout: the request, or the caller's context, ran out of
	// time.
	FailureTimeout
	// FailureNotImage: the upstream answered 200 with something that is
	// not an image, such as a WMS exception or an undecodable body (see
	// DecodeFailure).
	FailureNotImage
)

func (f Failure) String() string {
	switch f {
	case FailureTimeout:
		return "timeout"
	case FailureNotImage:
		return "not an image"
	}
	return "error"
}

// Classify returns the failure of err, an error of Fetch or DecodeFailure,
// possibly wrapped: FailureTimeout when context.DeadlineExceeded is in its
// chain, FailureNotImage when an *Error with status 200 is, else
// FailureError.
func Classify(err error) Failure {
	if errors.Is(err, context.DeadlineExceeded) {
		return FailureTimeout
	}
	if ue, ok := errors.AsType[*Error](err); ok && ue.Status == http.StatusOK {
		return FailureNotImage
	}
	return FailureError
}
