// Package audit keeps the audit trail: one Record per state-changing
// request to the administration interface and per refused request, kept
// in the task store (a Store: internal/state/bolt, internal/state/dynamo)
// for a retention, and read back newest first (Handler, GET
// /rest/audit.json).
//
// The Recorder is an HTTP middleware placed outside the authentication
// middleware, so that it sees refusals too; Identify, placed inside it,
// tells the Recorder who the request was authenticated as, and handlers
// add what they acted on (Note). Refusals are aggregated per client
// address (at most one record per address per RefusalWindow, carrying a
// count), so that a flood of failed logins cannot flood the store.
package audit

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Record is one entry of the audit trail.
type Record struct {
	// ID is the record's key in its store, assigned by Append: the time
	// in Unix nanoseconds (20 digits) and a random suffix, so that ids
	// sort as the records' times. It is the continuation of a listing.
	ID string `json:"id"`
	// At is when the request arrived (UTC).
	At time.Time `json:"at"`
	// Account is who made the request: the authenticated account's name,
	// or for a refused one the name it claimed (Unverified); "" for an
	// anonymous request.
	Account    string `json:"account,omitempty"`
	Unverified bool   `json:"unverified,omitempty"`
	// Role is the authenticated account's role ("" when refused).
	Role string `json:"role,omitempty"`
	// Address is the client address (auth.ClientAddress).
	Address string `json:"address,omitempty"`
	Method  string `json:"method"`
	// Path is the request's path below the base path (no query).
	Path string `json:"path"`
	// Layer is the layer the request named ("" for none or every layer).
	Layer string `json:"layer,omitempty"`
	// Tasks are the ids of the tasks the request created or killed.
	Tasks []int64 `json:"tasks,omitempty"`
	// Status is the HTTP status of the answer; Message a short reason
	// for a failure (4xx, 5xx).
	Status  int    `json:"status"`
	Message string `json:"message,omitempty"`
	// Count is how many refused requests the record stands for (refusals
	// from one address are aggregated); 0 for any other record.
	Count int `json:"count,omitempty"`
}

// Refused says whether status is a refusal: 401, 403 or 429.
func Refused(status int) bool { return status == 401 || status == 403 || status == 429 }

// Query selects records to list.
type Query struct {
	Layer   string    // only records of this layer ("" any)
	Account string    // only records of this account ("" any)
	Since   time.Time // only records at or after Since
	// After continues a listing: only records older than the one of
	// this id (a Page's Next).
	After string
	// Limit is the most records returned (≤ 0: DefaultLimit).
	Limit int
}

// Page is one page of a listing, newest first; Next continues it ("" at
// the end).
type Page struct {
	Records []Record `json:"records"`
	Next    string   `json:"next,omitempty"`
}

// Listing limits.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Store keeps the audit trail. Implementations must pass
// audittest.Run.
type Store interface {
	// Append stores r under a new id (NewID(r.At)).
	Append(ctx context.Context, r Record) error
	// List returns the records matching q, newest first, with a Next when
	// more may follow. Records older than the store's retention are
	// never listed, and are removed (by Append or a TTL).
	List(ctx context.Context, q Query) (Page, error)
}

// DefaultRetention is how long records are kept when the configuration
// does not say (TILECACHE_AUDIT_RETENTION).
const DefaultRetention = 90 * 24 * time.Hour

// NewID returns a new record id for time at: its Unix nanoseconds in 20
// digits, "-", 16 random hex digits. Ids of later times sort after.
func NewID(at time.Time) string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%020d-%016x", at.UnixNano(), binary.BigEndian.Uint64(b[:]))
}

// IDTime returns the time an id was made for, and whether id is well
// formed.
func IDTime(id string) (time.Time, bool) {
	ns, suffix, ok := strings.Cut(id, "-")
	if !ok || len(ns) != 20 || len(suffix) != 16 {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, false
	}
	if _, err := strconv.ParseUint(suffix, 16, 64); err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, n).UTC(), true
}

// TimeKey is the smallest id of time at: every id made for at or later
// sorts at or after it, every earlier one before.
func TimeKey(at time.Time) string {
	n := max(at.UnixNano(), 0)
	return fmt.Sprintf("%020d-", n)
}

// Matches says whether r is selected by q's filters (not its paging).
func (q Query) Matches(r Record) bool {
	return (q.Layer == "" || r.Layer == q.Layer) && (q.Account == "" || r.Account == q.Account) &&
		!r.At.Before(q.Since)
}

// Capped is q's limit within [1, MaxLimit], DefaultLimit for none.
func (q Query) Capped() int {
	switch {
	case q.Limit <= 0:
		return DefaultLimit
	case q.Limit > MaxLimit:
		return MaxLimit
	}
	return q.Limit
}

// MaxMessage is the longest failure message a record keeps, in bytes.
const MaxMessage = 200

// note is what Identify and the handlers tell the Recorder about a request
// in flight, through its context.
type note struct {
	account, role string
	identified    bool
	layer         string
	tasks         []int64
}

type noteKey struct{}

// Note records, for the request whose context is ctx, the layer it acted
// on ("" keeps what is known) and the ids of the tasks it created or
// killed. Outside a Recorder it does nothing.
func Note(ctx context.Context, layer string, tasks ...int64) {
	n, ok := ctx.Value(noteKey{}).(*note)
	if !ok {
		return
	}
	if layer != "" {
		n.layer = layer
	}
	n.tasks = append(n.tasks, tasks...)
}
