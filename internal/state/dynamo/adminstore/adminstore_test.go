package adminstore

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
	return dynamotest.Table(t, "admin", dynamo.CreateTable)
}

// stores is the adapters of one namespace of the table, with the table's
// client and name for the tests that read or write items themselves.
type stores struct {
	client *dynamodb.Client
	table  string
	ns     string
	admin  *Store
}

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
	a := New(tbl)
	return &stores{client: c, table: table, ns: ns, admin: a}
}
