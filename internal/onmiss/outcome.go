package onmiss

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/source/upstream"
)

// How a render on miss of a metatile ended, as remembered for a while in
// the metatile's claim (a note, see Claims.Settle) and in this process's
// memo: rendered (with the positions of the tiles that came out blank and
// were not stored), or failed upstream (with the fixed reason).
//
// Notes are "ok <hex bitset of blank tiles>" or "fail <kind>"; bit i is
// the tile at column i%w, row i/w of the metatile (from its lowest x, y).
type outcome struct {
	failed string // a failure kind (failError, failTimeout, failNoImage); "" when rendered
	blank  []byte // bitset of the metatile's blank tiles when rendered
}

// The failure kinds of a render on miss, each with its fixed one-line
// reason: what a client is told, never the upstream's own words.
const (
	failError   = "error"
	failTimeout = "timeout"
	failNoImage = "noimage"
)

var (
	// ErrUpstreamTimeout marks a render on miss that ran out of time (504).
	ErrUpstreamTimeout = errors.New("upstream timeout")
	// ErrUpstreamError marks a render on miss whose upstream failed (502).
	ErrUpstreamError = errors.New("upstream error")
	// ErrUpstreamNoImage marks a render on miss whose upstream answered
	// something that is not a tile of the layer's format, such as a WMS
	// exception or a vector tile that fails its check (502).
	ErrUpstreamNoImage = errors.New("upstream answered no valid tile")
	// ErrBusy is returned when a miss could not get a render slot in time,
	// or too many misses already wait in this process (503, Retry-After).
	ErrBusy = apperr.New(apperr.Unavailable, "too many tiles are being rendered; retry shortly")
)

// failKinds maps a failure kind to its error.
var failKinds = map[string]error{failError: ErrUpstreamError, failTimeout: ErrUpstreamTimeout, failNoImage: ErrUpstreamNoImage}

// failure is the error of a failed render of kind, wrapping cause (nil
// when the failure is remembered rather than seen).
func failure(kind string, cause error) error {
	sentinel := failKinds[kind]
	err := sentinel
	if cause != nil {
		err = fmt.Errorf("%w: %w", sentinel, cause)
	}
	return apperr.Wrap(apperr.Unavailable, err, "%s", sentinel.Error())
}

// failKind classifies a source failure: a timeout, an answer that is not
// an image (a WMS exception delivered as 200, an undecodable body), or any
// other upstream error.
func failKind(err error) string {
	return [...]string{upstream.FailureError: failError, upstream.FailureTimeout: failTimeout, upstream.FailureNotImage: failNoImage}[upstream.Classify(err)]
}

func (o outcome) note() string {
	if o.failed != "" {
		return "fail " + o.failed
	}
	return "ok " + hex.EncodeToString(o.blank)
}

// parseOutcome reads a note; ok is false for a note that is not an outcome.
func parseOutcome(note string) (outcome, bool) {
	kind, rest, _ := strings.Cut(note, " ")
	switch kind {
	case "ok":
		b, err := hex.DecodeString(rest)
		return outcome{blank: b}, err == nil
	case "fail":
		_, known := failKinds[rest]
		return outcome{failed: rest}, known
	}
	return outcome{}, false
}

// isBlank reports whether the tile at bit i came out blank.
func (o outcome) isBlank(i int) bool {
	return i/8 < len(o.blank) && o.blank[i/8]&(1<<(i%8)) != 0
}

func setBit(b []byte, i int) { b[i/8] |= 1 << (i % 8) }

// missMemo remembers outcomes in this process, so that repeated misses of
// a blank or failing metatile cost no store read at all. It holds at most
// memoCap entries; when full, expired ones go, and if none has expired it
// starts over (the task store still remembers).
type missMemo struct {
	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	o     outcome
	until time.Time
}

const memoCap = 8192

func (mm *missMemo) recall(key string, now time.Time) (outcome, bool) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	e, ok := mm.m[key]
	if !ok || !now.Before(e.until) {
		return outcome{}, false
	}
	return e.o, true
}

func (mm *missMemo) remember(key string, o outcome, until, now time.Time) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.m == nil {
		mm.m = map[string]memoEntry{}
	}
	if len(mm.m) >= memoCap {
		for k, e := range mm.m {
			if !now.Before(e.until) {
				delete(mm.m, k)
			}
		}
		if len(mm.m) >= memoCap {
			clear(mm.m)
		}
	}
	mm.m[key] = memoEntry{o: o, until: until}
}

func (mm *missMemo) forget(key string) {
	mm.mu.Lock()
	defer mm.mu.Unlock()
	delete(mm.m, key)
}
