package schedulestore

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/state/dynamo"
	"tilecache/internal/state/dynamo/dynamotest"
)

// newTable creates a table for the test and deletes it at its end.
func newTable(t testing.TB) string {
	t.Helper()
	return dynamotest.Table(t, "sched", dynamo.CreateTable)
}

// stores is the schedule store of one namespace of the table, with the
// task store (the schedule suite's ticker reads tasks) and the table's
// client and name for the tests that read or write items themselves.
// Schedules is embedded under another name: a field called Schedules
// would hide the method of that name.
type stores struct {
	*schedulesPort
	*dynamo.Tasks
	client *dynamodb.Client
	table  string
	ns     string
}

type schedulesPort = Schedules

// shared gives tests of one top-level test fresh stores in one table, each
// in a namespace of its own.
type shared struct {
	table string
	n     atomic.Int64
}

func newShared(t testing.TB) *shared { return &shared{table: newTable(t)} }

func (sh *shared) store(t testing.TB) *stores {
	t.Helper()
	return open(dynamotest.Client(t), sh.table, fmt.Sprintf("ns%d/", sh.n.Add(1)))
}

func open(c *dynamodb.Client, table, ns string) *stores {
	tbl := dynamo.New(c, table, dynamo.WithNamespace(ns))
	return &stores{schedulesPort: New(tbl), Tasks: tbl.Tasks(), client: c, table: table, ns: ns}
}
