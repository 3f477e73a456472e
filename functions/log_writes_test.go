package functions_test

import (
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/quota"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/tilestore"
)

// failingUpdates is fakeDynamoDB with every UpdateItem refused, so that
// a read batch's mark is taken back (quota.ReadLog.Record).
type failingUpdates struct{ *fakeDynamoDB }

func (f failingUpdates) Do(r *http.Request) (*http.Response, error) {
	res, err := f.fakeDynamoDB.Do(r)
	if err != nil || r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.UpdateItem" {
		return res, err
	}
	const answer = `{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"refused by the test"}`
	return &http.Response{StatusCode: 400, Status: "400 Bad Request", Request: r, ContentLength: int64(len(answer)),
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Body: io.NopCloser(strings.NewReader(answer))}, nil
}

// logItems records a batch of page reads as the log function does
// (quota.ReadLog over the task table), once stored and once failing (its
// mark taken back), on a fake DynamoDB table; it returns the items the
// requests acted on.
func logItems(t *testing.T, hashKey string) []itemCall {
	t.Helper()
	reads := []quota.Access{{Page: quota.PageKey{Set: tilestore.SetName{Layer: "demo:world", GridSetID: "EPSG:4326", FormatID: "png", ParametersID: "default"}, Z: 3},
		Hits: 2, Last: time.Now()}}
	var calls []itemCall
	for i, fail := range []bool{false, true} {
		fake := &fakeDynamoDB{hashKey: hashKey}
		var hc aws.HTTPClient = fake
		if fail {
			hc = failingUpdates{fake}
		}
		client := dynamodb.New(dynamodb.Options{
			Region: "us-east-1", BaseEndpoint: aws.String("http://dynamodb.invalid"), HTTPClient: hc,
			Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1,
		})
		table := dynamo.New(client, "table")
		_, err := quota.NewReadLog(table.Usage(), table.ReadMarks()).Record(t.Context(), "logs/E2EXAMPLE.gz@etag#"+string(rune('1'+i)), reads)
		if (err != nil) != fail {
			t.Fatalf("record a batch (updates failing: %v): %v", fail, err)
		}
		fake.mu.Lock()
		if fake.err != nil {
			t.Fatal(fake.err)
		}
		calls = append(calls, fake.calls...)
		fake.mu.Unlock()
	}
	return calls
}

// TestTemplateLogWritesLeadingKeys: the log function's role writes to
// the task table only what recording reads does — UpdateItem of usage
// pages, PutItem and DeleteItem of read-batch marks — each statement
// limited by LeadingKeys and each of its actions and patterns used; it
// can neither create nor delete a usage page, nor touch other items.
func TestTemplateLogWritesLeadingKeys(t *testing.T) {
	tp := loadTemplate(t)
	w := alarmWorld(tp, map[string]string{"EnableCdn": "true", "CdnAccessLogs": "true"})
	w.atts["TaskTable.Arn"] = "arn:aws:dynamodb:us-east-1:000000000000:table/table"
	w.atts["LogsLogGroup.Arn"] = "arn:aws:logs:us-east-1:000000000000:log-group:tc-logs"
	w.atts["LogsDeadLetterQueue.Arn"] = "arn:aws:sqs:us-east-1:000000000000:tc-logs-dlq"
	stmts := roleStatements(t, tp, "LogsFunction", w)
	table := w.atts["TaskTable.Arn"]
	allowed := func(action, pk string) bool {
		c := lambdatest.Call{Action: "dynamodb:" + action, Resource: table, Op: action, Keys: map[string]string{"dynamodb:LeadingKeys": pk}}
		return slices.ContainsFunc(stmts, func(s statement) bool { return s.allows(c) })
	}
	calls := logItems(t, tableHashKey(t, tp))
	seen := map[itemCall]bool{}
	for _, c := range calls {
		seen[c] = true
		if !allowed(c.action, c.pk) {
			t.Errorf("recording reads makes %s of %s, which LogsRole refuses", c.action, c.pk)
		}
	}
	t.Logf("items: %v", slices.SortedFunc(maps.Keys(seen), func(a, b itemCall) int { return strings.Compare(a.pk+a.action, b.pk+b.action) }))
	// Every write a statement allows is made: action and pattern.
	for _, s := range stmts {
		if !slices.ContainsFunc(s.resources, func(r string) bool { return strings.HasPrefix(r, table) }) {
			continue
		}
		for _, a := range s.actions {
			if !slices.Contains(writeActions, a) {
				continue
			}
			for _, p := range strs(m(s.condition, "ForAllValues:StringLike", "dynamodb:LeadingKeys")) {
				if !slices.ContainsFunc(calls, func(c itemCall) bool { return "dynamodb:"+c.action == a && globMatch(p, c.pk) }) {
					t.Errorf("LogsRole statement %s allows %s of %s, which recording reads never makes (least privilege)", s.sid, a, p)
				}
			}
			if len(s.condition) != 1 || m(s.condition, "ForAllValues:StringLike", "dynamodb:LeadingKeys") == nil {
				t.Errorf("LogsRole statement %s writes %s with condition %v: want only LeadingKeys", s.sid, a, s.condition)
			}
		}
	}
	for _, c := range []itemCall{{"PutItem", "pages#demo:world"}, {"DeleteItem", "pages#demo:world"}, {"UpdateItem", "claim#reads#x"},
		{"PutItem", "task#1"}, {"UpdateItem", "usage"}, {"DeleteItem", "config"}, {"PutItem", "claim#x"}} {
		if allowed(c.action, c.pk) {
			t.Errorf("LogsRole allows %s of %s", c.action, c.pk)
		}
	}
}
