// The claims of render on miss (onmiss.Claims): who renders a metatile, and
// the notes left for the others. One item per key, pk=claim#<key>
// sk=claim, leaving the table by its TTL an hour after it lapses.

package dynamo

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Claims are the claims of render on miss (onmiss.Claims) over a Table.
type Claims struct{ *store }

// Claim takes key for owner until now+ttl unless another owner's claim
// has not expired (onmiss.Claims): one conditional PutItem. Claims expire
// from the table by its TTL an hour after they lapse.
func (s *Claims) Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error) {
	e := newExpr()
	item := s.key("claim#"+key, skClaim)
	item[aOwner] = str(owner)
	item[aUntil] = num(nanos(now.Add(ttl)))
	item[attrExpires] = num(now.Add(ttl + time.Hour).Unix())
	s.wrote("Claim", 1)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table,
		Item:      item,
		ConditionExpression: aws.String("attribute_not_exists(" + e.n(attrPK) + ") OR " + e.n(aOwner) + " = " + e.v(str(owner)) +
			" OR " + e.n(aUntil) + " <= " + e.v(num(nanos(now)))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return false, nil
	}
	if err != nil {
		return false, s.fail(ctx, err, "claim %s", key)
	}
	return true, nil
}

// Unclaim releases owner's claim of key (onmiss.Claims).
func (s *Claims) Unclaim(ctx context.Context, key, owner string) error {
	e := newExpr()
	s.wrote("Unclaim", 1)
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 &s.table,
		Key:                       s.key("claim#"+key, skClaim),
		ConditionExpression:       aws.String(e.n(aOwner) + " = " + e.v(str(owner))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return nil
	}
	if err != nil {
		return s.fail(ctx, err, "release claim %s", key)
	}
	return nil
}

// Settle replaces owner's claim of key with note, kept until until: a
// Claim of key fails and Peek tells the note until then (onmiss.Claims).
// Nothing when the claim is no longer owner's. One conditional PutItem.
func (s *Claims) Settle(ctx context.Context, key, owner, note string, until time.Time) error {
	e := newExpr()
	s.wrote("Settle", 1)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 &s.table,
		Item:                      s.noteItem(key, note, until),
		ConditionExpression:       aws.String(e.n(aOwner) + " = " + e.v(str(owner))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return nil
	}
	if err != nil {
		return s.fail(ctx, err, "settle claim %s", key)
	}
	return nil
}

// Note leaves note at key until until, whatever key held (onmiss.Claims).
// One PutItem.
func (s *Claims) Note(ctx context.Context, key, note string, until time.Time) error {
	s.wrote("Note", 1)
	if _, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: s.noteItem(key, note, until)}, s.callOpts...); err != nil {
		return s.fail(ctx, err, "write note %s", key)
	}
	return nil
}

// noteItem is a claim item holding a note and no owner; it leaves the
// table by its TTL an hour after it lapses.
func (s *Claims) noteItem(key, note string, until time.Time) map[string]types.AttributeValue {
	item := s.key("claim#"+key, skClaim)
	item[aNote] = str(note)
	item[aUntil] = num(nanos(until))
	item[attrExpires] = num(until.Add(time.Hour).Unix())
	return item
}

// Peek reads what key holds at now: the owner of a live claim or a live
// note; all empty when neither (onmiss.Claims). One consistent GetItem.
func (s *Claims) Peek(ctx context.Context, key string, now time.Time) (owner, note string, until time.Time, err error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            s.key("claim#"+key, skClaim),
		ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return "", "", time.Time{}, s.fail(ctx, err, "read claim %s", key)
	}
	u, _ := numAttr(out.Item, aUntil)
	if len(out.Item) == 0 || u <= nanos(now) {
		return "", "", time.Time{}, nil
	}
	owner, _ = strAttr(out.Item, aOwner)
	note, _ = strAttr(out.Item, aNote)
	return owner, note, fromNanos(u), nil
}
