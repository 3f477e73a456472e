package bolt_test

import (
	"testing"

	"tilecache/internal/task"
	"tilecache/internal/task/tasktest"
)

func TestFailuresConformance(t *testing.T) {
	tasktest.RunFailures(t, func(t *testing.T) task.FailureStore { return newStore(t).(*adapters).Tasks })
}
