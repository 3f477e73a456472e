package functions_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"tilecache/internal/config"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/seed"
)

// The TestTemplate* tests need no AWS: `make lint-template` runs them after
// cfn-lint.

func TestTemplateFunctions(t *testing.T) {
	tp := loadTemplate(t)
	if got := get(tp.root, "Transform"); got == nil || got.Value != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform: want AWS::Serverless-2016-10-31")
	}
	if got, want := tp.functions(), slices.Sorted(maps.Keys(functionDirs)); !slices.Equal(got, want) {
		t.Fatalf("functions: got %v, want %v", got, want)
	}
	for id, dir := range functionDirs {
		for prop, want := range map[string]string{"Runtime": "provided.al2023", "Handler": "bootstrap", "CodeUri": "."} {
			if n := tp.fnProp(id, prop); n == nil || n.Value != want {
				t.Errorf("%s: %s must be %q", id, prop, want)
			}
		}
		if n := tp.fnProp(id, "Architectures"); n == nil || len(n.Content) != 1 || n.Content[0].Value != "arm64" {
			t.Errorf("%s: Architectures must be [arm64]", id)
		}
		if n := get(tp.resource(id), "Metadata", "BuildMethod"); n == nil || n.Value != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod must be makefile", id)
		}
		if _, err := os.Stat(filepath.Join(dir, "main.go")); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

func TestTemplateMakefileTargets(t *testing.T) {
	tp := loadTemplate(t)
	for _, id := range tp.functions() {
		all, err := makeDryRun(t, "build-"+id, "ARTIFACTS_DIR=/artifacts")
		if err != nil {
			t.Errorf("Makefile: no target build-%s, which `sam build` runs for %s (BuildMethod makefile): %v", id, id, err)
			continue
		}
		arch := tp.fnProp(id, "Architectures").Content[0].Value
		for _, want := range []string{"GOOS=linux", "GOARCH=" + arch, "CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "-tags lambda.norpc",
			"-o /artifacts/bootstrap", "./functions/" + functionDirs[id]} {
			if !strings.Contains(all, want) {
				t.Errorf("Makefile build-%s: recipe %q lacks %q", id, all, want)
			}
		}
	}
	for _, name := range []string{"build", "lint-template"} {
		if _, err := makeDryRun(t, name); err != nil {
			t.Errorf("Makefile: no target %s: %v", name, err)
		}
	}
}

// notOnLambda are variables config.Load reads that the functions must not
// get, and why.
var notOnLambda = map[string]string{
	"TILECACHE_ADDR":            "listen address of `tilecache serve`; a function listens on nothing (Lambda invokes its handler)",
	"TILECACHE_DATA":            "data directory of the embedded backends; the functions run TILECACHE_BACKEND=aws",
	"TILECACHE_USERS":           "accounts file; ApiFunction gets TILECACHE_ACCOUNTS_SECRET, which wins",
	"TILECACHE_ACCOUNTS":        "the accounts inline, for local use: an environment is shown to anyone who may read the function's configuration; ApiFunction reads them from TILECACHE_ACCOUNTS_SECRET at start",
	"TILECACHE_WORKERS":         "lane workers of Program.Run (long polling); on Lambda the SQS event source invokes WorkerFunction",
	"TILECACHE_LANE_VISIBILITY": "visibility of Program.Run's own receives; the event source receives with the queue's VisibilityTimeout",
	"TILECACHE_BASE_PATH":       "the HTTP API routes /rest at the root of its $default stage",
	"TILECACHE_METRICS_ADDR":    "listen address of /metrics of `tilecache serve`; a function listens on nothing (its metrics go to its log as EMF)",
	"TILECACHE_UPSTREAM_ALLOW":  "networks upstreams may be at although private: for development; a function's loopback holds the Runtime API and its link-local network the metadata service",
	"TILECACHE_TILE_TOKEN_KEYS": "tile token keys are secrets (an environment is shown to anyone who may read the function's configuration): ApiFunction, TileFunction and CleanerFunction read them from TILECACHE_TILE_TOKEN_KEYS_SECRET at start",
}

// tileTokenKeysFunctions are the functions that read the tile token keys
// (TILECACHE_TILE_TOKEN_KEYS_SECRET): ApiFunction issues tokens,
// TileFunction checks them on misses, CleanerFunction writes them into the
// edge's key-value store. No other function may read the secret.
var tileTokenKeysFunctions = map[string]bool{"ApiFunction": true, "TileFunction": true, "CleanerFunction": true}

