package dynamo

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/quota"
	"tilecache/internal/quota/quotatest"
	"tilecache/internal/state/dynamo/dynamotest"
	"tilecache/internal/testkit/testenv"
)

// TestPagesOrderedAfterUpgrade: pages recorded before the order keys
// existed get them on the layer's first read in order (then the layer is
// marked), and are read in the order of the in-memory sort.
func TestPagesOrderedAfterUpgrade(t *testing.T) {
	sh := newShared(t)
	s := sh.store(t)
	ctx := t.Context()
	quotatest.RandomTable(t, s, 11, []string{"a"}, 30)
	// Strip the keys and the layer's mark, as a table from before them.
	ps, err := s.Pages(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		e := newExpr()
		if _, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table, Key: s.pageKey(p.Key),
			UpdateExpression: aws.String("REMOVE " + e.n(aLRU) + ", " + e.n(aLFU)), ExpressionAttributeNames: e.Names()}); err != nil {
			t.Fatal(err)
		}
	}
	e := newExpr()
	if _, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table, Key: s.layerKey("a"),
		UpdateExpression: aws.String("REMOVE " + e.n(aOrdered)), ExpressionAttributeNames: e.Names()}); err != nil {
		t.Fatal(err)
	}
	s = sh.storeIn(t, s) // a new process: nothing cached
	if got, _, err := s.PagesInOrder(ctx, "a", quota.PolicyLRU, "", 1000); err != nil || len(got) != len(ps) {
		t.Fatalf("first read in order: %d pages, %v; want %d", len(got), err, len(ps))
	}
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: s.layerKey("a"), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Item[aOrdered]; !ok {
		t.Error("layer not marked ordered after its first read in order")
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, policy := range []string{quota.PolicyLRU, quota.PolicyLFU} {
		want := slices.Clone(ps)
		quota.Order(want, policy)
		got := quotatest.InOrder(t, s, "a", policy, 5, rnd)
		if len(got) != len(want) {
			t.Fatalf("%s: %d pages in order, want %d", policy, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: page %d is %s, want %s", policy, i, got[i].Key.ID(), want[i].Key.ID())
			}
		}
	}
}

// storeIn returns a fresh Store on the namespace of s.
func (sh *shared) storeIn(t testing.TB, s *adapters) *adapters {
	t.Helper()
	return all(New(dynamotest.Client(t), sh.table, WithNamespace(s.ns)))
}

// TestPagesInOrderWithoutIndexes: on a table made before the order
// indexes, PagesInOrder says so (quota.ErrUnordered), so that the clean-up
// reads and sorts every page.
func TestPagesInOrderWithoutIndexes(t *testing.T) {
	c := dynamotest.Client(t)
	name := testenv.Name(t, "old")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   &name,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name})
	})
	s := all(New(c, name))
	quotatest.RandomTable(t, s, 12, []string{"a"}, 5)
	_, _, err = s.PagesInOrder(ctx, "a", quota.PolicyLRU, "", 10)
	if !errors.Is(err, quota.ErrUnordered) {
		t.Fatalf("PagesInOrder on a table without the order indexes: %v, want quota.ErrUnordered", err)
	}
}
