package schedulestore

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/schedule"
)

// TestItemsOfEarlierVersions: the schedule items that package dynamo (and
// then package adminstore) wrote when it held this adapter, spelt out
// attribute by attribute, read the same through this package, and what it
// writes lands in the same keys and attributes: a deployment's schedules
// survive the move.
func TestItemsOfEarlierVersions(t *testing.T) {
	s := newShared(t).store(t)
	ctx := t.Context()
	S := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	N := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	put := func(item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(pk, sk string) map[string]types.AttributeValue {
		t.Helper()
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": S(s.ns + pk), "sk": S(sk)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Item) == 0 {
			t.Fatalf("no item pk=%s sk=%s", s.ns+pk, sk)
		}
		return out.Item
	}

	put(map[string]types.AttributeValue{"pk": S(s.ns + "schedules"), "sk": S("nightly"),
		"def":  S(`{"name":"nightly","cron":"0 3 * * *","layer":"a","request":{"seedRequest":{}},"created":"2026-01-02T03:04:05Z"}`),
		"next": N("1767409200000000000"), "lastDue": N("1767322800000000000"),
		"last": S(`{"due":"2026-01-02T03:00:00Z","at":"2026-01-02T03:00:01Z","outcome":"started"}`)})
	put(map[string]types.AttributeValue{"pk": S(s.ns + "meta"), "sk": S("schedules"), "n": N("1")})

	sc, err := s.Schedule(ctx, "nightly")
	if err != nil || sc.Cron != "0 3 * * *" || sc.Layer != "a" || !sc.Next.Equal(time.Unix(0, 1767409200000000000)) ||
		sc.Last == nil || sc.Last.Outcome != schedule.Started {
		t.Errorf("schedule of an earlier version: %+v, %v", sc, err)
	}

	// And what this package writes, where the earlier version read it.
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	next, err := schedule.New("weekly", "0 3 * * 1", "", "a", []byte(`{"seedRequest":{}}`), at)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSchedule(ctx, next); err != nil {
		t.Fatal(err)
	}
	if item := get("meta", "schedules"); item["n"].(*types.AttributeValueMemberN).Value != "2" {
		t.Errorf("schedules' count after a create: %v, want 2", item["n"])
	}
	item := get("schedules", "weekly")
	if _, ok := item["def"].(*types.AttributeValueMemberS); !ok {
		t.Errorf("schedule item without its def: %v", item)
	}
	if _, ok := item["next"].(*types.AttributeValueMemberN); !ok {
		t.Errorf("schedule item without its next: %v", item)
	}
}
