package functions_test

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/app"
	"tilecache/internal/app/apptest"
	"tilecache/internal/app/maintenance"
	"tilecache/internal/app/tileorigin"
	"tilecache/internal/app/worker"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/schedule"
	"tilecache/internal/task"
	"tilecache/internal/testkit/lambdatest"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
)

// unrecorded are calls a function's code can make on a path the recording
// run cannot reach quickly; the role must still allow them. Each names the
// code path.
var unrecorded = map[string][]struct {
	action, resource string
	object           string // for an S3 object: its key under the key prefix
	why              string
}{
	"CleanerFunction": {{"dynamodb:BatchWriteItem", "TaskTable", "",
		"dynamo.Tasks.List (Sweep) deletes a staged request whose Create crashed more than the stage timeout ago (dynamo abandon)"},
		{"cloudfront-keyvaluestore:DescribeKeyValueStore", "EdgeGridSets", "", edgeSyncWhy},
		{"cloudfront-keyvaluestore:ListKeys", "EdgeGridSets", "", edgeSyncWhy},
		{"cloudfront-keyvaluestore:UpdateKeys", "EdgeGridSets", "", edgeSyncWhy}},
	"WorkerFunction": {{"dynamodb:BatchGetItem", "TaskTable", "",
		"the kill watch reads the tasks of more than one lane working in the process with one BatchGetItem (seed.readTasks, dynamo.Tasks.GetMany); an invocation works one lane message"}},
	"LogsFunction": {{"dynamodb:DeleteItem", "TaskTable", "",
		"the release of a batch's mark when its reads could not be recorded, so that a retry records them (quota.ReadLog.Record)"}},
	"TileFunction": {{"s3:DeleteObject", "TileBucket", "od:test/EPSG:4326/png/default/2/0/0.png",
		"a tile of the rendered metatile that is blank now where one was stored, or a truncate of the layer submitted during the render (seed.afterMiss)"},
		{"dynamodb:DeleteItem", "TaskTable", "",
			"the release of a render slot (seed.missSlot: layers with maxConcurrent; od:test's testpattern has none), or of a metatile claim whose outcome could not be settled (seed.renderClaimed); TestTemplateTileWritesLeadingKeys makes the first"}},
}

// refused are calls a function's code makes that its role refuses on
// purpose, by action and partition key (dynamodb:LeadingKeys, an IAM
// pattern), each with why that is harmless.
var refused = map[string][]struct{ action, leadingKey, why string }{
	"TileFunction": {{"dynamodb:PutItem", "config",
		"the first start's copy of the layer file's store-managed entries into an empty store (layer.Registry seed) is left to the other functions: it is logged and the file's entries used meanwhile"}},
}

// isRefused returns why fn's role refuses c on purpose, if it does.
func isRefused(fn string, c lambdatest.Call) (string, bool) {
	for _, r := range refused[fn] {
		if pk, ok := c.Keys["dynamodb:LeadingKeys"]; ok && r.action == c.Action && globMatch(r.leadingKey, pk) {
			return r.why, true
		}
	}
	return "", false
}

// edgeSyncWhy: no emulator here serves the CloudFront KeyValueStore API,
// so the recording runs set no store; the calls are checked against a
// fake of its wire format (cloudfront.TestSyncEdgeGridSets).
const edgeSyncWhy = "the cleaner writes the edge path function's grid sets after a cold start (maintenance.Program.syncEdge, edgepath.Sync)"

// policyLayers are the layers the recording runs add to apptest's: render
// on miss (one failing), and a layer managed by the store.
const policyLayers = `
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
  - name: gone:world
    managedBy: store
    gridSubsets: [{gridSet: EPSG:4326}]
    formats: [image/png]
    metatiling: [2, 2]
    source: {type: testpattern}
`

