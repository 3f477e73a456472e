package dynamostore

import (
	"testing"

	"tilecache/internal/schedule/scheduletest"
)

// TestScheduleConformance runs the schedule suite with every store in a
// namespace of one table.
func TestScheduleConformance(t *testing.T) {
	testClient(t)
	sh := newShared(t)
	scheduletest.Run(t, func(t *testing.T) scheduletest.Stores { return sh.store(t) })
}
