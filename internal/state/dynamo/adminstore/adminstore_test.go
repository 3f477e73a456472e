package adminstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/awsconf"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/testkit/testenv"
)

var (
	clientOnce sync.Once
	client     *dynamodb.Client
	clientErr  error
)

// testClient returns a client for AWS_ENDPOINT_URL_DYNAMODB, or skips.
func testClient(t testing.TB) *dynamodb.Client {
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

// newTable creates a table for the test and deletes it at its end.
func newTable(t testing.TB) string {
	t.Helper()
	c := testClient(t)
	name := testenv.Name(t, "admin")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := dynamo.CreateTable(ctx, c, name); err != nil {
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

// stores is the adapters of one namespace of the table, with the table's
// client and name for the tests that read or write items themselves. The
// task store is there for the schedule suite (its ticker reads tasks).
// Schedules is embedded under another name: a field called Schedules
// would hide the method of that name.
type stores struct {
	*schedulesPort
	*dynamo.Tasks
	client *dynamodb.Client
	table  string
	ns     string
	admin  *Store
}

type schedulesPort = Schedules

// shared gives tests of one top-level test fresh stores in one table, each
// in a namespace of its own.
type shared struct {
	table string
	n     atomic.Int64
}

func newShared(t testing.TB) *shared { return &shared{table: newTable(t)} }

func (sh *shared) store(t testing.TB) *stores {
	t.Helper()
	return open(testClient(t), sh.table, fmt.Sprintf("ns%d/", sh.n.Add(1)))
}

func open(c *dynamodb.Client, table, ns string) *stores {
	tbl := dynamo.New(c, table, dynamo.WithNamespace(ns))
	a := New(tbl)
	return &stores{schedulesPort: a.Schedules(), Tasks: tbl.Tasks(), client: c, table: table, ns: ns, admin: a}
}

// answerLoser sends the next write of the chosen operations to DynamoDB and
// then fails as a connection reset under the answer would: the write is
// applied, the client never hears of it, and the SDK sends it again.
type answerLoser struct {
	next http.RoundTripper
	mu   sync.Mutex
	ops  map[string]int // operation (X-Amz-Target suffix) → answers still to lose
	lost []string
}

func (l *answerLoser) lose(op string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops[op] += n
}

func (l *answerLoser) RoundTrip(r *http.Request) (*http.Response, error) {
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

// losingClient returns a DynamoDB client whose answers loser can lose.
func losingClient(t *testing.T) (*dynamodb.Client, *answerLoser) {
	t.Helper()
	cfg, err := awsconf.Load(t.Context(), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	loser := &answerLoser{next: http.DefaultTransport, ops: map[string]int{}}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: loser}
		o.DisableValidateResponseChecksum = true
	}), loser
}