// TestPoliciesMatchRecordedCalls runs each function's handler against the
// local AWS stack through recording proxies, then checks that the
// function's role (evaluated for that deployment) allows every recorded
// call on its resource, plus the Lambda runtime's and event source's own
// calls, and that it allows nothing else: every action of every statement
// is used by some call the statement allows.
func TestPoliciesMatchRecordedCalls(t *testing.T) {
	tp := loadTemplate(t)
	layers := lambdatest.LayersFile(t, apptest.Layers+policyLayers)
	// With the CDN: every function may invalidate, and each one's run does
	// (mass truncation, a truncate lane, the quota clean-up).
	_, distribution := testenv.RequireCloudFront(t)
	base := map[string]string{"TILECACHE_LAYERS": layers, "TILECACHE_SEED_THREADS": "2", "TILECACHE_LANE_SLICE": "200ms", "TILECACHE_STALE_AFTER": "300ms",
		"TILECACHE_CDN_DISTRIBUTION_ID": distribution}

	type run struct {
		r   lambdatest.Resources
		rec *lambdatest.Recorder
		// start builds the function's program while rec records, then
		// exercises it.
		start func(t *testing.T, r lambdatest.Resources, rec *lambdatest.Recorder, env map[string]string)
	}
	runs := map[string]run{
		"ApiFunction":     {start: recorded(lambdatest.API, exerciseAPI)},
		"WorkerFunction":  {start: recorded(lambdatest.Worker, exerciseWorker)},
		"CleanerFunction": {start: recorded(cleanerProgram, exerciseCleaner)},
		"TileFunction":    {start: recorded(lambdatest.Tile, exerciseTile)},
	}
	for _, fn := range tp.functions() {
		if fn == "LogsFunction" {
			// Not a program of the engine: its own run (policy_logs_test.go).
			rn := run{r: lambdatest.NewResources(t), rec: &lambdatest.Recorder{}}
			exerciseLogs(t, rn.r, rn.rec, lambdatest.Env(t, rn.r, base))
			runs[fn] = rn
			continue
		}
		rn, ok := runs[fn]
		if !ok {
			t.Fatalf("no recording run for %s", fn)
		}
		rn.r = lambdatest.NewResources(t)
		rn.rec = &lambdatest.Recorder{}
		rn.start(t, rn.r, rn.rec, lambdatest.Env(t, rn.r, base))
		runs[fn] = rn
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, fn := range tp.functions() {
		rn := runs[fn]
		t.Run(fn, func(t *testing.T) { checkRecordedCalls(t, tp, fn, rn.r, rn.rec, distribution) })
	}
}

// checkRecordedCalls: every call fn's run made (recorded, or made by the
// platform or not recordable) is allowed by fn's role unless listed as
// refused, every refusal listed is still made, and every action the role
// allows is used.
func checkRecordedCalls(t *testing.T, tp *template, fn string, r lambdatest.Resources, rec *lambdatest.Recorder, distribution string) {
	w := deployment(tp, r, distribution)
	stmts := roleStatements(t, tp, fn, w)
	calls := rec.Calls()
	t.Logf("recorded: %v", rec.Actions())
	t.Logf("items by partition key: %v", itemsByLeadingKey(calls))
	for i := range calls {
		calls[i].Op = "recorded " + calls[i].Op
	}
	calls = append(calls, platformCalls(t, tp, fn, w)...)
	if fn == "ApiFunction" {
		calls = append(calls, lambdatest.Call{Action: "ssm:GetParameter", Resource: accountsSecret,
			Op: "not recorded: app.LoadAccounts reads the accounts at start (TILECACHE_ACCOUNTS_SECRET); the recording run gives them inline"})
	}
	for _, u := range unrecorded[fn] {
		res, err := w.att(u.resource, "Arn")
		if err != nil {
			t.Fatal(err)
		}
		if u.object != "" {
			res += "/" + r.Prefix + "/" + u.object
		}
		calls = append(calls, lambdatest.Call{Action: u.action, Resource: res, Op: "not recorded: " + u.why})
	}
	used := make([]map[string]bool, len(stmts)) // per statement: actions of the calls it allows
	reported := map[string]bool{}
	usedRefusals := map[string]bool{}
	for _, c := range calls {
		if strings.Contains(c.Action, ":?") {
			t.Errorf("unclassified request %s (%s): teach lambdatest's recorder about it", c.Op, c.Resource)
			continue
		}
		allowed := false
		for i, s := range stmts {
			if s.allows(c) {
				allowed = true
				if used[i] == nil {
					used[i] = map[string]bool{}
				}
				used[i][c.Action] = true
			}
		}
		why, isRef := isRefused(fn, c)
		if isRef {
			if allowed {
				t.Errorf("%s of %s is allowed by %s's role, which should refuse it: %s", c.Action, c.Keys["dynamodb:LeadingKeys"], fn, why)
			}
			usedRefusals[c.Action+" "+c.Keys["dynamodb:LeadingKeys"]] = true
			continue
		}
		if k := c.Action + " " + c.Op; !allowed && !reported[k] { // once per action and origin
			reported[k] = true
			t.Errorf("%s (%s) is not allowed by %s's role, e.g. on %s (%v)", c.Action, c.Op, fn, c.Resource, c.Keys)
		}
	}
	for _, r := range refused[fn] {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(usedRefusals)), func(k string) bool {
			action, pk, _ := strings.Cut(k, " ")
			return action == r.action && globMatch(r.leadingKey, pk)
		}) {
			t.Errorf("refused lists %s of %s for %s, which its run no longer makes: remove it", r.action, r.leadingKey, fn)
		}
	}
	for i, s := range stmts {
		for _, a := range s.actions {
			if _, ok := failurePathOnly[a]; ok {
				continue
			}
			if !slices.ContainsFunc(slices.Collect(maps.Keys(used[i])), func(act string) bool {
				return globMatch(strings.ToLower(a), strings.ToLower(act))
			}) {
				t.Errorf("statement %s allows %s on %v, which %s never uses (least privilege)", s.sid, a, s.resources, fn)
			}
		}
	}
}

