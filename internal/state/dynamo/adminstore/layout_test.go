package adminstore

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/account"
	"tilecache/internal/audit"
	"tilecache/internal/auth"
)

// TestItemsOfEarlierVersions: the items that package dynamo wrote when it
// held these adapters, spelt out attribute by attribute, read the same
// through this package, and what it writes lands in the same keys and
// attributes: a deployment's accounts, tokens and audit trail
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
	hash := strings.Repeat("ab", 32)

	put(map[string]types.AttributeValue{"pk": S(s.ns + "account"), "sk": S("alice"),
		"data": S(`{"name":"alice","hash":"$2a$10$abcdefghijklmnopqrstuu","role":"operator","created":"2026-01-02T03:04:05Z","updated":"2026-01-03T03:04:05Z","by":"root"}`)})
	put(map[string]types.AttributeValue{"pk": S(s.ns + "token"), "sk": S("0123456789abcdef"),
		"data":    S(`{"id":"0123456789abcdef","hash":"` + hash + `","role":"viewer","layers":["a"],"expires":"2027-01-02T00:00:00Z","creator":"alice","created":"2026-01-02T00:00:00Z"}`),
		"revoked": N("1767323045000000000"), "expires": N("1801526400")})
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	id := audit.NewID(at)
	put(map[string]types.AttributeValue{"pk": S(s.ns + "audit#" + at.Format(time.DateOnly)), "sk": S(id),
		"data":  S(`{"id":"` + id + `","at":"` + at.Format(time.RFC3339) + `","account":"alice","layer":"a","method":"POST","path":"/rest/seed/a.json","status":200}`),
		"layer": S("a"), "account": S("alice"), "expires": N("9999999999")})
	a, err := s.admin.Accounts().Get(ctx, "alice")
	if err != nil || a.Role != auth.Operator || string(a.Hash) != "$2a$10$abcdefghijklmnopqrstuu" || a.By != "root" {
		t.Errorf("account of an earlier version: %+v, %v", a, err)
	}
	tk, err := s.admin.Tokens().Get(ctx, "0123456789abcdef")
	if err != nil || tk.Role != auth.Viewer || tk.Creator != "alice" || !tk.Revoked.Equal(time.Unix(0, 1767323045000000000)) {
		t.Errorf("token of an earlier version: %+v, %v", tk, err)
	}
	page, err := s.admin.Audit(audit.DefaultRetention).List(ctx, audit.Query{Account: "alice", Layer: "a"})
	if err != nil || len(page.Records) != 1 || page.Records[0].ID != id || page.Records[0].Status != 200 {
		t.Errorf("audit record of an earlier version: %+v, %v", page, err)
	}
	// And what this package writes, where the earlier version read it.
	if err := s.admin.Accounts().Create(ctx, account.Account{Name: "bob", Hash: []byte("h"), Role: auth.Admin, Created: at, Updated: at}); err != nil {
		t.Fatal(err)
	}
	if item := get("account", "bob"); !strings.Contains(item["data"].(*types.AttributeValueMemberS).Value, `"role":"admin"`) {
		t.Errorf("account item: %v", item)
	}
	if err := s.admin.Tokens().Revoke(ctx, "0123456789abcdef", time.Now()); err != nil {
		t.Fatal(err)
	}
	if item := get("token", "0123456789abcdef"); item["revoked"].(*types.AttributeValueMemberN).Value != "1767323045000000000" {
		t.Errorf("token revoked twice: %v", item["revoked"])
	}
	r := audit.Record{At: at, Account: "bob", Layer: "b", Method: "PUT", Path: "/rest/layers/b.json", Status: 200}
	if err := s.admin.Audit(48*time.Hour).Append(ctx, r); err != nil {
		t.Fatal(err)
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{TableName: &s.table, KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": S(s.ns + "audit#" + at.Format(time.DateOnly))}})
	if err != nil || len(out.Items) != 2 {
		t.Fatalf("audit partition of %s: %v, %v; want two records", at.Format(time.DateOnly), out, err)
	}
}
