// Package schedule keeps saved seed, reseed and truncate requests that run
// on a cron schedule, and fires them when they are due.
//
// A Schedule holds a request exactly as POST /rest/seed/{layer}.json takes
// it (the layer and the JSON body), a cron expression and a time zone, and
// the time it is next due. The Store port persists schedules beside the
// tasks (bbolt locally, DynamoDB on AWS); every implementation passes
// scheduletest.Run.
//
// # Firing exactly once
//
// A Ticker fires the schedules that are due. To fire one, it first claims
// the due time: Store.ClaimRun moves the schedule's Next from the due time
// to the following one in one conditional write (a compare-and-set on
// Next), so of several processes (or Lambda invocations) that wake at once
// exactly one wins the claim and starts the request. The following time is
// computed from the moment of the claim, not from the due time: runs missed
// while no process was up fire once, not once per missed slot.
//
// The claimant then starts the request unless the job of the schedule's
// previous run still has a PENDING or RUNNING task (a schedule never runs
// two copies of its request at once): then it records a skipped run and
// says why. A process that dies between its claim and its record loses that
// one run; the schedule fires again at its next time.
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"tilecache/internal/apperr"
)

// Schedule is a saved request and when it runs.
type Schedule struct {
	// Name identifies the schedule: letters, digits, '.', '_' and '-',
	// starting with a letter or digit, at most MaxNameLength characters.
	Name string `json:"name"`
	// Cron is the cron expression (five fields, or a descriptor such as
	// @daily), read in Timezone.
	Cron string `json:"cron"`
	// Timezone is the IANA name of the time zone of Cron; "" is UTC.
	Timezone string `json:"timezone,omitempty"`
	// Layer is the layer of the request (the {layer} of its path).
	Layer string `json:"layer"`
	// Request is the request's body as POST /rest/seed/{layer}.json
	// takes it: {"seedRequest": {…}}. It is decoded again at every run,
	// so it runs as the current code reads such a request.
	Request json.RawMessage `json:"request"`
	// Created is when the schedule was saved.
	Created time.Time `json:"created"`
	// Next is the time the schedule is next due (UTC); zero when its
	// expression has no time left to fire (a date that never comes). A due
	// time is claimed by moving Next past it (Store.ClaimRun).
	Next time.Time `json:"next"`
	// Last is the most recent run, whatever its outcome; its Outcome is
	// empty from its claim until its outcome is recorded.
	Last *Run `json:"last,omitempty"`
	// LastStarted is the most recent run that started a job: the next run
	// is skipped while that job still has a PENDING or RUNNING task.
	LastStarted *Run `json:"lastStarted,omitempty"`
	// LastFailed is the most recent run that failed, kept when later runs
	// succeed (its Due says how old it is).
	LastFailed *Run `json:"lastFailed,omitempty"`
}

// Outcome is what a run did.
type Outcome string

// The outcomes of a run.
const (
	// Claimed: the run's due time is claimed and its outcome not recorded
	// yet (or never, when its process died).
	Claimed Outcome = ""
	// Started: the request was submitted; the run holds its job and tasks.
	Started Outcome = "started"
	// Skipped: the previous run's job was still going; Reason says how.
	Skipped Outcome = "skipped"
	// Failed: the request could not be submitted; Reason says why.
	Failed Outcome = "failed"
)

// Run is one firing of a schedule.
type Run struct {
	// Due is the due time the run claimed (the schedule's Next before the
	// claim); runs of one schedule are told apart by it.
	Due time.Time `json:"due"`
	// At is when the run was claimed.
	At      time.Time `json:"at"`
	Outcome Outcome   `json:"outcome,omitempty"`
	// Job and Tasks are the job and the task ids a started run created.
	Job   int64   `json:"job,omitempty"`
	Tasks []int64 `json:"tasks,omitempty"`
	// Reason says why a run was skipped or failed, in words safe to show
	// a client.
	Reason string `json:"reason,omitempty"`
}

