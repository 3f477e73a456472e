// Package tasktest is the conformance suite every task.Store must pass:
// one function per behaviour, each given the Harness, listed in Tests.
package tasktest

import (
	"testing"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
)

// Harness is what every test of the suite runs against.
type Harness struct {
	// NewStore returns a fresh, empty store per call.
	NewStore func(t *testing.T) task.Store
}

// Test is one behaviour of the suite.
type Test struct {
	Name string
	Run  func(t *testing.T, h Harness)
}

// Tests lists the suite's behaviours, in the order Run runs them.
var Tests = []Test{
	{"CreateTakesConsecutiveIDs", testCreateTakesConsecutiveIDs},
	{"CreateWithoutLanesFails", testCreateWithoutLanesFails},
	{"Missing", testMissing},
	{"ConcurrentCreatesNeverShareIDs", testConcurrentCreatesNeverShareIDs},
	{"PromoteRespectsPoolOldestFirst", testPromoteRespectsPoolOldestFirst},
	{"Claims", testClaims},
	{"ClaimNotes", testClaimNotes},
	{"PromoteHoldsLaneCaps", testPromoteHoldsLaneCaps},
	{"CheckpointIsConditional", testCheckpointIsConditional},
	{"KeyCursorOfADeletedLayersTruncation", testKeyCursorOfADeletedLayersTruncation},
	{"LeaseFencesCheckpoints", testLeaseFencesCheckpoints},
	{"AcquireRetriedByItsHolder", testAcquireRetriedByItsHolder},
	{"RetriedCheckpointSucceedsOnce", testRetriedCheckpointSucceedsOnce},
	{"ConcurrentCheckpointsOneWins", testConcurrentCheckpointsOneWins},
	{"FinishConditions", testFinishConditions},
	{"KillExpectsStatus", testKillExpectsStatus},
	{"KilledAtRecordsAKilledLanesProgress", testKilledAtRecordsAKilledLanesProgress},
	{"ListActiveAndRecent", testListActiveAndRecent},
	{"FailuresAreSharedPerJob", testFailuresAreSharedPerJob},
	{"CheckpointCarriesUsageOnce", testCheckpointCarriesUsageOnce},
	{"RetriedCheckpointCountsUsageOnce", testRetriedCheckpointCountsUsageOnce},
	{"KilledLaneAppliesItsUsageDirectly", testKilledLaneAppliesItsUsageDirectly},
	{"TakenOverLaneDropsItsUsage", testTakenOverLaneDropsItsUsage},
	{"ConcurrentCheckpointsWithUsageCountOnce", testConcurrentCheckpointsWithUsageCountOnce},
	{"RowLayout", testRowLayout},
	{"ExportJobRoundTrips", testExportJobRoundTrips},
	{"ImportJobRoundTrips", testImportJobRoundTrips},
}

// Run runs the suite, each behaviour a subtest of its name; newStore must
// return a fresh, empty store per call.
func Run(t *testing.T, newStore func(t *testing.T) task.Store) {
	h := Harness{NewStore: newStore}
	for _, tc := range Tests {
		t.Run(tc.Name, func(t *testing.T) { tc.Run(t, h) })
	}
}

// t0 is the suite's clock: every call takes times relative to it.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// job is the job every test creates.
func job() task.Job {
	return task.NewSeed(task.Header{Layer: "topp:states", Tiles: 30, Metatiles: 6},
		task.Range{GridSetID: "EPSG:4326", Format: "image/png", ParametersID: "default", ZoomStart: 0, ZoomStop: 3, MetaWidth: 4, MetaHeight: 4},
		task.Render{RetryCount: -1, RetryWaitMS: 100, MaxFailures: 1000})
}

// lanes returns n lanes of 2 metatiles and 10 tiles each.
func lanes(n int) []task.Lane {
	out := make([]task.Lane, n)
	for i := range out {
		out[i] = task.Lane{Start: int64(i) * 2, End: int64(i)*2 + 2, Tiles: 10}
	}
	return out
}

// mustCreate creates job() with n lanes at t0.
func mustCreate(t *testing.T, s task.Store, n int) (task.Job, []task.Task) {
	t.Helper()
	j, ts, err := s.Create(t.Context(), job(), lanes(n), t0)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return j, ts
}

// mustPromote promotes pending tasks into a pool of pool threads at t0.
func mustPromote(t *testing.T, s task.Store, pool int) []task.Task {
	t.Helper()
	p, err := s.Promote(t.Context(), pool, nil, t0)
	if err != nil {
		t.Fatalf("Promote: %v", err)
	}
	return p
}

// wantKind fails unless err is of kind k.
func wantKind(t *testing.T, err error, k apperr.Kind) {
	t.Helper()
	if got := apperr.KindOf(err); err == nil || got != k {
		t.Fatalf("got error %v (kind %v), want kind %v", err, got, k)
	}
}
