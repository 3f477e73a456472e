// Package scheduletest is the conformance suite every schedule.Store must
// pass, and the test of the schedule.Ticker on that store: firing once,
// skipping while the previous run's job is going, firing again after it
// finished, and concurrent tickers firing each due time once.
package scheduletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/schedule"
	"tilecache/internal/task"
)

// Stores is what the suite runs against: a schedule store that is also the
// task store whose tasks the ticker reads (each adapter package passes
// one value holding both of its ports over one table or file).
type Stores interface {
	schedule.Store
	task.Store
}

// request is a stored request body, compact as the stores may keep it.
const request = `{"seedRequest":{"zoomStart":0,"zoomStop":2,"threadCount":2}}`

// Damage makes the stored schedule called name undecodable, as a hand
// edit or another version's write could: the adapter's own test knows
// how its items look.
type Damage func(t *testing.T, s Stores, name string)

// Harness is what every test of the suite runs against.
type Harness struct {
	NewStore func(t *testing.T) Stores
	Damage   Damage
}

// Test is one behaviour of the suite.
type Test struct {
	Name string
	Run  func(t *testing.T, h Harness)
}

// Tests lists the suite's behaviours, in the order Run runs them.
var Tests = []Test{
	{"CreateGetList", testCreateGetList},
	{"DuplicateAndMissing", testDuplicateAndMissing},
	{"ClaimIsCompareAndSet", testClaimIsCompareAndSet},
	{"RecordRun", testRecordRun},
	{"ConcurrentClaimsOneWins", testConcurrentClaimsOneWins},
	{"NextRunsListsNamesAndTimes", func(t *testing.T, h Harness) { testNextRuns(t, h.NewStore(t), hourly, claim) }},
	{"CreateRefusedAtMaxSchedules", testCreateRefusedAtMaxSchedules},
	{"UnreadableScheduleSkipped", func(t *testing.T, h Harness) { testUnreadable(t, h.NewStore(t), hourly, h.Damage) }},
	{"TickerReadsOnlyDueSchedules", func(t *testing.T, h Harness) { testTickerReadsDueOnly(t, h.NewStore(t), hourly) }},
	{"TickerFiresOnceWhenDue", testTickerFiresOnceWhenDue},
	{"TickerFiresMissedRunsOnce", testTickerFiresMissedRunsOnce},
	{"TickerSkipsWhileJobGoesThenFiresAgain", testTickerSkipsWhileJobGoesThenFiresAgain},
	{"TickerSkipsWhilePreviousRunStarts", testTickerSkipsWhilePreviousRunStarts},
	{"TickerRecordsFailures", testTickerRecordsFailures},
	{"TickerRecordsAStartWhenItsContextEnds", testTickerRecordsAStartWhenItsContextEnds},
	{"ConcurrentTickersFireOnce", testConcurrentTickersFireOnce},
}

// Run runs the suite, each behaviour a subtest of its name; newStore must
// return a fresh, empty store per call.
func Run(t *testing.T, newStore func(t *testing.T) Stores, damage Damage) {
	h := Harness{NewStore: newStore, Damage: damage}
	for _, tc := range Tests {
		t.Run(tc.Name, func(t *testing.T) { tc.Run(t, h) })
	}
}