// failurePathOnly lists the actions a role needs only when something
// fails, which the recorded runs (where everything succeeds) never make,
// each with the failure; the least-privilege check passes over them.
var failurePathOnly = map[string]string{
	"s3:AbortMultipartUpload": "an export's upload in parts that fails is aborted (minio-go); the runs' uploads succeed",
}

// itemsByLeadingKey lists the distinct DynamoDB calls' actions with their
// partition key values (dynamodb:LeadingKeys), digits replaced by N.
func itemsByLeadingKey(calls []lambdatest.Call) []string {
	var out []string
	for _, c := range calls {
		pk, ok := c.Keys["dynamodb:LeadingKeys"]
		if !ok {
			continue
		}
		pk = strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return 'N'
			}
			return r
		}, pk)
		if e := strings.TrimPrefix(c.Action, "dynamodb:") + " " + pk; !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// deployment is the world of one stack with a CDN on the resources r and
// the distribution.
// accountsSecret is the deployment's AccountsSecret (an SSM parameter).
const accountsSecret = "arn:aws:ssm:" + lambdatest.Region + ":" + lambdatest.Account + ":parameter/tilecache/accounts"

func deployment(tp *template, r lambdatest.Resources, distribution string) *world {
	w := &world{tp: tp, params: map[string]string{"KeyPrefix": r.Prefix, "EnableCdn": "true", "CdnAccessLogs": "true", "AccountsSecret": accountsSecret}, refs: map[string]string{
		"TileBucket": r.Bucket, "TaskTable": r.Table, "LaneQueue": r.QueueURL, "TileDistribution": distribution,
		"LaneDeadLetterQueue": r.QueueURL + sqsqueue.DLQSuffix,
	}, atts: map[string]string{
		"TileBucket.Arn":          lambdatest.S3ARN(r.Bucket, ""),
		"TaskTable.Arn":           lambdatest.DynamoDBARN(r.Table, ""),
		"LaneQueue.Arn":           lambdatest.SQSARN(r.Queue),
		"LaneDeadLetterQueue.Arn": lambdatest.SQSARN(r.Queue + sqsqueue.DLQSuffix),
	}}
	for _, id := range tp.resourcesOfType("AWS::Logs::LogGroup") {
		w.refs[id] = "/tilecache/" + id
		w.atts[id+".Arn"] = "arn:aws:logs:" + lambdatest.Region + ":" + lambdatest.Account + ":log-group:/tilecache/" + id + ":*"
	}
	for _, id := range tp.resourcesOfType("AWS::IAM::Role") {
		w.atts[id+".Arn"] = "arn:aws:iam::" + lambdatest.Account + ":role/" + id
	}
	w.atts["LogsDeadLetterQueue.Arn"] = lambdatest.SQSARN("tilecache-logs-dlq")
	w.atts["EdgeGridSets.Arn"] = "arn:aws:cloudfront::" + lambdatest.Account + ":key-value-store/2b7e1f9e-0000-4000-8000-0123456789ab"
	w.atts["EdgePathFunction.FunctionMetadata.FunctionARN"] = "arn:aws:cloudfront::" + lambdatest.Account + ":function/tilecache-paths"
	return w
}

