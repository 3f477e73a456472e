package functions_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/app/apptest"
	"tilecache/internal/app/sources"
	"tilecache/internal/layer"
	"tilecache/internal/onmiss"
	"tilecache/internal/source"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/task"
	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/tilestore/filestore"
)

// The tile function is reached by anyone through the CDN, so its role
// writes only the task table items of render on miss, by their partition
// key (dynamodb:LeadingKeys). TestTemplateTileWritesLeadingKeys runs the
// code the tile function runs on a miss against a fake DynamoDB endpoint
// and checks the role against the items its requests write.

// itemCall is one item a DynamoDB request acts on, as IAM authorizes it:
// the action (a transaction's items each with their own) and the item's
// partition key value, its dynamodb:LeadingKeys.
type itemCall struct{ action, pk string }

// itemCalls reads the items of a DynamoDB JSON request whose table's
// partition key is hashKey. A Query's partition is in its key condition,
// not an item: it has none here.
func itemCalls(op string, body []byte, hashKey string) ([]itemCall, error) {
	type attrs map[string]struct{ S string }
	var req struct {
		Key, Item     attrs
		TransactItems []map[string]struct{ Key, Item attrs }
		RequestItems  map[string]json.RawMessage
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%s: %v", op, err)
	}
	pk := func(a attrs) string { return a[hashKey].S }
	var out []itemCall
	switch op {
	case "GetItem", "UpdateItem", "DeleteItem":
		out = append(out, itemCall{op, pk(req.Key)})
	case "PutItem":
		out = append(out, itemCall{op, pk(req.Item)})
	case "TransactWriteItems", "TransactGetItems":
		kinds := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
		for _, it := range req.TransactItems {
			for kind, v := range it {
				out = append(out, itemCall{kinds[kind], pk(v.Key) + pk(v.Item)})
			}
		}
	case "BatchWriteItem":
		for _, raw := range req.RequestItems {
			var reqs []struct {
				PutRequest    struct{ Item attrs }
				DeleteRequest struct{ Key attrs }
			}
			if err := json.Unmarshal(raw, &reqs); err != nil {
				return nil, fmt.Errorf("%s: %v", op, err)
			}
			for _, r := range reqs {
				out = append(out, itemCall{op, pk(r.PutRequest.Item) + pk(r.DeleteRequest.Key)})
			}
		}
	case "BatchGetItem":
		for _, raw := range req.RequestItems {
			var ka struct{ Keys []attrs }
			if err := json.Unmarshal(raw, &ka); err != nil {
				return nil, fmt.Errorf("%s: %v", op, err)
			}
			for _, k := range ka.Keys {
				out = append(out, itemCall{op, pk(k)})
			}
		}
	}
	for _, c := range out {
		if c.pk == "" || strings.HasPrefix(c.action, "?") {
			return nil, fmt.Errorf("%s: an item without a partition key %s, or of an unknown kind: %s", op, hashKey, body)
		}
	}
	return out, nil
}

// fakeDynamoDB answers every request as DynamoDB would a table holding no
// item but the tasks a Query of the index "active" returns, and records
// the items of each request.
type fakeDynamoDB struct {
	hashKey string
	active  []string // items of the index, DynamoDB JSON
	mu      sync.Mutex
	calls   []itemCall
	err     error
}

func (f *fakeDynamoDB) Do(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	calls, err := itemCalls(op, body, f.hashKey)
	f.mu.Lock()
	f.calls = append(f.calls, calls...)
	if err != nil && f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	answer := "{}"
	switch op {
	case "Query":
		var q struct{ IndexName string }
		json.Unmarshal(body, &q)
		if q.IndexName == "active" {
			answer = fmt.Sprintf(`{"Count":%d,"ScannedCount":%[1]d,"Items":[%s]}`, len(f.active), strings.Join(f.active, ","))
		} else {
			answer = `{"Count":0,"ScannedCount":0,"Items":[]}`
		}
	case "BatchGetItem":
		answer = `{"Responses":{},"UnprocessedKeys":{}}`
	case "GetItem":
		// A usage page exists, so that a flush of reads (which reads the
		// page before its conditional update) goes on to write it.
		if len(calls) == 1 && strings.HasPrefix(calls[0].pk, "pages#") {
			answer = `{"Item":{"created":{"N":"1"},"tiles":{"N":"1"},"bytes":{"N":"4096"}}}`
		}
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Request: r, ContentLength: int64(len(answer)),
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, Body: io.NopCloser(strings.NewReader(answer))}, nil
}

