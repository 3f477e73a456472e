package dynamo

import (
	"testing"

	"tilecache/internal/quota"
	"tilecache/internal/quota/quotatest"
	"tilecache/internal/state/dynamo/dynamotest"
)

// TestUsageConformance runs the usage store suite, every store in a
// namespace of its own in one table.
func TestUsageConformance(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	quotatest.Run(t, func(t *testing.T) quota.UsageStore { return sh.store(t) })
}