// readVariables returns the TILECACHE_* variables config.Load reads, by
// recording its lookups for an empty, an embedded and an AWS environment
// (the AWS SDK's own variables, which it reads too, are Lambda's).
func readVariables(t *testing.T) []string {
	t.Helper()
	read := map[string]bool{}
	for _, env := range []map[string]string{
		{},
		{"TILECACHE_BACKEND": "embedded", "TILECACHE_WORKERS": "2"},
		{"TILECACHE_BACKEND": "aws", "TILECACHE_S3_BUCKET": "b", "TILECACHE_SQS_QUEUE_URL": "http://q/1/q", "TILECACHE_ACCOUNTS": "a:b"},
	} {
		if _, err := config.Load(func(k string) (string, bool) {
			if strings.HasPrefix(k, "TILECACHE_") {
				read[k] = true
			}
			v, ok := env[k]
			return v, ok
		}); err != nil {
			t.Fatalf("config.Load(%v): %v", env, err)
		}
	}
	return slices.Sorted(maps.Keys(read))
}

// notOnTileFunction are variables TileFunction leaves unset: it is an
// origin of the distribution, so it cannot refer to it (a cycle), and it
// neither invalidates nor writes documents.
var notOnTileFunction = map[string]bool{"TILECACHE_CDN_DISTRIBUTION_ID": true, "TILECACHE_PUBLIC_URL": true, "TILECACHE_CDN_PURGE_INTERVAL": true}

// maintenanceOnly are variables of the maintenance (package maintenance:
// CleanerFunction, and the API's program, which `tilecache serve`'s is)
// that WorkerFunction, on the worker's assembly alone, does without: the
// edge's key-value store is the cleaner's to write.
var maintenanceOnly = map[string]bool{"TILECACHE_EDGE_KVS_ARN": true}

// tileFunctionOnly are variables only TileFunction gets: they tune render
// on miss, which on Lambda only it does (the HTTP API routes /rest alone
// to ApiFunction). TestTemplateTileFunctionEnvironment checks their values.
var tileFunctionOnly = map[string]bool{
	"TILECACHE_CLAIM_TTL": true, "TILECACHE_MISS_TIMEOUT": true, "TILECACHE_MISS_WAIT": true, "TILECACHE_MISS_QUEUE": true,
	"TILECACHE_MISS_REMEMBER": true, "TILECACHE_MISS_FAILURE_BACKOFF": true,
}

// logsFunctionOnly are variables only LogsFunction gets (how to read the
// access logs), and notOnLogsFunction those it does without: it serves no
// URLs, invalidates nothing and leaves the edge's grid sets to the cleaner.
var (
	// engineOnly are the lanes' settings: the API, the worker and the
	// cleaner run the engine; the tile origin and the log ingest do not.
	engineOnly = map[string]bool{
		"TILECACHE_SQS_QUEUE_URL": true, "TILECACHE_SEED_THREADS": true, "TILECACHE_CHECKPOINT_INTERVAL": true,
		"TILECACHE_KILL_CHECK_INTERVAL": true, "TILECACHE_LANE_SLICE": true, "TILECACHE_TRUNCATE_PAGE": true,
	}
	// apiOnly: the cross-site guard is the REST interface's.
	apiOnly          = map[string]bool{"TILECACHE_ALLOWED_ORIGINS": true, "TILECACHE_CONSOLE_BASE_MAP": true}
	logsFunctionOnly = map[string]bool{
		"TILECACHE_ACCESS_LOG_FORMAT": true, "TILECACHE_ACCESS_LOG_PATH_PREFIX": true, "TILECACHE_ACCESS_LOG_ORIGIN_PATH": true,
	}
	notOnLogsFunction = map[string]bool{"TILECACHE_CDN_DISTRIBUTION_ID": true, "TILECACHE_PUBLIC_URL": true, "TILECACHE_EDGE_KVS_ARN": true,
		// It renders nothing, claims no lane and invalidates nothing.
		"TILECACHE_STALE_AFTER": true, "TILECACHE_DECODE_MEMORY": true, "TILECACHE_CDN_PURGE_INTERVAL": true}
)

