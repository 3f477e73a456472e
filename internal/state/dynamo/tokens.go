// The API tokens (apitoken.Store): one item per token in a partition of
// their own, pk=token sk=<token id>, holding the token as apitoken.Marshal
// encodes it (the secret's digest, never the secret) in data, the time it
// was revoked in revoked (Unix nanoseconds; absent while it is not), and
// expires = its expiry + tokenKeep (the table's TTL removes dead tokens
// after they have been listed as expired for a while). Reads are
// consistent, so a revocation is seen by the next read of any process.

package dynamo

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apitoken"
	"tilecache/internal/apperr"
)

const (
	pkToken   = "token"
	aRevoked  = "revoked"
	tokenKeep = 30 * 24 * time.Hour
)

// Tokens is the API tokens over the table (apitoken.Store).
type Tokens struct{ *store }

var _ apitoken.Store = (*Tokens)(nil)

// Tokens returns the API tokens over the table.
func (t *Table) Tokens() *Tokens { return &Tokens{t.s} }

// Create stores t unless a token of its id exists: one conditional
// PutItem.
func (s *Tokens) Create(ctx context.Context, t apitoken.Token) error {
	data, err := apitoken.Marshal(t)
	if err != nil {
		return err
	}
	item := s.key(pkToken, t.ID)
	item[aData] = str(string(data))
	item[attrExpires] = num(t.Expires.Add(tokenKeep).Unix())
	s.wrote("CreateToken", 1)
	e := newExpr()
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(" + e.n(attrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	}, s.callOpts...)
	if isConditionFailed(err) {
		return apperr.New(apperr.Conflict, "Token %s exists", apperr.Show(t.ID))
	}
	if err != nil {
		return s.fail(ctx, err, "create token %s", t.ID)
	}
	return nil
}

// Get returns the token of id: one consistent GetItem.
func (s *Tokens) Get(ctx context.Context, id string) (apitoken.Token, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: s.key(pkToken, id), ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return apitoken.Token{}, s.fail(ctx, err, "read token %s", id)
	}
	if len(out.Item) == 0 {
		return apitoken.Token{}, apperr.New(apperr.NotFound, "Token %s not found", apperr.Show(id))
	}
	return decodeToken(out.Item)
}

// List returns every token, oldest first: a consistent Query of the
// partition.
func (s *Tokens) List(ctx context.Context) ([]apitoken.Token, error) {
	e := newExpr()
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String(e.n(attrPK) + " = " + e.v(str(s.ns+pkToken))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	var l []apitoken.Token
	for p.HasMorePages() {
		out, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return nil, s.fail(ctx, err, "list tokens")
		}
		for _, item := range out.Items {
			t, err := decodeToken(item)
			if err != nil {
				return nil, err
			}
			l = append(l, t)
		}
	}
	slices.SortFunc(l, func(a, b apitoken.Token) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return l, nil
}

// Revoke marks the token of id revoked at at, unless it already is: one
// conditional UpdateItem.
func (s *Tokens) Revoke(ctx context.Context, id string, at time.Time) error {
	e := newExpr()
	s.wrote("RevokeToken", 1)
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       s.key(pkToken, id),
		UpdateExpression:          aws.String("SET " + e.n(aRevoked) + " = if_not_exists(" + e.n(aRevoked) + ", " + e.v(num(at.UnixNano())) + ")"),
		ConditionExpression:       aws.String("attribute_exists(" + e.n(attrPK) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	}, s.callOpts...)
	if isConditionFailed(err) {
		return apperr.New(apperr.NotFound, "Token %s not found", apperr.Show(id))
	}
	if err != nil {
		return s.fail(ctx, err, "revoke token %s", id)
	}
	return nil
}

func decodeToken(item map[string]types.AttributeValue) (apitoken.Token, error) {
	data, _ := strAttr(item, aData)
	t, err := apitoken.Unmarshal([]byte(data))
	if err != nil {
		return t, err
	}
	if n, ok := numAttr(item, aRevoked); ok {
		t.Revoked = time.Unix(0, n).UTC()
	}
	return t, nil
}
