// Package dynamotest gives the DynamoDB adapters' tests their client of
// the local stack's DynamoDB (AWS_ENDPOINT_URL_DYNAMODB), and one whose
// answers a test can lose, as a connection reset under the answer would.
// It imports no adapter, so the adapters' own (internal) tests use it.
package dynamotest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/awsconf"
	"tilecache/internal/testkit/testenv"
)

var (
	clientOnce sync.Once
	client     *dynamodb.Client
	clientErr  error
)

// Client returns a client for AWS_ENDPOINT_URL_DYNAMODB, or skips.
func Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	testenv.RequireDynamoDB(t)
	clientOnce.Do(func() {
		cfg, err := awsconf.Load(context.Background(), os.LookupEnv)
		if err != nil {
			clientErr = err
			return
		}
		client = dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
			o.DisableValidateResponseChecksum = true // DynamoDB Local (devstack notes)
		})
	})
	if clientErr != nil {
		t.Fatal(clientErr)
	}
	return client
}

// AnswerLoser sends the next write of the chosen operations to DynamoDB
// and then fails as a connection reset under the answer would: the write
// is applied, the client never hears of it, and the SDK sends it again.
type AnswerLoser struct {
	next http.RoundTripper
	mu   sync.Mutex
	ops  map[string]int // operation (X-Amz-Target suffix) → answers still to lose
	lost []string
}

// Lose loses the answers of the next n calls of op (PutItem, …).
func (l *AnswerLoser) Lose(op string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops[op] += n
}

// Lost returns the operations whose answers were lost, in order.
func (l *AnswerLoser) Lost() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lost...)
}

// RoundTrip implements http.RoundTripper.
func (l *AnswerLoser) RoundTrip(r *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	res, err := l.next.RoundTrip(r)
	if err != nil {
		return res, err
	}
	l.mu.Lock()
	drop := l.ops[op] > 0
	if drop {
		l.ops[op]--
		l.lost = append(l.lost, op)
	}
	l.mu.Unlock()
	if !drop {
		return res, nil
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return nil, errors.New("read: connection reset by peer (answer lost by the test)")
}

// LosingClient returns a DynamoDB client whose answers the loser can lose.
func LosingClient(t testing.TB) (*dynamodb.Client, *AnswerLoser) {
	t.Helper()
	testenv.RequireDynamoDB(t)
	cfg, err := awsconf.Load(t.Context(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	loser := &AnswerLoser{next: http.DefaultTransport, ops: map[string]int{}}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: loser}
		o.DisableValidateResponseChecksum = true
	}), loser
}

// Table creates a table named for the test (prefix, testenv.Name) with
// create (the adapters' dynamo.CreateTable, which this package cannot
// import) and deletes it when the test ends; it returns its name.
func Table(t testing.TB, prefix string, create func(context.Context, *dynamodb.Client, string) error) string {
	t.Helper()
	c := Client(t)
	name := testenv.Name(t, prefix)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := create(ctx, c, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name}); err != nil {
			t.Errorf("delete table %s: %v", name, err)
		}
	})
	return name
}