// capped is a source with an upstream cap, so that misses take render
// slots (claims) as a WMS layer's with maxConcurrent do.
type capped struct{ source.Source }

func (capped) UpstreamCap(metaW, metaH int) (limit, perLane int) { return 4, 1 }

// tileMissLayers renders on miss: od:test works, od:broken's upstream
// fails at level 2.
const tileMissLayers = `
  - name: od:test
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    source: {type: testpattern}
  - name: od:broken
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [4, 4]
    renderOnMiss: {enabled: true}
    source: {type: testpattern, failZooms: [2]}
`

// taskJSON is a task item of the index as DynamoDB returns it.
func taskJSON(id int64, layer string, typ task.Type, status task.Status, created, finished time.Time) string {
	item := fmt.Sprintf(`{"pk":{"S":"task#%d"},"sk":{"S":"task"},"gsi1pk":{"S":"active"},"gsi1sk":{"N":"%[1]d"},"id":{"N":"%[1]d"},"job":{"N":"%[1]d"},`+
		`"layer":{"S":%q},"type":{"N":"%d"},"status":{"N":"%d"},"start":{"N":"0"},"end":{"N":"10"},"cursor":{"N":"0"},"total":{"N":"10"},`+
		`"done":{"N":"0"},"left":{"N":"10"},"hb":{"N":"0"},"created":{"N":"%d"}`, id, layer, typ, status, created.UnixNano())
	if !finished.IsZero() {
		item += fmt.Sprintf(`,"finished":{"N":"%d"}`, finished.UnixNano())
	}
	return item + "}"
}

// tileMissItems runs misses through the engine the tile function wires
// (the tile origin, tileorigin.New: the task store as Claims and Usage) on a fake DynamoDB
// table whose index holds, for layer od:test, a running seed (the render
// marks the layer for a recount), a reseed submitted during the render
// whose job cannot be read (the render's tiles are removed and their usage
// taken back) and a task finished long ago (List prunes its index entry);
// it returns the items the requests acted on.
func tileMissItems(t *testing.T, hashKey string) []itemCall {
	t.Helper()
	layers, err := layer.Load(lambdatest.LayersFile(t, apptest.Layers+tileMissLayers))
	if err != nil {
		t.Fatal(err)
	}
	sources, err := sources.Of(layers, nil)
	if err != nil {
		t.Fatal(err)
	}
	sources["od:test"] = capped{sources["od:test"]}
	tiles, err := filestore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	fake := &fakeDynamoDB{hashKey: hashKey, active: []string{
		taskJSON(7, "od:test", task.Seed, task.Running, now.Add(-time.Hour), time.Time{}),
		taskJSON(8, "od:test", task.Reseed, task.Pending, now.Add(time.Hour), time.Time{}),
		taskJSON(9, "od:test", task.Seed, task.Done, now.Add(-3*time.Hour), now.Add(-2*time.Hour)),
	}}
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://dynamodb.invalid"), HTTPClient: fake,
		Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1,
	})
	table := dynamo.New(client, "table")
	e := onmiss.New(layers, sources, tiles, table.Tasks(), onmiss.Options{KeyPrefix: "tiles", Usage: table.Usage(), Claims: table.Claims()}, slog.New(slog.DiscardHandler))
	for _, c := range []struct {
		miss onmiss.Miss
		ok   bool
	}{
		{onmiss.Miss{Layer: "od:test", GridSetID: "EPSG:4326", Format: "image/png", Z: 2, X: 5, Y: 2}, true},
		{onmiss.Miss{Layer: "od:test", GridSetID: "EPSG:4326", Format: "image/png", Z: 2, X: 4, Y: 3}, true}, // the same metatile
		{onmiss.Miss{Layer: "od:broken", GridSetID: "EPSG:4326", Format: "image/png", Z: 2, X: 5, Y: 2}, false},
	} {
		_, err := e.RenderMiss(t.Context(), c.miss)
		if (err == nil) != c.ok {
			t.Logf("miss %+v: %v", c.miss, err) // the outcome matters less than the requests made
		}
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.err != nil {
		t.Fatal(fake.err)
	}
	return slices.Clone(fake.calls)
}

