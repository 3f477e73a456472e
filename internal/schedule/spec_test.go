package schedule_test

import (
	"strings"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/schedule"
)

func TestNext(t *testing.T) {
	winter := time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)
	summer := time.Date(2026, 7, 15, 10, 30, 0, 0, time.UTC)
	tests := []struct {
		name, cron, tz string
		after, want    time.Time
	}{
		{"daily at 3, UTC", "0 3 * * *", "", winter, time.Date(2026, 1, 16, 3, 0, 0, 0, time.UTC)},
		{"strictly after", "30 10 * * *", "", winter, time.Date(2026, 1, 16, 10, 30, 0, 0, time.UTC)},
		{"daily at 3, Paris in winter", "0 3 * * *", "Europe/Paris", winter, time.Date(2026, 1, 16, 2, 0, 0, 0, time.UTC)},
		{"daily at 3, Paris in summer", "0 3 * * *", "Europe/Paris", summer, time.Date(2026, 7, 16, 1, 0, 0, 0, time.UTC)},
		{"@daily", "@daily", "", winter, time.Date(2026, 1, 16, 0, 0, 0, 0, time.UTC)},
		{"@hourly", "@hourly", "UTC", winter, time.Date(2026, 1, 15, 11, 0, 0, 0, time.UTC)},
		{"every 15 minutes", "*/15 * * * *", "", winter, time.Date(2026, 1, 15, 10, 45, 0, 0, time.UTC)},
		{"weekdays", "0 6 * * 1-5", "", time.Date(2026, 1, 16, 7, 0, 0, 0, time.UTC), time.Date(2026, 1, 19, 6, 0, 0, 0, time.UTC)},
		{"@every 90m", "@every 90m", "", winter, winter.Add(90 * time.Minute)},
		{"spaces around", "  0 3 * * *  ", "", winter, time.Date(2026, 1, 16, 3, 0, 0, 0, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := schedule.ParseSpec(tc.cron, tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			got := spec.Next(tc.after)
			if !got.Equal(tc.want) || got.Location() != time.UTC {
				t.Fatalf("got %v, want %v (UTC)", got, tc.want)
			}
		})
	}
}

func TestParseSpecRefuses(t *testing.T) {
	tests := []struct {
		name, cron, tz, want string
	}{
		{"empty", "", "", "needs a cron expression"},
		{"four fields", "0 3 * *", "", "Invalid cron expression 0 3 * *"},
		{"seconds field", "0 0 3 * * *", "", "Invalid cron expression"},
		{"minute out of range", "61 * * * *", "", "Invalid cron expression 61 * * * *"},
		{"unknown descriptor", "@fortnightly", "", "Invalid cron expression @fortnightly"},
		{"every too short", "@every 10s", "", "at least 1m0s"},
		{"zone in the expression", "TZ=Europe/Paris 0 3 * * *", "", "give the time zone in \"timezone\""},
		{"zone prefix alone", "CRON_TZ=UTC", "", "give the time zone in \"timezone\""},
		{"unknown zone", "0 3 * * *", "Mars/Olympus_Mons", "Unknown time zone Mars/Olympus_Mons"},
		{"machine's zone", "0 3 * * *", "Local", "Unknown time zone Local"},
		{"path as zone", "0 3 * * *", "../../etc/passwd", "Unknown time zone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schedule.ParseSpec(tc.cron, tc.tz)
			if !apperr.Is(err, apperr.Invalid) || !strings.Contains(apperr.Message(err), tc.want) {
				t.Fatalf("got %v, want an Invalid error containing %q", err, tc.want)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	now := time.Date(2026, 1, 15, 10, 30, 0, 0, time.UTC)
	tests := []struct {
		name, sched, cron string
		body              int
		kind              apperr.Kind
		want              string
	}{
		{"no name", "", "@daily", 10, apperr.Invalid, "needs a name"},
		{"slash in name", "a/b", "@daily", 10, apperr.Invalid, "Invalid schedule name a/b"},
		{"leading dot", ".hidden", "@daily", 10, apperr.Invalid, "Invalid schedule name .hidden"},
		{"long name", strings.Repeat("n", schedule.MaxNameLength+1), "@daily", 10, apperr.Invalid, "longer than 100"},
		{"never fires", "feb30", "0 0 30 2 *", 10, apperr.Invalid, "never fires"},
		{"large request", "big", "@daily", schedule.MaxRequestSize + 1, apperr.TooLarge, "limited to 256 KiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schedule.New(tc.sched, tc.cron, "", "topp:states", make([]byte, tc.body), now)
			if !apperr.Is(err, tc.kind) || !strings.Contains(apperr.Message(err), tc.want) {
				t.Fatalf("got %v, want a %v error containing %q", err, tc.kind, tc.want)
			}
		})
	}
	s, err := schedule.New("nightly-1.a_b", "0 3 * * *", "", "topp:states", []byte("{}"), now.In(time.FixedZone("X", 7200)))
	if err != nil || !s.Next.Equal(time.Date(2026, 1, 16, 3, 0, 0, 0, time.UTC)) || s.Created.Location() != time.UTC {
		t.Fatalf("got %+v, %v", s, err)
	}
}

// FuzzParseSpec: no expression or zone makes the parser panic, and an
// accepted one has a next time in UTC (or none).
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"0 3 * * *", "@daily", "@every 1h", "*/5 1-3 1,15 * MON-FRI", "CRON_TZ=UTC", "TZ= ", "0 0 30 2 *", "@every -1m", "1-0/0 * * * *"} {
		f.Add(s, "")
	}
	f.Add("0 3 * * *", "Europe/Paris")
	now := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr, tz string) {
		spec, err := schedule.ParseSpec(expr, tz)
		if err != nil {
			if !apperr.Is(err, apperr.Invalid) {
				t.Fatalf("%q in %q: error %v is not Invalid", expr, tz, err)
			}
			return
		}
		if n := spec.Next(now); !n.IsZero() && (n.Location() != time.UTC || !n.After(now)) {
			t.Fatalf("%q in %q: next %v", expr, tz, n)
		}
	})
}