// Store persists schedules. Implementations must pass scheduletest.Run.
//
// A missing schedule is apperr.NotFound; times are returned in UTC. A
// stored schedule that does not decode (damaged by hand, written by
// another version) is left out of the listings, which report it among
// their Unreadable, and reading it alone is an error wrapping
// ErrUnreadable: one such item never hides the others.
type Store interface {
	// CreateSchedule stores s; apperr.Conflict when a schedule named
	// s.Name exists, or when the store holds MaxSchedules schedules
	// already (the message names the limit).
	CreateSchedule(ctx context.Context, s Schedule) error
	// Schedule returns the schedule called name.
	Schedule(ctx context.Context, name string) (Schedule, error)
	// Schedules returns every schedule that decodes, sorted by name
	// (none is an empty list), and those that do not.
	Schedules(ctx context.Context) ([]Schedule, []Unreadable, error)
	// NextRuns returns the name and next due time of every schedule,
	// sorted by name, reading nothing else (not the requests, up to
	// MaxRequestSize each), and the items it cannot read. It is what the
	// ticker reads at every tick; it may lag a write by a moment (a due
	// time is claimed by ClaimRun, conditionally, whatever it read).
	NextRuns(ctx context.Context) ([]NextRun, []Unreadable, error)
	// DeleteSchedule removes the schedule called name (one that does not
	// decode too); a run it started goes on.
	DeleteSchedule(ctx context.Context, name string) error
	// ClaimRun claims the due time due of the schedule called name: when
	// its Next equals due, it sets Next to next and Last to run (whose Due
	// is due) in one atomic, conditional write and returns true. It
	// returns false, changing nothing, when Next differs (another process
	// claimed the time first) or the schedule is gone.
	ClaimRun(ctx context.Context, name string, due, next time.Time, run Run) (bool, error)
	// RecordRun records the outcome of a claimed run: when Last is still
	// the run claimed for run.Due, it sets Last to run, and LastStarted
	// (Outcome Started) or LastFailed (Outcome Failed) too, and returns
	// true. It returns false, changing nothing, when a later run was
	// claimed since or the schedule is gone.
	RecordRun(ctx context.Context, name string, run Run) (bool, error)
}

// NextRun is a schedule's name and the time it is next due (zero: none).
type NextRun struct {
	Name string
	Next time.Time
}

// Unreadable is a stored schedule a listing left out: its name (as its
// key says) and why it does not decode.
type Unreadable struct {
	Name string
	Err  error
}

// ErrUnreadable is wrapped by the error of reading a stored schedule that
// does not decode.
var ErrUnreadable = errors.New("stored schedule does not decode")

// MaxSchedules is the most schedules a store holds: the ticker reads the
// next due time of each every minute.
const MaxSchedules = 1000

// TooMany is the error of a CreateSchedule when the store holds
// MaxSchedules schedules.
func TooMany() error {
	return apperr.New(apperr.Conflict, "There are %d schedules, the most there may be: delete one before creating another", MaxSchedules)
}

// MaxNameLength is the longest schedule name.
const MaxNameLength = 100

// MaxRequestSize is the largest request body a schedule holds: with the
// rest of the schedule it stays well within a DynamoDB item (400 KB).
const MaxRequestSize = 256 << 10

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckName returns an apperr.Invalid error naming the problem when name
// cannot name a schedule.
func CheckName(name string) error {
	switch {
	case name == "":
		return apperr.Invalidf("A schedule needs a name")
	case len(name) > MaxNameLength:
		return apperr.Invalidf("Schedule name %s is longer than %d characters", apperr.Show(name), MaxNameLength)
	case !validName.MatchString(name):
		return apperr.Invalidf("Invalid schedule name %s: use letters, digits, '.', '_' and '-', starting with a letter or digit", apperr.Show(name))
	}
	return nil
}

// New returns a schedule of the request body (POST /rest/seed/{layer}.json's)
// on layer, saved at now: its name, cron expression and time zone are
// checked (apperr.Invalid naming the problem) and Next is its first time
// after now. The request itself is the caller's to validate.
func New(name, cron, timezone, layer string, request json.RawMessage, now time.Time) (Schedule, error) {
	if err := CheckName(name); err != nil {
		return Schedule{}, err
	}
	if len(request) > MaxRequestSize {
		return Schedule{}, apperr.New(apperr.TooLarge, "The request of a schedule is limited to %d KiB; this one has %d bytes", MaxRequestSize>>10, len(request))
	}
	spec, err := ParseSpec(cron, timezone)
	if err != nil {
		return Schedule{}, err
	}
	next := spec.Next(now)
	if next.IsZero() {
		return Schedule{}, apperr.Invalidf("Cron expression %s never fires", apperr.Show(cron))
	}
	return Schedule{
		Name: name, Cron: cron, Timezone: timezone, Layer: layer, Request: request,
		Created: now.UTC(), Next: next,
	}, nil
}
