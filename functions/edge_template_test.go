package functions_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"tilecache/internal/app/tileorigin"
)

// The public edge: the distribution's web ACL, the tile function's
// reserved concurrency and environment, the HTTP API's throttling.

// TestTemplateCdnWebAcl: a web ACL of scope CLOUDFRONT can only be made in
// us-east-1, so the stack makes one (a rate-based rule per client IP
// address) only there and with the CDN; anywhere the distribution takes
// CdnWebAclArn's instead when given, and a stack in another region without
// one deploys without a web ACL.
func TestTemplateCdnWebAcl(t *testing.T) {
	tp := loadTemplate(t)
	const given = "arn:aws:wafv2:us-east-1:000000000000:global/webacl/tiles-edge/1a2b3c4d-0000-4000-8000-0123456789ab"
	const own = "arn:aws:wafv2:us-east-1:000000000000:global/webacl/tilecache-tiles/ffffffff-0000-4000-8000-0123456789ab"
	for _, c := range []struct {
		region, cdn, arn string
		create           bool
		want             string // WebACLId; "" none
	}{
		{"us-east-1", "true", "", true, own},
		{"us-east-1", "true", given, false, given},
		{"eu-west-1", "true", "", false, ""},
		{"eu-west-1", "true", given, false, given},
		{"us-east-1", "false", "", false, ""},
		{"eu-west-1", "false", given, false, ""},
	} {
		name := fmt.Sprintf("%s EnableCdn %s CdnWebAclArn %q", c.region, c.cdn, c.arn)
		w := cdnWorld(tp, map[string]string{"EnableCdn": c.cdn, "CdnWebAclArn": c.arn})
		w.refs["AWS::Region"] = c.region
		w.atts["CdnWebAcl.Arn"] = own
		if fails, err := w.ruleFailures(); err != nil || len(fails) != 0 {
			t.Errorf("%s: the Rules refuse the deployment: %v %v", name, fails, err)
		}
		acl, created := resource(t, w, "CdnWebAcl")
		if created != c.create {
			t.Errorf("%s: web ACL created %v, want %v", name, created, c.create)
		}
		if created {
			checkRateRule(t, w, name, acl)
		}
		dist, ok := resource(t, w, "TileDistribution")
		if ok != (c.cdn == "true") {
			t.Fatalf("%s: distribution created %v", name, ok)
		}
		if !ok {
			continue
		}
		got := m(dist, "DistributionConfig", "WebACLId")
		if (c.want == "" && got != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%s: WebACLId %v, want %q", name, got, c.want)
		}
		out, hasOut := output(t, w, "CdnWebAcl")
		if hasOut != (c.want != "") || (hasOut && out != c.want) {
			t.Errorf("%s: output CdnWebAcl %v (%v), want %q", name, out, hasOut, c.want)
		}
	}

	// The condition is the stack's region, not a parameter.
	if a, ok := tagged(get(tp.root, "Conditions", "InUsEast1"), "Equals"); !ok || len(a.Content) != 2 ||
		refOf(a.Content[0]) != "AWS::Region" || a.Content[1].Value != "us-east-1" {
		t.Errorf("condition InUsEast1 must be !Equals [!Ref AWS::Region, us-east-1]")
	}
	if c := get(tp.resource("CdnWebAcl"), "Condition"); c == nil || c.Value != "CreateCdnWebAcl" {
		t.Errorf("CdnWebAcl must have Condition CreateCdnWebAcl")
	}

	// CdnWebAclArn takes web ACLs of scope CLOUDFRONT only.
	pattern := regexp.MustCompile(get(tp.root, "Parameters", "CdnWebAclArn", "AllowedPattern").Value)
	for arn, ok := range map[string]bool{
		"":    true,
		given: true,
		"arn:aws-cn:wafv2:us-east-1:000000000000:global/webacl/a_b/1a2b3c4d-0000-4000-8000-0123456789ab":  true,
		"arn:aws:wafv2:eu-west-1:000000000000:regional/webacl/tiles/1a2b3c4d-0000-4000-8000-0123456789ab": false,
		"arn:aws:wafv2:eu-west-1:000000000000:global/webacl/tiles/1a2b3c4d-0000-4000-8000-0123456789ab":   false,
		"1a2b3c4d-0000-4000-8000-0123456789ab": false, // a WAF Classic id
	} {
		if pattern.MatchString(arn) != ok {
			t.Errorf("CdnWebAclArn %q: accepted %v, want %v", arn, !ok, ok)
		}
	}
}