// platformCalls are the calls AWS makes with the function's role: the
// runtime writes the logs to the function's log group, and an SQS event
// source polls the queue (AWS documents ReceiveMessage, DeleteMessage and
// GetQueueAttributes; ChangeMessageVisibility is allowed for its backoff).
func platformCalls(t *testing.T, tp *template, fn string, w *world) []lambdatest.Call {
	t.Helper()
	lg, err := w.eval(get(tp.resource(fn), "Properties", "LoggingConfig", "LogGroup"))
	if err != nil {
		t.Fatalf("%s: LoggingConfig.LogGroup: %v", fn, err)
	}
	stream := "arn:aws:logs:" + lambdatest.Region + ":" + lambdatest.Account + ":log-group:" + fmt.Sprint(lg) + ":log-stream:2025/11/22/[$LATEST]0123456789abcdef"
	calls := []lambdatest.Call{
		{Action: "logs:CreateLogStream", Resource: stream, Op: "Lambda runtime"},
		{Action: "logs:PutLogEvents", Resource: stream, Op: "Lambda runtime"},
	}
	// Lambda sends an event it gave up on to the function's dead-letter
	// queue with the function's role.
	if dlq := get(tp.resource(fn), "Properties", "DeadLetterQueue", "TargetArn"); dlq != nil {
		arn, err := w.eval(dlq)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, lambdatest.Call{Action: "sqs:SendMessage", Resource: fmt.Sprint(arn), Op: "Lambda's asynchronous invocation, to the dead-letter queue"})
	}
	events := get(tp.resource(fn), "Properties", "Events")
	for _, name := range keys(events) {
		if get(events, name, "Type").Value != "SQS" {
			continue
		}
		q, err := w.eval(get(events, name, "Properties", "Queue"))
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"} {
			calls = append(calls, lambdatest.Call{Action: a, Resource: fmt.Sprint(q), Op: "SQS event source " + name})
		}
	}
	return calls
}

// statement is an Allow statement of a role, evaluated, with the role's
// Deny statements, which override it.
type statement struct {
	sid                string
	actions, resources []string
	condition          map[string]any
	denies             []statement
}

func roleStatements(t *testing.T, tp *template, fn string, w *world) []statement {
	t.Helper()
	role, _ := refTarget(tp.fnProp(fn, "Role"))
	pols, err := w.eval(get(tp.resource(role), "Properties", "Policies"))
	if err != nil {
		t.Fatalf("%s: %v", role, err)
	}
	var out, denies []statement
	for _, p := range pols.([]any) {
		doc := p.(map[string]any)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			s := s.(map[string]any)
			if (s["Effect"] != "Allow" && s["Effect"] != "Deny") || s["NotAction"] != nil || s["NotResource"] != nil {
				t.Fatalf("%s: only Allow and Deny statements with Action and Resource are modelled, got %v", role, s)
			}
			st := statement{sid: fmt.Sprint(s["Sid"]), actions: strs(s["Action"]), resources: strs(s["Resource"])}
			st.condition, _ = s["Condition"].(map[string]any)
			if s["Effect"] == "Deny" {
				denies = append(denies, st)
				continue
			}
			out = append(out, st)
		}
	}
	for i := range out {
		out[i].denies = denies
	}
	return out
}