// tableHashKey returns TaskTable's partition key attribute.
func tableHashKey(t *testing.T, tp *template) string {
	t.Helper()
	for _, k := range get(tp.resource("TaskTable"), "Properties", "KeySchema").Content {
		if get(k, "KeyType").Value == "HASH" {
			return get(k, "AttributeName").Value
		}
	}
	t.Fatal("TaskTable has no HASH key")
	return ""
}

// writeActions are the DynamoDB actions that change items.
var writeActions = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}

// tileDenied are writes the tile function's code makes that its role
// refuses on purpose, and why that is harmless.
var tileDenied = map[itemCall]string{
	{"UpdateItem", "task#9"}: "List's best-effort pruning of a long finished task's index entry (dynamo.Tasks.List ignores its failure); " +
		"the cleaner's sweep every minute and the API prune them",
}

// TestTemplateTileWritesLeadingKeys: every statement of the tile
// function's role that writes to the task table is limited to partition
// keys by a LeadingKeys condition (claims, render slots and remembered
// outcomes under claim#…, disk usage under pages#… and usage); those
// cover what render on miss writes, each pattern is used, and tasks, jobs
// and the meta items (pool, sequence, quota configuration) stay out of
// reach. Reads (the quota configuration, claims and the truncation marks
// the API leaves, jobs) are limited by partition key too
// (TestTemplateTileRoleItemsByLeadingKeys).
func TestTemplateTileWritesLeadingKeys(t *testing.T) {
	tp := loadTemplate(t)
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	stmts := roleStatements(t, tp, "TileFunction", w)
	table := "arn:aws:dynamodb:us-east-1:000000000000:table/table"
	var patterns []string
	for _, s := range stmts {
		writes := slices.ContainsFunc(s.actions, func(a string) bool {
			return slices.ContainsFunc(writeActions, func(w string) bool { return globMatch(strings.ToLower(a), strings.ToLower(w)) })
		})
		if !writes || !slices.ContainsFunc(s.resources, func(r string) bool { return strings.HasPrefix(r, table) }) {
			continue
		}
		p := strs(m(s.condition, "ForAllValues:StringLike", "dynamodb:LeadingKeys"))
		if len(p) == 0 || len(s.condition) != 1 {
			t.Errorf("TileRole statement %s writes %v with condition %v: want only ForAllValues:StringLike on dynamodb:LeadingKeys", s.sid, s.actions, s.condition)
		}
		for _, pat := range p {
			if strings.Trim(pat, "*?") == "" {
				t.Errorf("TileRole statement %s: LeadingKeys pattern %q allows any item", s.sid, pat)
			}
		}
		patterns = append(patterns, p...)
	}
	if len(patterns) == 0 {
		t.Fatal("TileRole: no statement writes to the task table")
	}
	allowed := func(action, pk string) bool {
		c := lambdatest.Call{Action: "dynamodb:" + action, Resource: table, Op: action, Keys: map[string]string{"dynamodb:LeadingKeys": pk}}
		return slices.ContainsFunc(stmts, func(s statement) bool { return s.allows(c) })
	}

	calls := tileMissItems(t, tableHashKey(t, tp))
	used := map[string]bool{}
	seen := map[itemCall]bool{}
	for _, c := range calls {
		if seen[c] {
			continue
		}
		seen[c] = true
		why, denied := tileDenied[c]
		if got := allowed(c.action, c.pk); got == denied {
			if denied {
				t.Errorf("%s of %s is allowed, but tileDenied says the role refuses it: %s", c.action, c.pk, why)
			} else {
				t.Errorf("render on miss makes %s of %s, which TileRole refuses", c.action, c.pk)
			}
		}
		if !slices.Contains(writeActions, "dynamodb:"+c.action) || denied {
			continue
		}
		for _, p := range patterns {
			if globMatch(p, c.pk) {
				used[p] = true
			}
		}
	}
	t.Logf("items: %v", slices.SortedFunc(maps.Keys(seen), func(a, b itemCall) int { return strings.Compare(a.pk+a.action, b.pk+b.action) }))
	for _, p := range patterns {
		if !used[p] {
			t.Errorf("TileRole allows writes of %s, which render on miss never writes (least privilege)", p)
		}
	}
	for c := range tileDenied {
		if !seen[c] {
			t.Errorf("tileDenied lists %s of %s, which render on miss no longer makes: remove it", c.action, c.pk)
		}
	}
	for _, want := range []string{"claim#", "claim#upstream#", "pages#od:test", "usage"} {
		if !slices.ContainsFunc(calls, func(c itemCall) bool { return strings.HasPrefix(c.pk, want) && c.action != "GetItem" }) {
			t.Errorf("render on miss wrote no %s… item: the run does not exercise what the role allows (%v)", want, calls)
		}
	}
	// What the tile function must never change.
	for _, pk := range []string{"task#1", "job#1", "meta", "active", "claimx", "pagesX"} {
		for _, a := range writeActions {
			if allowed(strings.TrimPrefix(a, "dynamodb:"), pk) {
				t.Errorf("TileRole allows %s of %s", a, pk)
			}
		}
	}
	// Reads: the quota configuration, claims, jobs.
	for _, pk := range []string{"meta", "claim#truncated#od:test", "job#8"} {
		if !allowed("GetItem", pk) {
			t.Errorf("TileRole refuses GetItem of %s", pk)
		}
	}
}

