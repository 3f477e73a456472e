package dynamo

import (
	"testing"

	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/task"
	"tilecache/internal/task/tasktest"
)

func TestFailuresConformance(t *testing.T) {
	tasktest.RunFailures(t, func(t *testing.T) task.FailureStore { return New(dynamotest.Client(t), newTable(t)).Tasks() })
}
