// The API tokens (apitoken.Store): one item per token in a partition of
// their own, pk=token sk=<token id>, holding the token as apitoken.Marshal
// encodes it (the secret's digest, never the secret) in data, the time it
// was revoked in revoked (Unix nanoseconds; absent while it is not), and
// expires = its expiry + tokenKeep (the table's TTL removes dead tokens
// after they have been listed as expired for a while). Reads are
// consistent, so a revocation is seen by the next read of any process.

package adminstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/apitoken"
	"tilecache/internal/apperr"
	"tilecache/internal/state/dynamo"
)

const (
	pkToken   = "token"
	aRevoked  = "revoked"
	tokenKeep = 30 * 24 * time.Hour
)

// Tokens is the API tokens over the table (apitoken.Store).
type Tokens struct{ it *dynamo.Items }

var _ apitoken.Store = (*Tokens)(nil)

// Create stores t unless a token of its id exists: one conditional
// PutItem.
func (s *Tokens) Create(ctx context.Context, t apitoken.Token) error {
	data, err := apitoken.Marshal(t)
	if err != nil {
		return err
	}
	item := s.it.Key(pkToken, t.ID)
	item[aData] = dynamo.Str(string(data))
	item[dynamo.AttrExpires] = dynamo.Num(t.Expires.Add(tokenKeep).Unix())
	e := dynamo.NewExpr()
	ok, err := s.it.Put(ctx, "CreateToken", fmt.Sprintf("create token %s", t.ID), &dynamodb.PutItemInput{
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(" + e.N(dynamo.AttrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	})
	if err != nil {
		return err
	}
	if !ok {
		return apperr.New(apperr.Conflict, "Token %s exists", apperr.Show(t.ID))
	}
	return nil
}

// Get returns the token of id: one consistent GetItem.
func (s *Tokens) Get(ctx context.Context, id string) (apitoken.Token, error) {
	item, err := s.it.Get(ctx, fmt.Sprintf("read token %s", id), s.it.Key(pkToken, id))
	if err != nil {
		return apitoken.Token{}, err
	}
	if item == nil {
		return apitoken.Token{}, apperr.New(apperr.NotFound, "Token %s not found", apperr.Show(id))
	}
	return decodeToken(item)
}

// List returns every token, oldest first: a consistent Query of the
// partition.
func (s *Tokens) List(ctx context.Context) ([]apitoken.Token, error) {
	e := dynamo.NewExpr()
	var l []apitoken.Token
	err := s.it.Query(ctx, "list tokens", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String(e.N(dynamo.AttrPK) + " = " + e.V(dynamo.Str(s.it.Partition(pkToken)))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	}, func(item dynamo.Item) (bool, error) {
		t, err := decodeToken(item)
		if err != nil {
			return false, err
		}
		l = append(l, t)
		return true, nil
	})
	if err != nil {
		return nil, err
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
	e := dynamo.NewExpr()
	ok, err := s.it.Update(ctx, "RevokeToken", fmt.Sprintf("revoke token %s", id), &dynamodb.UpdateItemInput{
		Key:                       s.it.Key(pkToken, id),
		UpdateExpression:          aws.String("SET " + e.N(aRevoked) + " = if_not_exists(" + e.N(aRevoked) + ", " + e.V(dynamo.Num(at.UnixNano())) + ")"),
		ConditionExpression:       aws.String("attribute_exists(" + e.N(dynamo.AttrPK) + ")"),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
	})
	if err != nil {
		return err
	}
	if !ok {
		return apperr.New(apperr.NotFound, "Token %s not found", apperr.Show(id))
	}
	return nil
}

func decodeToken(item dynamo.Item) (apitoken.Token, error) {
	data, _ := dynamo.StrAttr(item, aData)
	t, err := apitoken.Unmarshal([]byte(data))
	if err != nil {
		return t, err
	}
	if n, ok := dynamo.NumAttr(item, aRevoked); ok {
		t.Revoked = time.Unix(0, n).UTC()
	}
	return t, nil
}
