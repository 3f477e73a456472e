package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestItems: the item API keys items in the store's namespace, fills in
// the table, counts writes by operation, tells a failed condition from an
// error, and returns a transaction's reasons when a condition failed.
func TestItems(t *testing.T) {
	s := newShared(t).store(t)
	it := s.tbl.Items()
	ctx := t.Context()
	if got := it.Partition("x"); got != s.ns+"x" {
		t.Fatalf("Partition(x) = %q, want %q", got, s.ns+"x")
	}
	if item, err := it.Get(ctx, "read x/a", it.Key("x", "a")); err != nil || item != nil {
		t.Fatalf("Get of a missing item: %v, %v; want nil, nil", item, err)
	}
	create := func() (bool, error) {
		item := it.Key("x", "a")
		item["v"] = str("1")
		e := NewExpr()
		return it.Put(ctx, "PutX", "write x/a", &dynamodb.PutItemInput{Item: item,
			ConditionExpression: aws.String("attribute_not_exists(" + e.N(AttrPK) + ")"), ExpressionAttributeNames: e.Names()})
	}
	if ok, err := create(); !ok || err != nil {
		t.Fatalf("first Put: %v, %v; want true, nil", ok, err)
	}
	if ok, err := create(); ok || err != nil {
		t.Fatalf("Put of an existing item: %v, %v; want false, nil", ok, err)
	}
	if n := s.tbl.WritesByOp()["PutX"]; n != 2 {
		t.Errorf("PutX writes %d, want 2", n)
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: map[string]types.AttributeValue{
		"pk": str(s.ns + "x"), "sk": str("a")}})
	if v, _ := strAttr(out.Item, "v"); err != nil || v != "1" {
		t.Fatalf("item pk=%sx sk=a: %v, %v", s.ns, out.Item, err)
	}
	e := NewExpr()
	reasons, err := it.Transact(ctx, "transact x", []types.TransactWriteItem{
		{Put: &types.Put{Item: it.Key("x", "b")}},
		{Delete: &types.Delete{Key: it.Key("x", "c"), ConditionExpression: aws.String("attribute_exists(" + e.N(AttrPK) + ")"), ExpressionAttributeNames: e.Names()}},
	})
	if err != nil || len(reasons) != 2 || code(reasons[1]) != "ConditionalCheckFailed" {
		t.Fatalf("transaction deleting a missing item: %v, %v; want its reasons", reasons, err)
	}
	var seen []string
	err = it.Query(ctx, "query x", &dynamodb.QueryInput{KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(it.Partition("x"))}}, func(item Item) (bool, error) {
		sk, _ := strAttr(item, AttrSK)
		seen = append(seen, sk)
		return true, nil
	})
	if err != nil || len(seen) != 1 || seen[0] != "a" {
		t.Fatalf("query of x: %v, %v; want [a] (the transaction wrote nothing)", seen, err)
	}
}