// TestTemplateLaneRolesReadTaskBatches: the kill watch of a process's
// working lanes reads their tasks with one BatchGetItem
// (dynamo.Tasks.GetMany), so every function that works lanes (fed by the
// lane queue) may; and ApiFunction, which marks a layer's mass truncation
// for renders on miss in progress (a claim#truncated#… item), may put it.
func TestTemplateLaneRolesReadTaskBatches(t *testing.T) {
	tp := loadTemplate(t)
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	table := "arn:aws:dynamodb:us-east-1:000000000000:table/table"
	can := func(fn, action, pk string) bool {
		c := lambdatest.Call{Action: action, Resource: table, Op: action, Keys: map[string]string{"dynamodb:LeadingKeys": pk}}
		return slices.ContainsFunc(roleStatements(t, tp, fn, w), func(s statement) bool { return s.allows(c) })
	}
	lanes := 0
	for _, fn := range tp.functions() {
		ev := get(tp.resource(fn), "Properties", "Events")
		for _, name := range keys(ev) {
			if id, _ := refTarget(get(ev, name, "Properties", "Queue")); get(ev, name, "Type").Value != "SQS" || id != "LaneQueue" {
				continue
			}
			lanes++
			if !can(fn, "dynamodb:BatchGetItem", "task#1") {
				t.Errorf("%s works lanes but may not BatchGetItem their tasks (the kill watch)", fn)
			}
		}
	}
	if lanes == 0 {
		t.Fatal("no function works lanes")
	}
	if !can("ApiFunction", "dynamodb:PutItem", "claim#truncated#demo:world") {
		t.Errorf("ApiFunction may not put the mass truncation mark claim#truncated#…")
	}
}
