// The accounts added at run time (account.Store): one item per account in
// a partition of their own, pk=account sk=<name>, holding the account as
// account.Marshal encodes it (a bcrypt hash, never a password) in data.
// Sort keys are ordered by their UTF-8 bytes, so the listing is by name.
// Reads are consistent: a change is seen by the next read of any process.

package adminstore

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/account"
	"tilecache/internal/apperr"
	"tilecache/internal/state/dynamo"
)

const pkAccount = "account"

// Accounts is the stored accounts over the table (account.Store).
type Accounts struct{ it *dynamo.Items }

var _ account.Store = (*Accounts)(nil)

// Create stores a unless an account of its name exists: one conditional
// PutItem.
func (s *Accounts) Create(ctx context.Context, a account.Account) error {
	return s.put(ctx, "CreateAccount", a, "attribute_not_exists", apperr.Conflict, "Account %s exists")
}

// Update replaces the account of a's name, which must exist: one
// conditional PutItem.
func (s *Accounts) Update(ctx context.Context, a account.Account) error {
	return s.put(ctx, "UpdateAccount", a, "attribute_exists", apperr.NotFound, "Account %s not found")
}

func (s *Accounts) put(ctx context.Context, op string, a account.Account, cond string, kind apperr.Kind, msg string) error {
	data, err := account.Marshal(a)
	if err != nil {
		return err
	}
	item := s.it.Key(pkAccount, a.Name)
	item[aData] = dynamo.Str(string(data))
	e := dynamo.NewExpr()
	ok, err := s.it.Put(ctx, op, fmt.Sprintf("write account %s", a.Name), &dynamodb.PutItemInput{
		Item:                     item,
		ConditionExpression:      aws.String(cond + "(" + e.N(dynamo.AttrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	})
	if err != nil {
		return err
	}
	if !ok {
		return apperr.New(kind, msg, apperr.Show(a.Name))
	}
	return nil
}

// Get returns the account of name: one consistent GetItem.
func (s *Accounts) Get(ctx context.Context, name string) (account.Account, error) {
	item, err := s.it.Get(ctx, fmt.Sprintf("read account %s", name), s.it.Key(pkAccount, name))
	if err != nil {
		return account.Account{}, err
	}
	if item == nil {
		return account.Account{}, apperr.New(apperr.NotFound, "Account %s not found", apperr.Show(name))
	}
	data, _ := dynamo.StrAttr(item, aData)
	return account.Unmarshal([]byte(data))
}

// List returns every account, by name: a consistent Query of the
// partition.
func (s *Accounts) List(ctx context.Context) ([]account.Account, error) {
	e := dynamo.NewExpr()
	var l []account.Account
	err := s.it.Query(ctx, "list accounts", &dynamodb.QueryInput{
		KeyConditionExpression:    aws.String(e.N(dynamo.AttrPK) + " = " + e.V(dynamo.Str(s.it.Partition(pkAccount)))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	}, func(item dynamo.Item) (bool, error) {
		data, _ := dynamo.StrAttr(item, aData)
		a, err := account.Unmarshal([]byte(data))
		if err != nil {
			return false, err
		}
		l = append(l, a)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Delete removes the account of name: one conditional DeleteItem.
func (s *Accounts) Delete(ctx context.Context, name string) error {
	e := dynamo.NewExpr()
	ok, err := s.it.Delete(ctx, "DeleteAccount", fmt.Sprintf("delete account %s", name), &dynamodb.DeleteItemInput{
		Key:                      s.it.Key(pkAccount, name),
		ConditionExpression:      aws.String("attribute_exists(" + e.N(dynamo.AttrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	})
	if err != nil {
		return err
	}
	if !ok {
		return apperr.New(apperr.NotFound, "Account %s not found", apperr.Show(name))
	}
	return nil
}