// allows reports whether the statement allows the call, as IAM evaluates
// Action, Resource and the StringEquals / StringLike conditions, also
// with ForAllValues: (a call carries one value of a key, e.g. one item's
// dynamodb:LeadingKeys; IAM's ForAllValues holds when the request has no
// value at all; the recorder gives each DynamoDB call its item's
// partition key). A Deny statement of the role that matches the call
// overrides it.
func (s statement) allows(c lambdatest.Call) bool {
	return s.matches(c) && !slices.ContainsFunc(s.denies, func(d statement) bool { return d.matches(c) })
}

// matches reports whether the call is one the statement speaks of, by its
// Action, Resource and Condition, whatever its Effect.
func (s statement) matches(c lambdatest.Call) bool {
	if !slices.ContainsFunc(s.actions, func(a string) bool { return globMatch(strings.ToLower(a), strings.ToLower(c.Action)) }) {
		return false
	}
	if !slices.ContainsFunc(s.resources, func(r string) bool { return globMatch(r, c.Resource) }) {
		return false
	}
	for op, m := range s.condition {
		forAll := false
		if rest, ok := strings.CutPrefix(op, "ForAllValues:"); ok {
			op, forAll = rest, true
		}
		for key, want := range m.(map[string]any) {
			got, ok := c.Keys[key]
			if !ok {
				if forAll {
					continue
				}
				return false
			}
			match := slices.ContainsFunc(strs(want), func(p string) bool {
				if op == "StringLike" {
					return globMatch(p, got)
				}
				return op == "StringEquals" && p == got
			})
			if !match {
				return false
			}
		}
	}
	return true
}

// globMatch matches IAM wildcards: * any run of characters, ? one.
func globMatch(pattern, s string) bool {
	// path.Match treats "/" specially; IAM does not: match segment-free.
	p := strings.NewReplacer("/", "\x00", "[", "\\[", "\\", "\\\\").Replace(pattern)
	ok, err := path.Match(p, strings.ReplaceAll(s, "/", "\x00"))
	return err == nil && ok
}