// checkRateRule checks the stack's own web ACL: CLOUDFRONT scope, requests
// allowed by default, one rule blocking an IP address over CdnRateLimit
// requests in 5 minutes.
func checkRateRule(t *testing.T, w *world, name string, acl map[string]any) {
	t.Helper()
	limit, _ := w.param("CdnRateLimit")
	if n, err := strconv.Atoi(limit); err != nil || n < 100 {
		t.Errorf("CdnRateLimit %q: want a number of at least 100 (WAF's floor)", limit)
	}
	if acl["Scope"] != "CLOUDFRONT" || fmt.Sprint(acl["DefaultAction"]) != "map[Allow:map[]]" {
		t.Errorf("%s: web ACL scope %v, default action %v; want CLOUDFRONT, Allow", name, acl["Scope"], acl["DefaultAction"])
	}
	rules, _ := acl["Rules"].([]any)
	if len(rules) != 1 {
		t.Fatalf("%s: web ACL rules %v, want one rate-based rule", name, rules)
	}
	r := rules[0]
	rate := m(r, "Statement", "RateBasedStatement")
	if m(rate, "Limit") != limit || m(rate, "AggregateKeyType") != "IP" {
		t.Errorf("%s: rate-based statement %v, want Limit %s per IP", name, rate, limit)
	}
	if p := m(rate, "EvaluationWindowSec"); p != nil && p != "300" {
		t.Errorf("%s: evaluation window %v, want 5 minutes", name, p)
	}
	if m(r, "Action", "Block") == nil {
		t.Errorf("%s: rule action %v, want Block", name, m(r, "Action"))
	}
	if code := m(r, "Action", "Block", "CustomResponse", "ResponseCode"); code != nil && code != "429" {
		t.Errorf("%s: blocked requests answered %v, want 429", name, code)
	}
	for _, vc := range []any{acl["VisibilityConfig"], m(r, "VisibilityConfig")} {
		if m(vc, "CloudWatchMetricsEnabled") != "true" || m(vc, "MetricName") == nil {
			t.Errorf("%s: visibility %v, want CloudWatch metrics", name, vc)
		}
	}
}

// refOf returns X of !Ref X.
func refOf(n *yaml.Node) string {
	if a, ok := tagged(n, "Ref"); ok {
		return a.Value
	}
	return ""
}

// TestTemplateTileFunctionConcurrency: by default the tile function has a
// small reservation, so that a flood of misses takes at most that much of
// the account's concurrency from the API and worker functions; 0 reserves
// none.
func TestTemplateTileFunctionConcurrency(t *testing.T) {
	tp := loadTemplate(t)
	p := get(tp.root, "Parameters", "TileFunctionConcurrency")
	def, err := strconv.Atoi(get(p, "Default").Value)
	if err != nil || def < 1 || def > 100 {
		t.Errorf("TileFunctionConcurrency: default %v, want a small reservation (1 to 100)", get(p, "Default").Value)
	}
	if n := get(p, "MinValue"); n == nil || n.Value != "0" {
		t.Errorf("TileFunctionConcurrency: MinValue must be 0 (no reservation)")
	}
	for value, want := range map[string]any{"": strconv.Itoa(def), "0": nil, "25": "25"} {
		params := map[string]string{"EnableCdn": "true"}
		if value != "" {
			params["TileFunctionConcurrency"] = value
		}
		fn, _ := resource(t, cdnWorld(tp, params), "TileFunction")
		if got := fn["ReservedConcurrentExecutions"]; got != want {
			t.Errorf("TileFunctionConcurrency %q: ReservedConcurrentExecutions %v, want %v", value, got, want)
		}
	}
}

