package boltstore_test

import (
	"testing"

	"tilecache/internal/schedule/scheduletest"
	"tilecache/internal/task/boltstore"
)

func TestScheduleConformance(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T) scheduletest.Stores { return newStore(t).(*boltstore.Store) })
}