// t0 is a past date: the suite's now is its own, never the clock's.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func hourly(t *testing.T, name string) schedule.Schedule {
	t.Helper()
	s, err := schedule.New(name, "0 * * * *", "", "topp:states", json.RawMessage(request), t0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustCreate(t *testing.T, s Stores, sc schedule.Schedule) {
	t.Helper()
	if err := s.CreateSchedule(t.Context(), sc); err != nil {
		t.Fatalf("CreateSchedule(%s): %v", sc.Name, err)
	}
}

func mustGet(t *testing.T, s Stores, name string) schedule.Schedule {
	t.Helper()
	sc, err := s.Schedule(t.Context(), name)
	if err != nil {
		t.Fatalf("Schedule(%s): %v", name, err)
	}
	return sc
}

func wantKind(t *testing.T, err error, k apperr.Kind) {
	t.Helper()
	if got := apperr.KindOf(err); err == nil || got != k {
		t.Fatalf("got error %v (kind %v), want kind %v", err, got, k)
	}
}

func claim(t *testing.T, s Stores, name string, due, next time.Time, want bool) {
	t.Helper()
	ok, err := s.ClaimRun(t.Context(), name, due, next, schedule.Run{Due: due, At: due.Add(time.Second)})
	if err != nil || ok != want {
		t.Fatalf("ClaimRun(%s, %v): got %v, %v; want %v", name, due, ok, err, want)
	}
}

func record(t *testing.T, s Stores, name string, run schedule.Run, want bool) {
	t.Helper()
	ok, err := s.RecordRun(t.Context(), name, run)
	if err != nil || ok != want {
		t.Fatalf("RecordRun(%s, due %v): got %v, %v; want %v", name, run.Due, ok, err, want)
	}
}

func testCreateGetList(t *testing.T, h Harness) {
	s := h.NewStore(t)
	if all, bad, err := s.Schedules(t.Context()); err != nil || all == nil || len(all) != 0 || len(bad) != 0 {
		t.Fatalf("empty store: got %#v, %v; want an empty, non-nil list", all, err)
	}
	b := hourly(t, "b-nightly")
	a, err := schedule.New("a.hourly_1", "@daily", "Europe/Paris", "demo:world", json.RawMessage(`{"seedRequest":{"zoomStart":1,"zoomStop":3,"type":"reseed"}}`), t0.In(time.FixedZone("X", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, b)
	mustCreate(t, s, a)
	got := mustGet(t, s, a.Name)
	if got.Name != a.Name || got.Cron != "@daily" || got.Timezone != "Europe/Paris" || got.Layer != "demo:world" ||
		string(got.Request) != string(a.Request) || !got.Created.Equal(t0) || !got.Next.Equal(a.Next) ||
		got.Last != nil || got.LastStarted != nil || got.LastFailed != nil {
		t.Fatalf("got %+v, want %+v", got, a)
	}
	if got.Created.Location() != time.UTC || got.Next.Location() != time.UTC {
		t.Errorf("times in %v and %v, want UTC", got.Created.Location(), got.Next.Location())
	}
	// @daily in Paris: midnight there, 23:00 UTC in January.
	if want := time.Date(2026, 1, 2, 23, 0, 0, 0, time.UTC); !got.Next.Equal(want) {
		t.Errorf("next run %v, want %v", got.Next, want)
	}
	all, _, err := s.Schedules(t.Context())
	if err != nil || len(all) != 2 || all[0].Name != a.Name || all[1].Name != b.Name {
		t.Fatalf("Schedules: got %+v, %v; want %s then %s", all, err, a.Name, b.Name)
	}
	if string(all[1].Request) != request || all[1].Layer != "topp:states" || !all[1].Next.Equal(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)) {
		t.Errorf("listed %+v, want %+v", all[1], b)
	}
}

func testDuplicateAndMissing(t *testing.T, h Harness) {
	s := h.NewStore(t)
	mustCreate(t, s, hourly(t, "nightly"))
	wantKind(t, s.CreateSchedule(t.Context(), hourly(t, "nightly")), apperr.Conflict)
	_, err := s.Schedule(t.Context(), "other")
	wantKind(t, err, apperr.NotFound)
	wantKind(t, s.DeleteSchedule(t.Context(), "other"), apperr.NotFound)
	if err := s.DeleteSchedule(t.Context(), "nightly"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Schedule(t.Context(), "nightly")
	wantKind(t, err, apperr.NotFound)
	wantKind(t, s.DeleteSchedule(t.Context(), "nightly"), apperr.NotFound)
	if all, _, err := s.Schedules(t.Context()); err != nil || len(all) != 0 {
		t.Fatalf("after delete: got %+v, %v; want none", all, err)
	}
	// The name is free again.
	mustCreate(t, s, hourly(t, "nightly"))
}

func testClaimIsCompareAndSet(t *testing.T, h Harness) {
	s := h.NewStore(t)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	next := sc.Next.Add(time.Hour)
	claim(t, s, "h", sc.Next.Add(-time.Hour), next, false) // not the stored due time
	claim(t, s, "h", sc.Next, next, true)
	claim(t, s, "h", sc.Next, next, false) // claimed already
	got := mustGet(t, s, "h")
	if !got.Next.Equal(next) || got.Last == nil || !got.Last.Due.Equal(sc.Next) || got.Last.Outcome != schedule.Claimed ||
		!got.Last.At.Equal(sc.Next.Add(time.Second)) {
		t.Fatalf("after the claim: got next %v, last %+v; want next %v, last claimed due %v", got.Next, got.Last, next, sc.Next)
	}
	claim(t, s, "missing", sc.Next, next, false)
	if _, err := s.Schedule(t.Context(), "missing"); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("a claim of a missing schedule created it: %v", err)
	}
	// No next time: the schedule stops.
	claim(t, s, "h", next, time.Time{}, true)
	if got := mustGet(t, s, "h"); !got.Next.IsZero() {
		t.Fatalf("got next %v, want none", got.Next)
	}
}

func testRecordRun(t *testing.T, h Harness) {
	s := h.NewStore(t)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	due1, due2 := sc.Next, sc.Next.Add(time.Hour)
	record(t, s, "h", schedule.Run{Due: due1, Outcome: schedule.Started}, false) // not claimed
	claim(t, s, "h", due1, due2, true)
	started := schedule.Run{Due: due1, At: due1.Add(time.Second), Outcome: schedule.Started, Job: 7, Tasks: []int64{7, 8}}
	record(t, s, "h", started, true)
	got := mustGet(t, s, "h")
	if got.Last == nil || got.LastStarted == nil || got.LastFailed != nil || got.Last.Job != 7 ||
		fmt.Sprint(got.LastStarted.Tasks) != "[7 8]" || got.LastStarted.Outcome != schedule.Started {
		t.Fatalf("after a started run: got last %+v, started %+v, failed %+v", got.Last, got.LastStarted, got.LastFailed)
	}
	claim(t, s, "h", due2, due2.Add(time.Hour), true)
	failed := schedule.Run{Due: due2, At: due2, Outcome: schedule.Failed, Reason: "Unknown layer: topp:states"}
	record(t, s, "h", schedule.Run{Due: due1, Outcome: schedule.Skipped, Reason: "late"}, false) // a later run was claimed
	record(t, s, "h", failed, true)
	got = mustGet(t, s, "h")
	if got.Last.Outcome != schedule.Failed || got.LastFailed == nil || got.LastFailed.Reason != failed.Reason ||
		got.LastStarted == nil || got.LastStarted.Job != 7 || !got.LastStarted.Due.Equal(due1) {
		t.Fatalf("after a failed run: got last %+v, started %+v, failed %+v", got.Last, got.LastStarted, got.LastFailed)
	}
	record(t, s, "missing", failed, false)
}

func testConcurrentClaimsOneWins(t *testing.T, h Harness) {
	s := h.NewStore(t)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	var wg sync.WaitGroup
	var wins atomic.Int64
	for range 8 {
		wg.Go(func() {
			ok, err := s.ClaimRun(t.Context(), "h", sc.Next, sc.Next.Add(time.Hour), schedule.Run{Due: sc.Next, At: sc.Next})
			if err != nil {
				t.Error(err)
			} else if ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d claims won, want 1", wins.Load())
	}
}

func testCreateRefusedAtMaxSchedules(t *testing.T, h Harness) {
	t.Parallel() // a thousand creates: beside the rest
	testMaxSchedules(t, h.NewStore(t), hourly)
}

func tick(t *testing.T, tk *schedule.Ticker, now time.Time) []schedule.Run {
	t.Helper()
	runs, err := tk.Tick(t.Context(), now)
	if err != nil {
		t.Fatalf("Tick(%v): %v", now, err)
	}
	return runs
}

func finish(t *testing.T, s Stores, ids []int64) {
	t.Helper()
	if _, err := s.Promote(t.Context(), 100, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		tk, err := s.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != task.Running {
			t.Fatalf("task %d is %v after Promote, want RUNNING", id, tk.Status)
		}
		if _, err := s.Checkpoint(t.Context(), task.Checkpoint{ID: id, From: tk.Cursor, To: tk.End, Tiles: tk.Total - tk.Done}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Finish(t.Context(), id, task.Done, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}

func testTickerFiresOnceWhenDue(t *testing.T, h Harness) {
	s := h.NewStore(t)
	st := &starter{tasks: s}
	tk := schedule.NewTicker(s, s, st, quiet)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	if runs := tick(t, tk, sc.Next.Add(-time.Second)); len(runs) != 0 {
		t.Fatalf("before its time: fired %+v", runs)
	}
	runs := tick(t, tk, sc.Next)
	if len(runs) != 1 || runs[0].Outcome != schedule.Started || runs[0].Job == 0 || len(runs[0].Tasks) != 1 || !runs[0].Due.Equal(sc.Next) {
		t.Fatalf("at its time: got %+v, want one started run", runs)
	}
	if runs := tick(t, tk, sc.Next.Add(time.Minute)); len(runs) != 0 || st.calls.Load() != 1 {
		t.Fatalf("again within the hour: fired %+v (%d starts), want nothing", runs, st.calls.Load())
	}
	got := mustGet(t, s, "h")
	if !got.Next.Equal(sc.Next.Add(time.Hour)) || got.Last == nil || got.Last.Outcome != schedule.Started ||
		got.LastStarted == nil || got.LastStarted.Job != runs[0].Job || fmt.Sprint(got.LastStarted.Tasks) != fmt.Sprint(runs[0].Tasks) {
		t.Fatalf("after the run: got next %v, last %+v, started %+v", got.Next, got.Last, got.LastStarted)
	}
	if tasks, err := s.Get(t.Context(), runs[0].Tasks[0]); err != nil || tasks.JobID != runs[0].Job {
		t.Fatalf("the run's task: %+v, %v", tasks, err)
	}
}

func testTickerFiresMissedRunsOnce(t *testing.T, h Harness) {
	s := h.NewStore(t)
	st := &starter{tasks: s}
	tk := schedule.NewTicker(s, s, st, quiet)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	late := sc.Next.Add(50*time.Hour + 30*time.Minute) // 50 slots missed
	if runs := tick(t, tk, late); len(runs) != 1 || !runs[0].Due.Equal(sc.Next) {
		t.Fatalf("after 50 missed slots: got %+v, want one run due %v", runs, sc.Next)
	}
	if got := mustGet(t, s, "h"); !got.Next.Equal(sc.Next.Add(51 * time.Hour)) {
		t.Fatalf("next %v, want the first slot after the wake-up, %v", got.Next, sc.Next.Add(51*time.Hour))
	}
	if runs := tick(t, tk, late); len(runs) != 0 || st.calls.Load() != 1 {
		t.Fatalf("the same wake-up again: fired %+v, want nothing", runs)
	}
}

func testTickerSkipsWhileJobGoesThenFiresAgain(t *testing.T, h Harness) {
	s := h.NewStore(t)
	st := &starter{tasks: s}
	tk := schedule.NewTicker(s, s, st, quiet)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	first := tick(t, tk, sc.Next)[0]
	// PENDING, then RUNNING: skipped both times, and the job that
	// goes on stays the one checked.
	for i, due := range []time.Time{sc.Next.Add(time.Hour), sc.Next.Add(2 * time.Hour)} {
		if i == 1 {
			if p, err := s.Promote(t.Context(), 100, nil, time.Now()); err != nil || len(p) != 1 {
				t.Fatalf("Promote: %+v, %v", p, err)
			}
		}
		runs := tick(t, tk, due)
		if len(runs) != 1 || runs[0].Outcome != schedule.Skipped || !strings.Contains(runs[0].Reason, fmt.Sprintf("Job %d", first.Job)) {
			t.Fatalf("while job %d goes: got %+v, want a skipped run naming it", first.Job, runs)
		}
		got := mustGet(t, s, "h")
		if got.Last.Outcome != schedule.Skipped || got.Last.Reason != runs[0].Reason || got.LastStarted.Job != first.Job || !got.Next.Equal(due.Add(time.Hour)) {
			t.Fatalf("after the skip: got next %v, last %+v, started %+v", got.Next, got.Last, got.LastStarted)
		}
	}
	if st.calls.Load() != 1 {
		t.Fatalf("%d starts while the job went, want 1", st.calls.Load())
	}
	finish(t, s, first.Tasks)
	runs := tick(t, tk, sc.Next.Add(3*time.Hour))
	if len(runs) != 1 || runs[0].Outcome != schedule.Started || runs[0].Job == first.Job {
		t.Fatalf("after the job finished: got %+v, want a new job started", runs)
	}
}

func testTickerSkipsWhilePreviousRunStarts(t *testing.T, h Harness) {
	s := h.NewStore(t)
	st := &starter{tasks: s}
	tk := schedule.NewTicker(s, s, st, quiet)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	// A run claimed a minute ago whose outcome is not recorded: its
	// process may be submitting the request right now.
	claimedAt := sc.Next.Add(time.Hour - time.Minute)
	if ok, err := s.ClaimRun(t.Context(), "h", sc.Next, sc.Next.Add(time.Hour), schedule.Run{Due: sc.Next, At: claimedAt}); err != nil || !ok {
		t.Fatalf("ClaimRun: %v, %v", ok, err)
	}
	runs := tick(t, tk, sc.Next.Add(time.Hour))
	if len(runs) != 1 || runs[0].Outcome != schedule.Skipped || !strings.Contains(runs[0].Reason, "still starting") {
		t.Fatalf("got %+v, want a run skipped while the previous one starts", runs)
	}
	// One left unrecorded for longer lost its process.
	if ok, err := s.ClaimRun(t.Context(), "h", sc.Next.Add(2*time.Hour), sc.Next.Add(3*time.Hour), schedule.Run{Due: sc.Next.Add(2 * time.Hour), At: sc.Next}); err != nil || !ok {
		t.Fatalf("ClaimRun: %v, %v", ok, err)
	}
	if runs := tick(t, tk, sc.Next.Add(3*time.Hour)); len(runs) != 1 || runs[0].Outcome != schedule.Started {
		t.Fatalf("got %+v, want a started run", runs)
	}
}

func testTickerRecordsFailures(t *testing.T, h Harness) {
	s := h.NewStore(t)
	st := &starter{tasks: s, fail: apperr.Invalidf("Unknown layer: topp:states")}
	tk := schedule.NewTicker(s, s, st, quiet)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	runs := tick(t, tk, sc.Next)
	if len(runs) != 1 || runs[0].Outcome != schedule.Failed || runs[0].Reason != "Unknown layer: topp:states" {
		t.Fatalf("got %+v, want a failed run with the request's error", runs)
	}
	got := mustGet(t, s, "h")
	if got.LastFailed == nil || got.LastFailed.Reason != runs[0].Reason || got.LastStarted != nil || !got.Next.Equal(sc.Next.Add(time.Hour)) {
		t.Fatalf("after the failure: got next %v, failed %+v, started %+v", got.Next, got.LastFailed, got.LastStarted)
	}
	// An internal error is not shown in its own words.
	st.fail = fmt.Errorf("dial tcp 10.0.0.1:443: secret detail")
	runs = tick(t, tk, sc.Next.Add(time.Hour))
	if len(runs) != 1 || runs[0].Outcome != schedule.Failed || strings.Contains(runs[0].Reason, "secret") {
		t.Fatalf("got %+v, want a failed run without the error's words", runs)
	}
}

func testTickerRecordsAStartWhenItsContextEnds(t *testing.T, h Harness) {
	s := h.NewStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	st := &starter{tasks: s, after: cancel} // a shutdown just after the submission
	tk := schedule.NewTicker(s, s, st, quiet)
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	runs, _ := tk.Tick(ctx, sc.Next)
	if len(runs) != 1 || runs[0].Outcome != schedule.Started {
		t.Fatalf("got %+v, want a started run", runs)
	}
	got := mustGet(t, s, "h")
	if got.LastStarted == nil || got.LastStarted.Job != runs[0].Job {
		t.Fatalf("last started %+v, want job %d recorded: its next run must wait for it", got.LastStarted, runs[0].Job)
	}
	tk = schedule.NewTicker(s, s, &starter{tasks: s}, quiet)
	if runs := tick(t, tk, got.Next); len(runs) != 1 || runs[0].Outcome != schedule.Skipped {
		t.Fatalf("next run: got %+v, want it skipped", runs)
	}
}

func testConcurrentTickersFireOnce(t *testing.T, h Harness) {
	s := h.NewStore(t)
	st := &starter{tasks: s}
	sc := hourly(t, "h")
	mustCreate(t, s, sc)
	const tickers, rounds = 4, 3
	var fired atomic.Int64
	for round := range rounds {
		// Each round's job is finished before the next due time, so
		// every round starts the request exactly once.
		now := sc.Next.Add(time.Duration(round) * time.Hour)
		var wg sync.WaitGroup
		for range tickers {
			tk := schedule.NewTicker(s, s, st, quiet)
			wg.Go(func() {
				runs, err := tk.Tick(t.Context(), now)
				if err != nil {
					t.Error(err)
				}
				fired.Add(int64(len(runs)))
			})
		}
		wg.Wait()
		if fired.Load() != int64(round+1) || st.calls.Load() != int64(round+1) {
			t.Fatalf("round %d: %d runs fired, %d starts; want %d each", round, fired.Load(), st.calls.Load(), round+1)
		}
		got := mustGet(t, s, "h")
		if got.Last == nil || got.Last.Outcome != schedule.Started {
			t.Fatalf("round %d: last run %+v, want started", round, got.Last)
		}
		finish(t, s, got.Last.Tasks)
	}
}

// starter starts a request by recording a one-lane job in the task store,
// as the engine's Submit would, and counts its calls.
type starter struct {
	tasks task.Store
	calls atomic.Int64
	fail  error  // returned instead when set
	after func() // called after the job is recorded, when set
}

func (st *starter) Start(ctx context.Context, layer string, body json.RawMessage) ([]task.Task, error) {
	st.calls.Add(1)
	if st.fail != nil {
		return nil, st.fail
	}
	if string(body) != request {
		return nil, fmt.Errorf("started with body %s, want %s", body, request)
	}
	_, ts, err := st.tasks.Create(ctx, task.NewSeed(task.Header{Layer: layer, Metatiles: 2, Tiles: 10},
		task.Range{GridSetID: "EPSG:4326", Format: "image/png", ParametersID: "default", ZoomStop: 2, MetaWidth: 4, MetaHeight: 4},
		task.Render{RetryCount: -1}),
		[]task.Lane{{Start: 0, End: 2, Tiles: 10}}, time.Now())
	if st.after != nil {
		st.after()
	}
	return ts, err
}

// testNextRuns: NextRuns lists every schedule's name and next due time,
// by name, and follows a claim.
func testNextRuns(t *testing.T, s Stores, hourly func(*testing.T, string) schedule.Schedule,
	claim func(*testing.T, Stores, string, time.Time, time.Time, bool)) {
	if got, bad, err := s.NextRuns(t.Context()); err != nil || len(got) != 0 || len(bad) != 0 {
		t.Fatalf("empty store: got %+v, %+v, %v; want nothing", got, bad, err)
	}
	b, a := hourly(t, "b"), hourly(t, "a")
	for _, sc := range []schedule.Schedule{b, a} {
		if err := s.CreateSchedule(t.Context(), sc); err != nil {
			t.Fatal(err)
		}
	}
	claim(t, s, "b", b.Next, b.Next.Add(time.Hour), true)
	got, bad, err := s.NextRuns(t.Context())
	if err != nil || len(bad) != 0 || len(got) != 2 || got[0].Name != "a" || !got[0].Next.Equal(a.Next) ||
		got[1].Name != "b" || !got[1].Next.Equal(b.Next.Add(time.Hour)) || got[1].Next.Location() != time.UTC {
		t.Fatalf("got %+v, %+v, %v; want a due %v, b due %v (UTC)", got, bad, err, a.Next, b.Next.Add(time.Hour))
	}
}

// testMaxSchedules: a store holds at most schedule.MaxSchedules
// schedules, however many creates race for the last places: of 16 creates
// let go together for the last 4, 4 pass and 12 are a Conflict naming the
// limit; one more is refused the same way, and deleting one makes room.
func testMaxSchedules(t *testing.T, s Stores, hourly func(*testing.T, string) schedule.Schedule) {
	sc := hourly(t, "s")
	create := func(i int) error {
		c := sc
		c.Name = fmt.Sprintf("s%04d", i)
		return s.CreateSchedule(t.Context(), c)
	}
	const racing, left = 16, 4
	const before = schedule.MaxSchedules - left
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if err := create(i); err != nil {
					t.Error(err)
				}
			}
		})
	}
	for i := range before {
		work <- i
	}
	close(work)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	tooMany := func(err error) bool {
		return apperr.Is(err, apperr.Conflict) && strings.Contains(apperr.Message(err), fmt.Sprint(schedule.MaxSchedules))
	}
	// The racing creates start together, each from its own goroutine.
	start := make(chan struct{})
	errs := make([]error, racing)
	for i := range racing {
		wg.Go(func() {
			<-start
			errs[i] = create(before + i)
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
		case !tooMany(err):
			t.Errorf("racing create %d: got %v, want nil or a conflict naming the limit of %d", i, err, schedule.MaxSchedules)
		}
	}
	all, bad, err := s.Schedules(t.Context())
	if err != nil || len(bad) != 0 {
		t.Fatalf("Schedules: %v, unreadable %v", err, bad)
	}
	if created != left || len(all) != schedule.MaxSchedules {
		t.Fatalf("%d creates racing for the last %d places: %d passed, the store holds %d schedules; want %d and the limit of %d",
			racing, left, created, len(all), left, schedule.MaxSchedules)
	}
	if err := create(schedule.MaxSchedules + racing); !tooMany(err) {
		t.Fatalf("schedule %d: got %v, want a conflict naming the limit of %d", schedule.MaxSchedules+1, err, schedule.MaxSchedules)
	}
	if err := s.DeleteSchedule(t.Context(), "s0000"); err != nil {
		t.Fatal(err)
	}
	if err := create(schedule.MaxSchedules + racing); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	if err := create(schedule.MaxSchedules + racing + 1); !tooMany(err) {
		t.Fatalf("after a delete and a create: got %v, want a conflict naming the limit of %d", err, schedule.MaxSchedules)
	}
}

// testUnreadable: a stored schedule that does not decode is left out of
// the listing and reported by name, reading it is ErrUnreadable, the
// ticker fires the others without an error, and it can be deleted.
func testUnreadable(t *testing.T, s Stores, hourly func(*testing.T, string) schedule.Schedule, damage Damage) {
	for _, name := range []string{"a", "b-bad", "c"} {
		if err := s.CreateSchedule(t.Context(), hourly(t, name)); err != nil {
			t.Fatal(err)
		}
	}
	damage(t, s, "b-bad")
	all, bad, err := s.Schedules(t.Context())
	if err != nil || len(all) != 2 || all[0].Name != "a" || all[1].Name != "c" || len(bad) != 1 || bad[0].Name != "b-bad" ||
		!errors.Is(bad[0].Err, schedule.ErrUnreadable) {
		t.Fatalf("Schedules: got %d schedules %+v, unreadable %+v, %v; want a and c, and b-bad unreadable", len(all), all, bad, err)
	}
	if _, err := s.Schedule(t.Context(), "b-bad"); !errors.Is(err, schedule.ErrUnreadable) {
		t.Fatalf("Schedule(b-bad): %v, want ErrUnreadable", err)
	}
	var logged strings.Builder
	tk := schedule.NewTicker(s, s, &starter{tasks: s}, slog.New(slog.NewTextHandler(&logged, nil)))
	runs, err := tk.Tick(t.Context(), hourly(t, "x").Next)
	if err != nil || len(runs) != 2 || runs[0].Outcome != schedule.Started || runs[1].Outcome != schedule.Started {
		t.Fatalf("Tick: got %+v, %v; want a and c started, no error", runs, err)
	}
	if !strings.Contains(logged.String(), "schedule=b-bad") {
		t.Errorf("the unreadable schedule was not logged:\n%s", logged.String())
	}
	if err := s.DeleteSchedule(t.Context(), "b-bad"); err != nil {
		t.Fatalf("DeleteSchedule(b-bad): %v", err)
	}
	if _, bad, err := s.Schedules(t.Context()); err != nil || len(bad) != 0 {
		t.Fatalf("after the delete: unreadable %+v, %v", bad, err)
	}
}

// readCounter counts the whole-schedule reads of a store and refuses its
// full listing.
type readCounter struct {
	Stores
	reads atomic.Int64
}

func (c *readCounter) Schedule(ctx context.Context, name string) (schedule.Schedule, error) {
	c.reads.Add(1)
	return c.Stores.Schedule(ctx, name)
}

func (c *readCounter) Schedules(context.Context) ([]schedule.Schedule, []schedule.Unreadable, error) {
	return nil, nil, fmt.Errorf("the ticker read every schedule whole")
}

// testTickerReadsDueOnly: a tick lists the next due times and reads the
// whole schedule of the due ones alone.
func testTickerReadsDueOnly(t *testing.T, s Stores, hourly func(*testing.T, string) schedule.Schedule) {
	h := hourly(t, "hourly")
	for _, sc := range []schedule.Schedule{h, hourly(t, "later-1"), hourly(t, "later-2")} {
		if sc.Name != h.Name {
			sc.Next = h.Next.Add(24 * time.Hour)
			sc.Cron = "0 0 * * *"
		}
		if err := s.CreateSchedule(t.Context(), sc); err != nil {
			t.Fatal(err)
		}
	}
	c := &readCounter{Stores: s}
	tk := schedule.NewTicker(c, s, &starter{tasks: s}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	runs, err := tk.Tick(t.Context(), h.Next)
	if err != nil || len(runs) != 1 {
		t.Fatalf("Tick: got %+v, %v; want one run", runs, err)
	}
	if n := c.reads.Load(); n != 1 {
		t.Errorf("a tick with one due schedule of three read %d whole, want 1", n)
	}
}