// TestTemplateApiThrottling: the HTTP API's stage throttles /rest (a
// flood is answered 429 by API Gateway, not by ApiFunction), with limits
// that never block everything.
func TestTemplateApiThrottling(t *testing.T) {
	tp := loadTemplate(t)
	settings := get(tp.resource("HttpApi"), "Properties", "DefaultRouteSettings")
	if settings == nil {
		t.Fatal("HttpApi: no DefaultRouteSettings (stage throttling)")
	}
	w := &world{tp: tp}
	limits := map[string]float64{}
	for prop, param := range map[string]string{"ThrottlingBurstLimit": "ApiThrottlingBurstLimit", "ThrottlingRateLimit": "ApiThrottlingRateLimit"} {
		n := get(settings, prop)
		if id, _ := refTarget(n); id != param {
			t.Errorf("HttpApi DefaultRouteSettings.%s must be !Ref %s", prop, param)
			continue
		}
		p := get(tp.root, "Parameters", param)
		if get(p, "Type").Value != "Number" {
			t.Errorf("%s: want Type Number", param)
		}
		if lo := get(p, "MinValue"); lo == nil || lo.Value == "0" {
			t.Errorf("%s: want a MinValue above 0 (0 refuses every request)", param)
		}
		v, err := w.eval(n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
		if err != nil || f < 1 {
			t.Errorf("%s: default %v, want a positive number", param, v)
		}
		limits[prop] = f
	}
	if limits["ThrottlingBurstLimit"] < limits["ThrottlingRateLimit"] {
		t.Errorf("burst limit %v below the rate limit %v: a second's worth of requests could not pass at once", limits["ThrottlingBurstLimit"], limits["ThrottlingRateLimit"])
	}
}

// TestTemplateTileFunctionEnvironment: a render claim lasts as long as the
// function's timeout (a claim of an instance killed at its timeout frees
// the metatile no later than that) and a render fits in it, and a
// render's outcome is remembered at least as long as the CDN caches a 404
// — for every timeout, as config.Load reads the variables.
func TestTemplateTileFunctionEnvironment(t *testing.T) {
	tp := loadTemplate(t)
	env := tp.env("TileFunction")
	p := get(tp.root, "Parameters", "TileFunctionTimeout")
	if lo, hi := get(p, "MinValue"), get(p, "MaxValue"); lo == nil || hi == nil || lo.Value != "5" || hi.Value != "60" {
		t.Errorf("TileFunctionTimeout: want MinValue 5, MaxValue 60 (the cases below)")
	}
	if d := get(tp.root, "Parameters", "MissRememberSeconds", "Default"); d == nil || d.Value != "300" {
		t.Errorf("MissRememberSeconds: want Default 300 (5 minutes)")
	}
	for _, c := range []map[string]string{
		{},
		{"TileFunctionTimeout": "5"},
		{"TileFunctionTimeout": "60", "CdnNotFoundTtl": "60", "MissRememberSeconds": "60"},
	} {
		params := map[string]string{"EnableCdn": "true"}
		maps.Copy(params, c)
		w := cdnWorld(tp, params)
		fn, _ := resource(t, w, "TileFunction")
		timeout, _ := strconv.Atoi(fmt.Sprint(fn["Timeout"]))
		notFound, _ := w.param("CdnNotFoundTtl")
		ttl404, _ := strconv.Atoi(notFound)
		vals := map[string]string{}
		for name, n := range env {
			v, err := w.eval(n)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			vals[name] = fmt.Sprint(v)
		}
		cfg, err := tileorigin.Load(func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
		if err != nil {
			t.Errorf("%v: TileFunction's environment does not load: %v", c, err)
			continue
		}
		fnTimeout := time.Duration(timeout) * time.Second
		if timeout < 1 || cfg.ClaimTTL != fnTimeout {
			t.Errorf("%v: claim TTL %v (TILECACHE_CLAIM_TTL %q), want the function's timeout %v", c, cfg.ClaimTTL, vals["TILECACHE_CLAIM_TTL"], fnTimeout)
		}
		if cfg.MissTimeout <= 0 || cfg.MissTimeout > fnTimeout {
			t.Errorf("%v: render budget %v, want at most the function's timeout %v", c, cfg.MissTimeout, fnTimeout)
		}
		if cfg.MissRemember < time.Duration(ttl404)*time.Second {
			t.Errorf("%v: outcomes remembered %v (TILECACHE_MISS_REMEMBER %q), want at least CdnNotFoundTtl %d s", c, cfg.MissRemember, vals["TILECACHE_MISS_REMEMBER"], ttl404)
		}
	}
}

// TestTemplateEdgePathFunction: with the CDN, the edge path function is
// the repository's functions/edge/tilepath.js exactly (within CloudFront
// Functions' 10 KB), runs on cloudfront-js-2.0 with the grid sets'
// key-value store, and maps every viewer request of the distribution's
// default behaviour; without the CDN neither exists.
func TestTemplateEdgePathFunction(t *testing.T) {
	tp := loadTemplate(t)
	src, err := os.ReadFile("edge/tilepath.js")
	if err != nil {
		t.Fatal(err)
	}
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	fn, ok := resource(t, w, "EdgePathFunction")
	if !ok {
		t.Fatal("EdgePathFunction missing with the CDN enabled")
	}
	code, _ := fn["FunctionCode"].(string)
	if code != string(src) {
		t.Errorf("EdgePathFunction's code differs from functions/edge/tilepath.js (%d bytes against %d): copy the file into the template", len(code), len(src))
	}
	if len(code) > 10*1024 {
		t.Errorf("EdgePathFunction's code is %d bytes, CloudFront Functions take 10 KB", len(code))
	}
	cfg, _ := fn["FunctionConfig"].(map[string]any)
	if cfg["Runtime"] != "cloudfront-js-2.0" || fmt.Sprint(fn["AutoPublish"]) != "true" {
		t.Errorf("EdgePathFunction: runtime %v, AutoPublish %v; want cloudfront-js-2.0, published", cfg["Runtime"], fn["AutoPublish"])
	}
	kvsArn := w.atts["EdgeGridSets.Arn"]
	if assoc := fmt.Sprint(cfg["KeyValueStoreAssociations"]); !strings.Contains(assoc, kvsArn) {
		t.Errorf("EdgePathFunction's key-value stores %s, want EdgeGridSets", assoc)
	}
	if _, ok := resource(t, w, "EdgeGridSets"); !ok {
		t.Error("EdgeGridSets missing with the CDN enabled")
	}
	dist, _ := resource(t, w, "TileDistribution")
	behaviour := dist["DistributionConfig"].(map[string]any)["DefaultCacheBehavior"].(map[string]any)
	assocs := fmt.Sprint(behaviour["FunctionAssociations"])
	if !strings.Contains(assocs, "viewer-request") || !strings.Contains(assocs, w.atts["EdgePathFunction.FunctionMetadata.FunctionARN"]) {
		t.Errorf("the default behaviour's functions %s, want the edge path function on viewer-request", assocs)
	}
	off := cdnWorld(tp, map[string]string{"EnableCdn": "false"})
	for _, id := range []string{"EdgePathFunction", "EdgeGridSets"} {
		if _, ok := resource(t, off, id); ok {
			t.Errorf("%s exists without the CDN", id)
		}
	}
}

// cloudFrontFunctionMax is CloudFront Functions' limit on a function's
// code: 10 KB.
const cloudFrontFunctionMax = 10 * 1024

// TestTemplateEdgeFunctionsSize: every CloudFront Function of the template
// runs on cloudfront-js-2.0 with code within CloudFront Functions' 10 KB,
// and so does every edge function file (functions/edge/*.js, the tests'
// driver edgecases.js aside), with its headroom logged.
func TestTemplateEdgeFunctionsSize(t *testing.T) {
	tp := loadTemplate(t)
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	ids := tp.resourcesOfType("AWS::CloudFront::Function")
	if len(ids) == 0 {
		t.Fatal("no AWS::CloudFront::Function in the template")
	}
	for _, id := range ids {
		fn, ok := resource(t, w, id)
		if !ok {
			t.Errorf("%s: missing with the CDN enabled", id)
			continue
		}
		code, _ := fn["FunctionCode"].(string)
		cfg, _ := fn["FunctionConfig"].(map[string]any)
		if cfg["Runtime"] != "cloudfront-js-2.0" {
			t.Errorf("%s: runtime %v, want cloudfront-js-2.0 (the edge tests run its engine, njs)", id, cfg["Runtime"])
		}
		if code == "" || len(code) > cloudFrontFunctionMax {
			t.Errorf("%s: code of %d bytes, CloudFront Functions take 1 to %d", id, len(code), cloudFrontFunctionMax)
		}
		t.Logf("%s: %d bytes of code, %d to spare", id, len(code), cloudFrontFunctionMax-len(code))
	}
	files, err := filepath.Glob("edge/*.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no edge function files (%v)", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "edgecases.js" {
			continue // the tests' driver, not deployed
		}
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > cloudFrontFunctionMax {
			t.Errorf("%s is %d bytes: CloudFront Functions take at most %d", f, st.Size(), cloudFrontFunctionMax)
		}
		t.Logf("%s: %d bytes, %d to spare", f, st.Size(), cloudFrontFunctionMax-st.Size())
	}
}
