package task

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// Failure records why a task ended ABORTED other than by a kill request:
// its failure budget was exhausted, a tile failed with retries off, or its
// request could no longer be worked (a fatal error). It is kept for
// FailureKeep after At, so a console can show it long after the task left
// the status lists (contract §5.4 keeps finished tasks listed for seconds).
type Failure struct {
	ID     int64     `json:"id"`
	JobID  int64     `json:"job"`
	Layer  string    `json:"layer"`
	Type   Type      `json:"type"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	Done   int64     `json:"done"`
	Total  int64     `json:"total"`
}

// MaxFailureReason is the longest reason a failure keeps, in bytes; a
// longer one is cut at a rune boundary and ends with "…".
const MaxFailureReason = 300

// FailureKeep is how long a store keeps a failure.
const FailureKeep = 24 * time.Hour

// TrimReason bounds a failure reason to MaxFailureReason bytes, on one line.
func TrimReason(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= MaxFailureReason {
		return s
	}
	const ell = "…"
	cut := MaxFailureReason - len(ell)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ell
}

// FailureStore keeps the failures of tasks. The task stores implement it
// beside Store; implementations must pass tasktest.RunFailures.
type FailureStore interface {
	// RecordFailure stores f (its Reason trimmed by TrimReason) unless a
	// failure of the same task id is recorded: the first cause is kept
	// (lanes of a job that abort together may each report one).
	RecordFailure(ctx context.Context, f Failure) error
	// Failures returns the recorded failures whose At is at or after
	// since, newest task id first, at most limit (≤ 0: no limit).
	Failures(ctx context.Context, since time.Time, limit int) ([]Failure, error)
}
