package dynamo

import (
	"testing"

	"tilecache/internal/audit"
	"tilecache/internal/audit/audittest"
)

func TestAuditConformance(t *testing.T) {
	sh := newShared(t)
	audittest.Run(t, func(t *testing.T) audit.Store { return sh.store(t).tbl.Audit(audittest.Retention) })
}

func BenchmarkAuditAppend(b *testing.B) {
	audittest.BenchmarkAppend(b, New(testClient(b), newTable(b)).Audit(audittest.Retention))
}