// exerciseAPI makes every kind of request the REST interface has.
func exerciseAPI(t *testing.T, r lambdatest.Resources, env map[string]string, api *app.Program) {
	h := api.Handler
	do := func(method, path, body string, want int, headers ...string) string {
		t.Helper()
		res := lambdatest.Do(t, h, method, path, body, headers...)
		if res.StatusCode != want {
			t.Fatalf("%s %s: %d %q, want %d", method, path, res.StatusCode, res.Body, want)
		}
		return res.Body
	}
	// Objects for the mass truncation, written without recording.
	tiles := lambdatest.Tiles(t, r)
	for i := range 3 {
		if err := tiles.Put(t.Context(), fmt.Sprintf("%s/demo:world/EPSG:4326/png/default/0/%d/0.png", r.Prefix, i), []byte("x"), tilestore.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	json := []string{"content-type", "application/json"}
	do("GET", "/rest/seed.json", "", 200)
	do("POST", "/rest/seed/demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"threadCount":2}}`, 200, json...)
	do("POST", "/rest/seed/topp:states.json", `{"seedRequest":{"zoomStart":0,"zoomStop":1,"parameters":{"entry":[{"string":["STYLES","polygon"]}]}}}`, 200, json...)
	// 128 lanes: more than one transaction holds, so the request is staged.
	if rows := decodeRows(t, do("POST", "/rest/seed/demo:world.json", `{"seedRequest":{"zoomStart":0,"zoomStop":8,"threadCount":128}}`, 200, json...)); len(rows) != 128 {
		t.Fatalf("want 128 tasks, got %d", len(rows))
	}
	do("GET", "/rest/seed/demo:world.json", "", 200)
	do("POST", "/rest/seed", "kill_all=all", 200, "content-type", "application/x-www-form-urlencoded")
	do("GET", "/rest/diskquota.json", "", 200)
	do("PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true,"globalQuota":{"value":"100","units":"MiB"}}}`, 200, json...)
	do("POST", "/rest/schedules.json", `{"name":"nightly","cron":"0 3 * * *","request":{"layer":"demo:world","seedRequest":{"zoomStart":0,"zoomStop":2}}}`, 201, json...)
	do("GET", "/rest/schedules.json", "", 200)
	do("GET", "/rest/schedules/nightly.json", "", 200)
	do("DELETE", "/rest/schedules/nightly.json", "", 204)
	do("GET", "/rest/masstruncate", "", 200)
	do("POST", "/rest/masstruncate", "<truncateLayer><layerName>demo:world</layerName></truncateLayer>", 200, "content-type", "text/xml")
	var left []string
	tiles.List(t.Context(), r.Prefix+"/demo:world/EPSG:4326/", func(o tilestore.Object) error { left = append(left, o.Key); return nil })
	if len(left) != 0 {
		t.Errorf("mass truncation left %v", left)
	}
	api.Purger.Flush(t.Context()) // what HandleAPI does after each request
}

// submit records a request through an API program that is not recorded
// and returns its task ids.
func submit(t *testing.T, api *app.Program, layer, body string) []int64 {
	t.Helper()
	res := lambdatest.Do(t, api.Handler, "POST", "/rest/seed/"+layer+".json", body, "content-type", "application/json")
	if res.StatusCode != 200 {
		t.Fatalf("seed %s: %d %s", body, res.StatusCode, res.Body)
	}
	var ids []int64
	for _, rw := range decodeRows(t, res.Body) {
		ids = append(ids, rw[3])
	}
	return ids
}

// finished reports whether the tasks are no longer PENDING or RUNNING.
func finished(t *testing.T, p *worker.Program, ids []int64) func() bool {
	return func() bool {
		for _, id := range ids {
			tk, err := p.Tasks.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if tk.Status.Active() {
				return false
			}
		}
		return true
	}
}

// exerciseWorker works lanes of every kind: a seed continued over several
// messages, a seed over stored tiles, a truncation, and a job aborted by
// tile failures.
func exerciseWorker(t *testing.T, r lambdatest.Resources, env map[string]string, worker *worker.Program) {
	api := lambdatest.API(t, env) // not recorded: the requests come from ApiFunction
	src := &lambdatest.EventSource{Client: lambdatest.SQS(t), QueueURL: r.QueueURL, QueueArn: r.QueueArn(), Timeout: time.Minute}
	for _, req := range []struct{ layer, body string }{
		{"slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`}, // 42 metatiles × 40 ms: continues after 200 ms slices
		{"demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`},
		{"demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`}, // levels hold tiles: existence checks
		{"demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"type":"truncate"}}`},
		{"broken:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":2,"tileFailureRetryCount":0,"tileFailureRetryWaitTime":0,"totalFailuresBeforeAborting":1}}`},
	} {
		ids := submit(t, api, req.layer, req.body)
		src.RunUntil(t, worker.HandleSQS, 30*time.Second, finished(t, worker, ids))
	}
	// A layer deleted with its tiles: the worker truncates its key prefix,
	// removes its usage and clears the deletion mark.
	ids := submit(t, api, "gone:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2}}`)
	src.RunUntil(t, worker.HandleSQS, 30*time.Second, finished(t, worker, ids))
	res := lambdatest.Do(t, api.Handler, "DELETE", "/rest/layers/gone:world.xml?truncate=true", "")
	if res.StatusCode != 200 {
		t.Fatalf("DELETE gone:world?truncate=true: %d %s", res.StatusCode, res.Body)
	}
	truncation := func() bool {
		ts, err := worker.Tasks.List(t.Context(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range ts {
			if tk.Layer == "gone:world" && tk.Status.Active() {
				return false
			}
		}
		return true
	}
	src.RunUntil(t, worker.HandleSQS, 30*time.Second, truncation)
	if src.Invocations < 7 {
		t.Errorf("%d worker invocations: want continuations of the slow lane", src.Invocations)
	}
}

// recorded returns a run's start: the program built by mk while rec
// records the requests of the clients it makes, then exercised by exec.
func recorded[P any](mk func(testing.TB, map[string]string) P, exec func(*testing.T, lambdatest.Resources, map[string]string, P)) func(*testing.T, lambdatest.Resources, *lambdatest.Recorder, map[string]string) {
	return func(t *testing.T, r lambdatest.Resources, rec *lambdatest.Recorder, env map[string]string) {
		var p P
		lambdatest.Recording(t, rec, func() { p = mk(t, env) })
		exec(t, r, env, p)
	}
}

// exerciseTile answers CloudFront's failover requests: a miss rendered
// (claim, existence checks, tiles, usage), a hit, a miss whose render
// fails (its outcome remembered) and one of the same metatile, a key of
// unknown parameters and a layer that does not render on miss.
func exerciseTile(t *testing.T, r lambdatest.Resources, env map[string]string, tile *tileorigin.Origin) {
	// One of the service's own objects (a seed request's prepared area),
	// written where the API keeps them: never served.
	own := lambdatest.Tiles(t, r) // not recorded
	if err := own.Put(t.Context(), r.Prefix+"/_tilecache/areas/probe.json", []byte(`{"rows":[]}`), tilestore.Meta{ContentType: "application/json"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/od:test/EPSG:4326/png/default/2/5/2.png", 200},
		{"/od:test/EPSG:4326/png/default/2/4/3.png", 200},
		{"/od:broken/EPSG:4326/png/default/2/5/2.png", 502}, // the render fails: its outcome is remembered
		{"/od:broken/EPSG:4326/png/default/2/4/3.png", 502}, // answered from the remembered outcome
		{"/od:test/EPSG:4326/png/0123456789abcdef0123456789abcdef01234567/2/5/2.png", 404},
		{"/demo:world/EPSG:4326/png/default/2/5/2.png", 404},
		{"/_tilecache/areas/probe.json", 404},
		{"/_tilecache%2Fareas%2Fprobe.json", 404},
	} {
		var ev events.LambdaFunctionURLRequest
		lambdatest.ReadEvent(t, "tile/testdata/miss-get.json", &ev)
		ev.RawPath, ev.RequestContext.HTTP.Path = c.path, c.path
		res, err := tile.HandleTile(t.Context(), ev)
		if err != nil || res.StatusCode != c.status {
			t.Errorf("tile function GET %s: got %d %.100q %v, want %d", c.path, res.StatusCode, res.Body, err, c.status)
		}
	}
}

func scheduledEvent(t *testing.T) events.EventBridgeEvent {
	var ev events.EventBridgeEvent
	lambdatest.ReadEvent(t, "cleaner/testdata/scheduled-event.json", &ev)
	return ev
}

// cleanerClock is the clock of the cleaner's program in exerciseCleaner:
// real time, moved on by the test where it would otherwise wait.
var cleanerClock struct{ ahead atomic.Int64 }

// cleanerProgram builds CleanerFunction's program on cleanerClock.
func cleanerProgram(t testing.TB, env map[string]string) *maintenance.Program {
	cleanerClock.ahead.Store(0)
	return lambdatest.MaintenanceAt(t, env, func() time.Time { return time.Now().Add(time.Duration(cleanerClock.ahead.Load())) })
}

// exerciseCleaner sweeps a stale lane and a pending task, then, with
// tiles stored and the disk quota exceeded, runs the quota's recount and
// clean-up; last, it submits a scheduled request that is due.
func exerciseCleaner(t *testing.T, r lambdatest.Resources, env map[string]string, cleaner *maintenance.Program) {
	api := lambdatest.API(t, env)       // not recorded
	worker := lambdatest.Worker(t, env) // not recorded
	sqsClient := lambdatest.SQS(t)
	ids := submit(t, api, "demo:world", `{"seedRequest":{"zoomStart":0,"zoomStop":2,"threadCount":3}}`)
	lambdatest.Drain(t, sqsClient, r.QueueURL)
	if _, err := api.Tasks.Kill(t.Context(), ids[0], task.Running, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Task 2's worker died a second ago: its last heartbeat (a checkpoint
	// of no tiles, written with that time) is older than base's stale-after.
	tk2, err := api.Tasks.Get(t.Context(), ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.Tasks.Checkpoint(t.Context(), task.Checkpoint{ID: ids[1], From: tk2.Cursor, To: tk2.Cursor}, time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := cleaner.HandleSchedule(t.Context(), scheduledEvent(t)); err != nil {
		t.Fatal(err)
	}
	// The sweep re-enqueued task 2 and started task 3: work them.
	src := &lambdatest.EventSource{Client: sqsClient, QueueURL: r.QueueURL, QueueArn: r.QueueArn(), Timeout: time.Minute}
	src.RunUntil(t, worker.HandleSQS, 30*time.Second, finished(t, worker, ids))
	if src.Invocations < 2 {
		t.Errorf("the sweep sent %d lane messages, want 2", src.Invocations)
	}

	// Over a 1 KiB global quota, checked every second.
	count := func() (n int) {
		lambdatest.Tiles(t, r).List(t.Context(), r.Prefix+"/", func(tilestore.Object) error { n++; return nil })
		return n
	}
	before := count()
	// A recount (the layer at rest: its last task ended base's stale-after
	// ago), then the quota, then its clean-up: the first one, so due at once.
	// The layer settles: the cleaner's clock moves past base's stale-after.
	cleanerClock.ahead.Add(int64(400 * time.Millisecond))
	recount := scheduledEvent(t)
	recount.Detail = []byte(`{"recount":true}`)
	if err := cleaner.HandleSchedule(t.Context(), recount); err != nil {
		t.Fatal(err)
	}
	res := lambdatest.Do(t, api.Handler, "PUT", "/rest/diskquota.json", `{"cacheQuotaConfiguration":{"enabled":true,"cacheCleanUpFrequency":1,"cacheCleanUpUnits":"SECONDS","globalQuota":{"value":"1","units":"KiB"}}}`,
		"content-type", "application/json")
	if res.StatusCode != 200 {
		t.Fatalf("PUT diskquota: %d %s", res.StatusCode, res.Body)
	}
	if err := cleaner.HandleSchedule(t.Context(), scheduledEvent(t)); err != nil {
		t.Fatal(err)
	}
	if after := count(); after >= before {
		t.Errorf("the quota clean-up left %d of %d objects: want pages expired", after, before)
	}

	// A schedule whose time came while nothing ran (saved by the API).
	due, err := schedule.New("nightly", "0 3 * * *", "", "topp:states",
		[]byte(`{"seedRequest":{"zoomStart":0,"zoomStop":1,"parameters":{"entry":[{"string":["STYLES","polygon"]}]}}}`), time.Now().Add(-48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Backends.Schedules.CreateSchedule(t.Context(), due); err != nil {
		t.Fatal(err)
	}
	if err := cleaner.HandleSchedule(t.Context(), scheduledEvent(t)); err != nil {
		t.Fatal(err)
	}
	if s, err := api.Backends.Schedules.Schedule(t.Context(), "nightly"); err != nil || s.Last == nil || s.Last.Outcome != schedule.Started {
		t.Errorf("the cleaner did not start the due schedule: %+v, %v", s.Last, err)
	}
}
