// The accounts added at run time (account.Store): one item per account in
// a partition of their own, pk=account sk=<name>, holding the account as
// account.Marshal encodes it (a bcrypt hash, never a password) in data.
// Sort keys are ordered by their UTF-8 bytes, so the listing is by name.
// Reads are consistent: a change is seen by the next read of any process.

package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/account"
	"tilecache/internal/apperr"
)

const pkAccount = "account"

// Accounts is the stored accounts over the table (account.Store).
type Accounts struct{ *store }

var _ account.Store = (*Accounts)(nil)

// Accounts returns the stored accounts over the table.
func (t *Table) Accounts() *Accounts { return &Accounts{t.s} }

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
	item := s.key(pkAccount, a.Name)
	item[aData] = str(string(data))
	s.wrote(op, 1)
	e := newExpr()
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:      aws.String(cond + "(" + e.n(attrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	}, s.callOpts...)
	if isConditionFailed(err) {
		return apperr.New(kind, msg, apperr.Show(a.Name))
	}
	if err != nil {
		return s.fail(ctx, err, "write account %s", a.Name)
	}
	return nil
}

// Get returns the account of name: one consistent GetItem.
func (s *Accounts) Get(ctx context.Context, name string) (account.Account, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: s.key(pkAccount, name), ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return account.Account{}, s.fail(ctx, err, "read account %s", name)
	}
	if len(out.Item) == 0 {
		return account.Account{}, apperr.New(apperr.NotFound, "Account %s not found", apperr.Show(name))
	}
	data, _ := strAttr(out.Item, aData)
	return account.Unmarshal([]byte(data))
}

// List returns every account, by name: a consistent Query of the
// partition.
func (s *Accounts) List(ctx context.Context) ([]account.Account, error) {
	e := newExpr()
	p := dynamodb.NewQueryPaginator(s.client, &dynamodb.QueryInput{
		TableName:                 &s.table,
		KeyConditionExpression:    aws.String(e.n(attrPK) + " = " + e.v(str(s.ns+pkAccount))),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	var l []account.Account
	for p.HasMorePages() {
		out, err := p.NextPage(ctx, s.callOpts...)
		if err != nil {
			return nil, s.fail(ctx, err, "list accounts")
		}
		for _, item := range out.Items {
			data, _ := strAttr(item, aData)
			a, err := account.Unmarshal([]byte(data))
			if err != nil {
				return nil, err
			}
			l = append(l, a)
		}
	}
	return l, nil
}

// Delete removes the account of name: one conditional DeleteItem.
func (s *Accounts) Delete(ctx context.Context, name string) error {
	e := newExpr()
	s.wrote("DeleteAccount", 1)
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table, Key: s.key(pkAccount, name),
		ConditionExpression:      aws.String("attribute_exists(" + e.n(attrPK) + ")"),
		ExpressionAttributeNames: e.Names(),
	}, s.callOpts...)
	if isConditionFailed(err) {
		return apperr.New(apperr.NotFound, "Account %s not found", apperr.Show(name))
	}
	if err != nil {
		return s.fail(ctx, err, "delete account %s", name)
	}
	return nil
}