func TestTemplateEnvironment(t *testing.T) {
	tp := loadTemplate(t)
	read := readVariables(t)
	if !slices.Contains(read, "TILECACHE_ACCOUNTS_SECRET") {
		t.Fatalf("config.Load no longer reads TILECACHE_ACCOUNTS_SECRET (read: %v): ApiFunction's accounts come from it", read)
	}
	for name := range notOnLambda {
		if !slices.Contains(read, name) {
			t.Errorf("notOnLambda lists %s, which config.Load does not read any more: remove it", name)
		}
	}
	if get(tp.root, "Globals", "Function", "Environment", "Variables", "TILECACHE_ACCOUNTS_SECRET") != nil {
		t.Errorf("Globals: TILECACHE_ACCOUNTS_SECRET must be ApiFunction's only")
	}
	for name := range tileFunctionOnly {
		if !slices.Contains(read, name) {
			t.Errorf("tileFunctionOnly lists %s, which config.Load does not read any more: remove it", name)
		}
	}
	for _, id := range tp.functions() {
		env := tp.env(id)
		want := wantVariables(id, read)
		for _, name := range want {
			if _, ok := env[name]; !ok {
				t.Errorf("%s: the code reads %s but the template does not set it", id, name)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(env)) {
			if !slices.Contains(want, name) {
				why := notOnLambda[name]
				if why == "" {
					why = "the code does not read it"
				}
				if tileFunctionOnly[name] {
					why = "render on miss is TileFunction's only"
				}
				t.Errorf("%s: the template sets %s: %s", id, name, why)
			}
		}
		checkEnvironmentLoads(t, tp, id, env)
	}
	// The parameters behind the variables.
	for name, param := range map[string]string{"TILECACHE_SEED_THREADS": "PoolSize", "TILECACHE_KEY_PREFIX": "KeyPrefix", "TILECACHE_LAYERS": "LayersFile"} {
		if id, _ := refTarget(tp.env("WorkerFunction")[name]); id != param {
			t.Errorf("%s must be !Ref %s", name, param)
		}
	}
	if id, _ := refTarget(tp.env("ApiFunction")["TILECACHE_ACCOUNTS_SECRET"]); id != "AccountsSecret" {
		t.Errorf("ApiFunction TILECACHE_ACCOUNTS_SECRET must be !Ref AccountsSecret (read at start: the hashes stay out of the environment)")
	}
}

// wantVariables are the variables of read (what config.Load reads) that
// function id's environment must set.
func wantVariables(id string, read []string) []string {
	var want []string
	for _, name := range read {
		if _, skip := notOnLambda[name]; skip || (name == "TILECACHE_ACCOUNTS_SECRET" && id != "ApiFunction") {
			continue
		}
		if name == "TILECACHE_TILE_TOKEN_KEYS_SECRET" && !tileTokenKeysFunctions[id] {
			continue
		}
		if _, skip := notOnTileFunction[name]; skip && id == "TileFunction" {
			continue
		}
		if maintenanceOnly[name] && id == "WorkerFunction" {
			continue
		}
		if tileFunctionOnly[name] && id != "TileFunction" {
			continue
		}
		if logsFunctionOnly[name] != (id == "LogsFunction") && logsFunctionOnly[name] {
			continue
		}
		if notOnLogsFunction[name] && id == "LogsFunction" {
			continue
		}
		if engineOnly[name] && (id == "TileFunction" || id == "LogsFunction") {
			continue
		}
		if apiOnly[name] && id != "ApiFunction" {
			continue
		}
		want = append(want, name)
	}
	return want
}

// checkEnvironmentLoads evaluates function id's environment env with
// parameter defaults and, but for the tile and log functions (their own
// configurations), loads it as the engine's configuration.
func checkEnvironmentLoads(t *testing.T, tp *template, id string, env map[string]*yaml.Node) {
	t.Helper()
	w := &world{tp: tp, refs: map[string]string{"TileBucket": "bucket", "TaskTable": "table", "LaneQueue": "https://sqs.us-east-1.amazonaws.com/000000000000/lanes"},
		params: map[string]string{"AccountsSecret": "arn:aws:ssm:us-east-1:000000000000:parameter/tilecache/accounts"},
		atts:   map[string]string{"EdgeGridSets.Arn": "arn:aws:cloudfront::000000000000:key-value-store/2b7e1f9e-0000-4000-8000-0123456789ab"}}
	vals := map[string]string{}
	for name, n := range env {
		v, err := w.eval(n)
		if err != nil {
			t.Fatalf("%s: %s: %v", id, name, err)
		}
		vals[name] = fmt.Sprint(v)
	}
	if id == "TileFunction" || id == "LogsFunction" {
		// Their own configurations: TestTemplateGivesEachFunctionOnlyItsOwnVariables.
		return
	}
	cfg, err := config.Load(func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
	if err != nil {
		t.Fatalf("%s: the template's environment (parameter defaults) does not load: %v", id, err)
	}
	bucket := "bucket"
	if id == "LogsFunction" {
		bucket = "tilecache-logs-6a7b8c90-0000-1111-2222-333344445555" // the bucket it reads; naming TileBucket would be a cycle
	}
	if cfg.Backend != "aws" || cfg.Bucket != bucket || cfg.Table != "table" || cfg.QueueURL == "" || cfg.BasePath != "" || cfg.LayersFile != "" {
		t.Errorf("%s: loaded configuration %+v: want the aws backend on the stack's bucket, table and queue, no base path, the bundled layers", id, cfg)
	}
}

func TestTemplateParametersAndOutputs(t *testing.T) {
	tp := loadTemplate(t)
	for _, p := range []string{"PoolSize", "KeyPrefix", "EnableCdn", "AccountsSecret", "WorkerTimeout",
		"CdnCorsOrigins", "CdnNotFoundTtl", "CdnAliases", "CdnCertificateArn", "CdnAccessLogs"} {
		if get(tp.root, "Parameters", p) == nil {
			t.Errorf("parameter %s is missing", p)
		}
	}
	if n := get(tp.root, "Parameters", "EnableCdn", "AllowedValues"); n == nil || len(n.Content) != 2 {
		t.Errorf("EnableCdn: AllowedValues must be [true, false]")
	}
	for _, o := range []string{"ApiUrl", "TileBucket", "CdnDomain", "CdnUrl", "CdnDistributionId"} {
		if get(tp.root, "Outputs", o) == nil {
			t.Errorf("output %s is missing", o)
		}
	}
	for _, o := range []string{"CdnDomain", "CdnUrl", "CdnDistributionId"} {
		if c := get(tp.root, "Outputs", o, "Condition"); c == nil || c.Value != "CdnEnabled" {
			t.Errorf("output %s must have Condition CdnEnabled", o)
		}
	}
}

// workerTimeouts returns every value WorkerTimeout may take.
func workerTimeouts(tp *template) []string {
	p := get(tp.root, "Parameters", "WorkerTimeout")
	var out []string
	for _, n := range get(p, "AllowedValues").Content {
		out = append(out, n.Value)
	}
	if len(out) == 0 {
		out = append(out, get(p, "Default").Value)
	}
	return out
}

func TestTemplateLaneQueue(t *testing.T) {
	tp := loadTemplate(t)
	ev := get(tp.resource("WorkerFunction"), "Properties", "Events")
	if len(keys(ev)) != 1 {
		t.Fatalf("WorkerFunction: want exactly one event (the lane queue), got %v", keys(ev))
	}
	sqsEv := get(ev, keys(ev)[0])
	if get(sqsEv, "Type").Value != "SQS" {
		t.Fatalf("WorkerFunction's event must be of type SQS")
	}
	if id, attr := refTarget(get(sqsEv, "Properties", "Queue")); id != "LaneQueue" || attr != "Arn" {
		t.Errorf("WorkerFunction's SQS event: Queue must be !GetAtt LaneQueue.Arn")
	}
	if n := get(sqsEv, "Properties", "BatchSize"); n == nil || n.Value != "1" {
		t.Errorf("WorkerFunction's SQS event: BatchSize must be 1")
	}
	if n := get(sqsEv, "Properties", "FunctionResponseTypes"); n == nil || len(n.Content) != 1 || n.Content[0].Value != "ReportBatchItemFailures" {
		t.Errorf("WorkerFunction's SQS event: FunctionResponseTypes must be [ReportBatchItemFailures] (HandleSQS reports partial batch failures)")
	}
	q := tp.resource("LaneQueue")
	redrive := get(q, "Properties", "RedrivePolicy")
	if id, attr := refTarget(get(redrive, "deadLetterTargetArn")); id != "LaneDeadLetterQueue" || attr != "Arn" {
		t.Errorf("LaneQueue: RedrivePolicy.deadLetterTargetArn must be !GetAtt LaneDeadLetterQueue.Arn")
	}
	if n := get(redrive, "maxReceiveCount"); n == nil || n.Value != strconv.Itoa(sqsqueue.MaxReceiveCount) {
		t.Errorf("LaneQueue: maxReceiveCount must be %d (sqsqueue.MaxReceiveCount)", sqsqueue.MaxReceiveCount)
	}
	if n := get(q, "Properties", "ReceiveMessageWaitTimeSeconds"); n != nil && n.Value != "0" {
		t.Errorf("LaneQueue: ReceiveMessageWaitTimeSeconds must stay 0 (sqsqueue.Receive's zero wait is a short poll)")
	}
	margin := seed.New(nil, nil, nil, nil, nil, seed.Options{}, nil).Options().SafetyMargin
	for _, timeout := range workerTimeouts(tp) {
		w := &world{tp: tp, params: map[string]string{"WorkerTimeout": timeout}}
		fnTimeout, err := w.eval(tp.fnProp("WorkerFunction", "Timeout"))
		if err != nil {
			t.Fatal(err)
		}
		vis, err := w.eval(get(q, "Properties", "VisibilityTimeout"))
		if err != nil {
			t.Fatal(err)
		}
		ft, _ := strconv.Atoi(fmt.Sprint(fnTimeout))
		v, _ := strconv.Atoi(fmt.Sprint(vis))
		if ft < 1 || v < 6*ft || v > 43200 {
			t.Errorf("WorkerTimeout %s: function timeout %v s, queue visibility %v s: want visibility from 6× the timeout to 12 h", timeout, fnTimeout, vis)
		}
		if time.Duration(ft)*time.Second <= margin {
			t.Errorf("WorkerTimeout %s leaves no time to work: HandleSQS keeps a safety margin of %v", timeout, margin)
		}
	}
}

func TestTemplateRoutesAndSchedule(t *testing.T) {
	tp := loadTemplate(t)
	type route struct{ path, method string }
	var routes []route
	for _, name := range keys(get(tp.resource("ApiFunction"), "Properties", "Events")) {
		ev := get(tp.resource("ApiFunction"), "Properties", "Events", name)
		if get(ev, "Type").Value != "HttpApi" {
			t.Errorf("ApiFunction event %s: want type HttpApi", name)
			continue
		}
		p := get(ev, "Properties")
		if id, _ := refTarget(get(p, "ApiId")); id == "" || get(tp.resource(id), "Type").Value != "AWS::Serverless::HttpApi" {
			t.Errorf("ApiFunction event %s: ApiId must reference the template's AWS::Serverless::HttpApi", name)
		}
		if v := get(p, "PayloadFormatVersion"); v == nil || v.Value != "2.0" {
			t.Errorf("ApiFunction event %s: PayloadFormatVersion must be 2.0 (httpadapter.NewV2)", name)
		}
		routes = append(routes, route{get(p, "Path").Value, get(p, "Method").Value})
	}
	slices.SortFunc(routes, func(a, b route) int { return strings.Compare(a.path, b.path) })
	if want := []route{{"/console", "GET"}, {"/console/{proxy+}", "GET"}, {"/rest", "ANY"}, {"/rest/{proxy+}", "ANY"}, {"/tiles/{proxy+}", "GET"}}; !slices.Equal(routes, want) {
		t.Errorf("ApiFunction routes: got %v, want %v", routes, want)
	}
	ev := get(tp.resource("CleanerFunction"), "Properties", "Events")
	if len(keys(ev)) != 1 {
		t.Fatalf("CleanerFunction: want exactly one event, got %v", keys(ev))
	}
	s := get(ev, keys(ev)[0])
	if get(s, "Type").Value != "Schedule" || get(s, "Properties", "Schedule").Value != "rate(1 minute)" {
		t.Errorf("CleanerFunction: want an EventBridge Schedule rate(1 minute)")
	}
}

func TestTemplateBucketAndCdn(t *testing.T) {
	tp := loadTemplate(t)
	pab := get(tp.resource("TileBucket"), "Properties", "PublicAccessBlockConfiguration")
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if n := get(pab, k); n == nil || n.Value != "true" {
			t.Errorf("TileBucket: %s must be true", k)
		}
	}
	if get(tp.resource("TileBucket"), "Properties", "BucketEncryption", "ServerSideEncryptionConfiguration") == nil {
		t.Errorf("TileBucket: BucketEncryption missing")
	}
	for _, id := range []string{"TileDistribution", "TileOriginAccessControl"} {
		if c := get(tp.resource(id), "Condition"); c == nil || c.Value != "CdnEnabled" {
			t.Errorf("%s must have Condition CdnEnabled", id)
		}
	}
	origins := get(tp.resource("TileDistribution"), "Properties", "DistributionConfig", "Origins")
	if origins == nil || len(origins.Content) != 2 {
		t.Fatalf("TileDistribution: want two origins, the bucket first (then the tile function)")
	}
	o := origins.Content[0]
	if id, _ := refTarget(get(o, "OriginAccessControlId")); id != "TileOriginAccessControl" {
		t.Errorf("TileDistribution origin: OriginAccessControlId must reference TileOriginAccessControl")
	}
	if id, attr := refTarget(get(o, "DomainName")); id != "TileBucket" || attr != "RegionalDomainName" {
		t.Errorf("TileDistribution origin: DomainName must be !GetAtt TileBucket.RegionalDomainName")
	}
	for _, cdn := range []string{"false", "true"} {
		for _, prefix := range []string{"", "tiles"} {
			w := &world{tp: tp, params: map[string]string{"EnableCdn": cdn, "KeyPrefix": prefix},
				refs: map[string]string{"TileBucket": "bkt", "TileDistribution": "E2EXAMPLE"}, atts: map[string]string{"TileBucket.Arn": "arn:aws:s3:::bkt"}}
			doc, err := w.eval(get(tp.resource("TileBucketPolicy"), "Properties", "PolicyDocument"))
			if err != nil {
				t.Fatal(err)
			}
			var allows []map[string]any
			for _, s := range doc.(map[string]any)["Statement"].([]any) {
				if s := s.(map[string]any); s["Effect"] == "Allow" {
					allows = append(allows, s)
				}
			}
			if cdn == "false" {
				if len(allows) != 0 {
					t.Errorf("EnableCdn false: the bucket policy allows %v", allows)
				}
				continue
			}
			wantRes := "arn:aws:s3:::bkt/*"
			if prefix != "" {
				wantRes = "arn:aws:s3:::bkt/" + prefix + "/*"
			}
			// GetObject under the prefix, and ListBucket so that S3 answers a
			// missing key with 404 (not 403): S3 checks it with the key as
			// s3:prefix, so it is limited to the prefix too. Both for the
			// distribution only.
			source := "StringEquals:map[AWS:SourceArn:arn:aws:cloudfront::000000000000:distribution/E2EXAMPLE]"
			listCond := "map[" + source + "]"
			if prefix != "" {
				listCond = "map[" + source + " StringLike:map[s3:prefix:" + prefix + "/*]]"
			}
			want := [][3]string{{"s3:GetObject", wantRes, "map[" + source + "]"}, {"s3:ListBucket", "arn:aws:s3:::bkt", listCond}}
			if len(allows) != len(want) {
				t.Fatalf("EnableCdn true, KeyPrefix %q: bucket policy allows %v; want %v", prefix, allows, want)
			}
			for i, a := range allows {
				if fmt.Sprint(a["Principal"]) != "map[Service:cloudfront.amazonaws.com]" ||
					!slices.Equal(strs(a["Action"]), []string{want[i][0]}) || !slices.Equal(strs(a["Resource"]), []string{want[i][1]}) ||
					fmt.Sprint(a["Condition"]) != want[i][2] {
					t.Errorf("EnableCdn true, KeyPrefix %q: bucket policy allows %v; want %s on %s for the distribution only, condition %s", prefix, a, want[i][0], want[i][1], want[i][2])
				}
			}
		}
	}
}

// TestTemplateRoles checks the shape of the functions' roles; what they
// allow is checked against recorded calls in policy_test.go.
func TestTemplateRoles(t *testing.T) {
	tp := loadTemplate(t)
	for _, id := range tp.functions() {
		if get(tp.resource(id), "Properties", "Policies") != nil {
			t.Errorf("%s: Policies is ignored next to Role; put statements into the role", id)
		}
		role, attr := refTarget(tp.fnProp(id, "Role"))
		if role == "" || attr != "Arn" || get(tp.resource(role), "Type").Value != "AWS::IAM::Role" {
			t.Errorf("%s: Role must be !GetAtt <role>.Arn of an AWS::IAM::Role of the template", id)
			continue
		}
		if get(tp.resource(role), "Properties", "ManagedPolicyArns") != nil {
			t.Errorf("%s: ManagedPolicyArns are not least privilege", role)
		}
		var buf strings.Builder
		yaml.NewEncoder(&buf).Encode(get(tp.resource(role), "Properties"))
		if strings.Contains(buf.String(), `"*"`) || strings.Contains(buf.String(), ":*\n") {
			t.Errorf("%s: wildcard action or resource:\n%s", role, buf.String())
		}
	}
}
