// Package apperr defines the closed set of error kinds the application uses.
//
// Adapters translate their SDK's errors into these kinds at the boundary; the
// REST layer owns the single table that maps a kind to an HTTP status. A
// message carried by an *Error is safe to show to a client; anything else is
// logged and answered with a generic message.
package apperr

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

// The kinds. Internal is the zero value so that an unclassified error is
// never mistaken for a client mistake.
const (
	Internal     Kind = iota // a fault of ours; logged, answered generically
	Invalid                  // the client's input is wrong; the message says how
	NotFound                 // the named thing does not exist
	Conflict                 // a conditional update lost a race or met an unexpected state
	Unavailable              // a dependency cannot be reached; retrying may help
	TooLarge                 // the request body exceeds the limit
	Unsupported              // the request body's media type is not one the endpoint takes
	Precondition             // a conditional request's precondition (If-Match) does not hold
)

func (k Kind) String() string {
	switch k {
	case Invalid:
		return "invalid"
	case NotFound:
		return "not found"
	case Conflict:
		return "conflict"
	case Precondition:
		return "precondition failed"
	case Unavailable:
		return "unavailable"
	case TooLarge:
		return "too large"
	case Unsupported:
		return "unsupported media type"
	default:
		return "internal"
	}
}

// Error is an error with a kind and a message that is safe to show a client.
type Error struct {
	Kind    Kind
	Message string
	Err     error // optional cause, never shown to clients
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error of kind k with a formatted, client-safe message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of kind k whose cause is err.
func Wrap(k Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...), Err: err}
}

// Invalidf is shorthand for New(Invalid, ...).
func Invalidf(format string, args ...any) *Error { return New(Invalid, format, args...) }

// KindOf reports the kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err carries kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// Message returns the client-safe message of the first *Error in err's chain.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal server error"
}

// Show makes client-supplied text safe to put in a one-line error message:
// long text is cut, and text with control characters or invalid UTF-8 is
// quoted. The empty string is shown as "".
func Show(s string) string {
	const max = 100
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError || r == '\u2028' || r == '\u2029' || (r >= 0x80 && r < 0xa0) {
			return strconv.Quote(s)
		}
	}
	return s
}
