package adminstore

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/audit"
	"tilecache/internal/audit/audittest"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/state/dynamo/dynamotest"
)

func TestAuditConformance(t *testing.T) {
	sh := newShared(t)
	audittest.Run(t, func(t *testing.T) audit.Store { return sh.store(t).admin.Audit(audittest.Retention) })
}

// TestAuditItem: a record is an item in its day's partition whose expires
// (the table's TTL) is its time plus the retention.
func TestAuditItem(t *testing.T) {
	s := newShared(t).store(t)
	at := time.Date(2026, 12, 2, 23, 59, 59, 0, time.UTC)
	if err := s.admin.Audit(48*time.Hour).Append(t.Context(), audit.Record{At: at, Account: "alice", Layer: "a", Method: "POST", Path: "/rest/seed/a.json", Status: 200}); err != nil {
		t.Fatal(err)
	}
	out, err := s.client.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": dynamo.Str(s.ns + "audit#2026-12-02")},
	})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("items of audit#2026-12-02: %v, %v; want the record", out, err)
	}
	item := out.Items[0]
	exp, _ := dynamo.NumAttr(item, dynamo.AttrExpires)
	sk, _ := dynamo.StrAttr(item, dynamo.AttrSK)
	layer, _ := dynamo.StrAttr(item, aAuditLayer)
	account, _ := dynamo.StrAttr(item, aAuditAccount)
	if exp != at.Add(48*time.Hour).Unix() || layer != "a" || account != "alice" {
		t.Errorf("item %s: expires %d, layer %q, account %q; want %d, a, alice", sk, exp, layer, account, at.Add(48*time.Hour).Unix())
	}
	if ts, ok := audit.IDTime(sk); !ok || !ts.Equal(at) {
		t.Errorf("sort key %q is not a record id of %v", sk, at)
	}
}

func BenchmarkAuditAppend(b *testing.B) {
	audittest.BenchmarkAppend(b, New(dynamo.New(dynamotest.Client(b), newTable(b))).Audit(audittest.Retention))
}

func BenchmarkAuditList(b *testing.B) {
	audittest.BenchmarkList(b, New(dynamo.New(dynamotest.Client(b), newTable(b))).Audit(audittest.Retention))
}
