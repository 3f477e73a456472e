package tasktest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"tilecache/internal/task"
)

// RunFailures is the conformance suite of task.FailureStore; newStore
// must return a fresh, empty store per call.
func RunFailures(t *testing.T, newStore func(t *testing.T) task.FailureStore) {
	// Times near now: a store may drop records by their age (a TTL).
	now := time.Now().UTC().Truncate(time.Millisecond)
	failure := func(id int64, ago time.Duration, reason string) task.Failure {
		return task.Failure{ID: id, JobID: id - 1, Layer: "topp:states", Type: task.Reseed, Reason: reason,
			At: now.Add(-ago), Done: id * 10, Total: id * 100}
	}

	t.Run("Empty", func(t *testing.T) {
		got, err := newStore(t).Failures(t.Context(), time.Time{}, 0)
		if err != nil || len(got) != 0 {
			t.Fatalf("Failures of an empty store = %v, %v; want none", got, err)
		}
	})

	t.Run("NewestFirstSinceAndLimit", func(t *testing.T) {
		s := newStore(t)
		want := map[int64]task.Failure{}
		for _, f := range []task.Failure{
			failure(5, 3*time.Hour, "job 4 aborted: 3 tile failures reached its budget of 3"),
			failure(7, time.Hour, "tile failure with retries off: upstream answered 500"),
			failure(6, 2*time.Hour, "the layer no longer has grid set EPSG:4326"),
		} {
			if err := s.RecordFailure(t.Context(), f); err != nil {
				t.Fatalf("RecordFailure %d: %v", f.ID, err)
			}
			want[f.ID] = f
		}
		got, err := s.Failures(t.Context(), now.Add(-4*time.Hour), 0)
		if err != nil {
			t.Fatal(err)
		}
		if ids := failureIDs(got); !equalIDs(ids, []int64{7, 6, 5}) {
			t.Fatalf("ids = %v, want [7 6 5]", ids)
		}
		for _, f := range got {
			w := want[f.ID]
			if f.JobID != w.JobID || f.Layer != w.Layer || f.Type != w.Type || f.Reason != w.Reason ||
				!f.At.Equal(w.At) || f.Done != w.Done || f.Total != w.Total {
				t.Errorf("failure %d = %+v, want %+v", f.ID, f, w)
			}
		}
		got, err = s.Failures(t.Context(), now.Add(-150*time.Minute), 0)
		if ids := failureIDs(got); err != nil || !equalIDs(ids, []int64{7, 6}) {
			t.Fatalf("since 2h30 ago: ids %v, %v; want [7 6]", ids, err)
		}
		got, err = s.Failures(t.Context(), now.Add(-4*time.Hour), 2)
		if ids := failureIDs(got); err != nil || !equalIDs(ids, []int64{7, 6}) {
			t.Fatalf("limit 2: ids %v, %v; want [7 6]", ids, err)
		}
	})

	t.Run("KeepsTheFirstAndTrims", func(t *testing.T) {
		s := newStore(t)
		long := "upstream said:\n" + strings.Repeat("é<b>", 200)
		if err := s.RecordFailure(t.Context(), failure(9, 0, long)); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordFailure(t.Context(), failure(9, time.Minute, "second")); err != nil {
			t.Fatal(err)
		}
		got, err := s.Failures(t.Context(), now.Add(-time.Hour), 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("Failures = %v, %v; want the one record of task 9", got, err)
		}
		r := got[0].Reason
		if len(r) > task.MaxFailureReason || !utf8.ValidString(r) || !strings.HasPrefix(r, "upstream said: é<b>") ||
			!strings.HasSuffix(r, "…") || strings.Contains(r, "\n") {
			t.Fatalf("reason (%d bytes) = %q; want the long one on one line, cut to at most %d bytes ending with …", len(r), r, task.MaxFailureReason)
		}
		if !got[0].At.Equal(now) {
			t.Fatalf("At = %v, want the first record's %v", got[0].At, now)
		}
	})
}

func failureIDs(fs []task.Failure) []int64 {
	out := make([]int64, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
