package schedule

import (
	"strings"
	"time"
	// Time zones come with the program: a Lambda runtime image need not
	// have the system's zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"tilecache/internal/apperr"
)

// MinEvery is the shortest interval of an @every expression: schedules are
// checked about once a minute (every minute on AWS), so a shorter one would
// not run at its interval anyway.
const MinEvery = time.Minute

// Spec is a parsed cron expression in its time zone.
type Spec struct {
	sched cron.Schedule
}

// parser reads the standard five fields (minute, hour, day of month,
// month, day of week) and the descriptors (@yearly, @monthly, @weekly,
// @daily, @hourly, @every <duration>).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec parses a cron expression read in the IANA time zone timezone
// ("" is UTC). Errors are apperr.Invalid naming the problem.
func ParseSpec(expr, timezone string) (Spec, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return Spec{}, apperr.Invalidf("A schedule needs a cron expression, e.g. \"0 3 * * *\" or \"@daily\"")
	}
	// The parser's own TZ= prefix would be a second way to name the zone
	// (and it panics on a prefix without an expression).
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return Spec{}, apperr.Invalidf("Invalid cron expression %s: give the time zone in \"timezone\", not in the expression", apperr.Show(expr))
	}
	loc, err := Location(timezone)
	if err != nil {
		return Spec{}, err
	}
	sched, err := parser.Parse(expr)
	if err != nil {
		return Spec{}, apperr.Wrap(apperr.Invalid, err, "Invalid cron expression %s: %s", apperr.Show(expr), apperr.Show(err.Error()))
	}
	switch s := sched.(type) {
	case *cron.SpecSchedule:
		s.Location = loc
	case cron.ConstantDelaySchedule:
		if s.Delay < MinEvery {
			return Spec{}, apperr.Invalidf("Invalid cron expression %s: @every needs an interval of at least %v", apperr.Show(expr), MinEvery)
		}
	}
	return Spec{sched: sched}, nil
}

// Location loads the IANA time zone name ("" and "UTC" are UTC). "Local"
// is refused: it would depend on the machine that runs the schedule.
func Location(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if strings.EqualFold(name, "local") {
		return nil, apperr.Invalidf("Unknown time zone Local: name an IANA time zone such as Europe/Paris, or leave timezone out for UTC")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "Unknown time zone %s: name an IANA time zone such as Europe/Paris", apperr.Show(name))
	}
	return loc, nil
}

// Next returns the first time the expression fires strictly after t, in
// UTC; the zero time when it fires no more (within five years).
func (s Spec) Next(t time.Time) time.Time {
	n := s.sched.Next(t)
	if n.IsZero() {
		return n
	}
	return n.UTC()
}
