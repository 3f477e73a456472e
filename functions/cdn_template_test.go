package functions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/tilestore"
)

// corsS3Origin is the managed origin request policy CORS-S3Origin: it
// passes Origin and the Access-Control-Request-* headers on to S3.
const corsS3Origin = "88a5eaf4-2fd4-4709-b370-b4c650ea3fcf"

// cdnWorld is a deployment of the template with the CDN settings given.
func cdnWorld(tp *template, params map[string]string) *world {
	w := &world{tp: tp, params: params,
		refs: map[string]string{"TileBucket": "bkt", "TileDistribution": "E2EXAMPLE", "TileCachePolicy": "cp-1", "TileOriginRequestPolicy": "orp-1",
			"TileResponseHeadersPolicy": "rhp-1", "TaskTable": "table", "TileFunction": "tile-fn", "TileLogGroup": "/tilecache/tile", "LaneQueue": "https://sqs.us-east-1.amazonaws.com/000000000000/lanes"},
		atts: map[string]string{"TileBucket.Arn": "arn:aws:s3:::bkt", "TileBucket.RegionalDomainName": "bkt.s3.us-east-1.amazonaws.com",
			"TileOriginAccessControl.Id": "oac-1", "TileDistribution.DomainName": "d111.cloudfront.net",
			"CdnLogBucket.DomainName": "logs.s3.amazonaws.com", "TaskTable.Arn": "arn:aws:dynamodb:us-east-1:000000000000:table/table",
			"LaneQueue.Arn": "arn:aws:sqs:us-east-1:000000000000:lanes", "TileFunctionAccessControl.Id": "oac-2", "TileRole.Arn": "arn:aws:iam::000000000000:role/tile",
			"TileFunctionUrl.FunctionUrl":                   "https://abcdefghijklmnopqrstuvwxyz123456.lambda-url.us-east-1.on.aws/",
			"CdnWebAcl.Arn":                                 "arn:aws:wafv2:us-east-1:000000000000:global/webacl/tilecache-tiles/ffffffff-0000-4000-8000-0123456789ab",
			"LogsFunction.Arn":                              "arn:aws:lambda:us-east-1:000000000000:function:tc-logs",
			"EdgeGridSets.Arn":                              "arn:aws:cloudfront::000000000000:key-value-store/2b7e1f9e-0000-4000-8000-0123456789ab",
			"EdgePathFunction.FunctionMetadata.FunctionARN": "arn:aws:cloudfront::000000000000:function/tc-paths",
			"EdgeOWSFunction.FunctionMetadata.FunctionARN":  "arn:aws:cloudfront::000000000000:function/tc-ows"}}
	for _, id := range tp.resourcesOfType("AWS::Logs::LogGroup") {
		w.atts[id+".Arn"] = "arn:aws:logs:us-east-1:000000000000:log-group:" + id + ":*"
	}
	return w
}

// resource evaluates a resource's properties; ok is false when its
// condition is false.
func resource(t *testing.T, w *world, id string) (props map[string]any, ok bool) {
	t.Helper()
	r := w.tp.resource(id)
	if r == nil {
		t.Fatalf("resource %s missing", id)
	}
	if c := get(r, "Condition"); c != nil {
		on, err := w.condition(c.Value)
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			return nil, false
		}
	}
	v, err := w.eval(get(r, "Properties"))
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return v.(map[string]any), true
}

// output evaluates an output's value; ok is false when its condition is
// false.
func output(t *testing.T, w *world, name string) (value any, ok bool) {
	t.Helper()
	o := get(w.tp.root, "Outputs", name)
	if o == nil {
		t.Fatalf("output %s missing", name)
	}
	if c := get(o, "Condition"); c != nil {
		on, err := w.condition(c.Value)
		if err != nil {
			t.Fatal(err)
		}
		if !on {
			return nil, false
		}
	}
	v, err := w.eval(get(o, "Value"))
	if err != nil {
		t.Fatalf("output %s: %v", name, err)
	}
	return v, true
}

// m walks maps of an evaluated value; nil when a key is missing.
func m(v any, path ...string) any {
	for _, k := range path {
		mv, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mv[k]
	}
	return v
}

// cdnCase is a stack's parameters with the CDN, and what map clients get
// of them.
type cdnCase struct {
	name    string
	params  map[string]string
	origins []string // CORS
	aliases []string
	logs    bool
	ttl     string // of a 404
}

var cdnCases = []cdnCase{
	{"defaults", map[string]string{"EnableCdn": "true"}, []string{"*"}, nil, false, "10"},
	{"key prefix, custom domain, logs, origins, TTL", map[string]string{"EnableCdn": "true", "KeyPrefix": "cache/tiles",
		"CdnAliases": "tiles.example.org, a.tiles.example.org", "CdnCertificateArn": "arn:aws:acm:us-east-1:000000000000:certificate/abc",
		"CdnAccessLogs": "true", "CdnCorsOrigins": "https://maps.example.org,https://admin.example.org", "CdnNotFoundTtl": "30"},
		[]string{"https://maps.example.org", "https://admin.example.org"}, []string{"tiles.example.org", "a.tiles.example.org"}, true, "30"},
}

// TestTemplateCdnForMapClients checks what map clients depend on: CORS
// headers (preflights included), S3's 404 for a missing tile cached
// briefly and passed on, caching by each object's Cache-Control, the demo
// page at the root, the optional custom domain and access logs, and the
// functions' view of the distribution (its id to invalidate, its URL for
// the documents) — with and without a key prefix.
func TestTemplateCdnForMapClients(t *testing.T) {
	tp := loadTemplate(t)
	for _, c := range cdnCases {
		t.Run(c.name, func(t *testing.T) {
			w := cdnWorld(tp, c.params)
			if fails, err := w.ruleFailures(); err != nil || len(fails) != 0 {
				t.Fatalf("the Rules refuse the parameters: %v %v", fails, err)
			}
			dist, ok := resource(t, w, "TileDistribution")
			if !ok {
				t.Fatal("TileDistribution missing with EnableCdn true")
			}
			dc := dist["DistributionConfig"].(map[string]any)

			checkCdnOrigins(t, tp, w, c, dc)
			checkCdnCacheBehaviour(t, tp, w, c, dc)
			checkCdnCachingAndCORS(t, tp, w, c, dc)
			checkCdnDomainAndLogs(t, tp, w, c, dc)
			checkCdnURLs(t, tp, w, c, dc)
		})
	}

	// Without the CDN: no CloudFront resource, no log bucket, no bucket
	// CORS, nothing to invalidate and no public URL.
	for _, prefix := range []string{"", "tiles"} {
		w := cdnWorld(tp, map[string]string{"EnableCdn": "false", "KeyPrefix": prefix, "CdnAccessLogs": "true"})
		for _, id := range append(tp.resourcesOfType("AWS::CloudFront::Distribution"), "TileOriginAccessControl", "TileCachePolicy", "TileOriginRequestPolicy", "TileResponseHeadersPolicy", "CdnLogBucket",
			"TileFunction", "TileRole", "TileLogGroup", "TileFunctionAccessControl", "TileFunctionUrlPermission", "TileFunctionInvokePermission") {
			if _, ok := resource(t, w, id); ok {
				t.Errorf("EnableCdn false: %s is created", id)
			}
		}
		if bucket, _ := resource(t, w, "TileBucket"); bucket["CorsConfiguration"] != nil {
			t.Errorf("EnableCdn false: TileBucket has CORS rules %v", bucket["CorsConfiguration"])
		}
		for _, fn := range tp.functions() {
			if fn == "TileFunction" || fn == "LogsFunction" {
				continue // not created (above); no distribution or URL
			}
			for _, name := range []string{"TILECACHE_CDN_DISTRIBUTION_ID", "TILECACHE_PUBLIC_URL"} {
				if got, err := w.eval(tp.env(fn)[name]); err != nil || got != "" {
					t.Errorf("EnableCdn false: %s %s: got %v (%v), want \"\"", fn, name, got, err)
				}
			}
		}
		for _, name := range []string{"CdnDomain", "CdnUrl", "CdnDistributionId"} {
			if _, ok := output(t, w, name); ok {
				t.Errorf("EnableCdn false: output %s is given", name)
			}
		}
	}
	// Every CloudFront resource depends on the CDN.
	for _, id := range keys(get(tp.root, "Resources")) {
		if strings.HasPrefix(get(tp.resource(id), "Type").Value, "AWS::CloudFront::") {
			if c := get(tp.resource(id), "Condition"); c == nil || c.Value != "CdnEnabled" {
				t.Errorf("%s must have Condition CdnEnabled", id)
			}
		}
	}
}

// checkCdnOrigins checks the origins: the bucket under the key prefix, and render on miss
// through the tile function, invoked by this distribution only.
func checkCdnOrigins(t *testing.T, tp *template, w *world, c cdnCase, dc map[string]any) {
	t.Helper()
	// The origin: the key prefix is the origin path, so URLs are
	// keys without it.
	origin := dc["Origins"].([]any)[0].(map[string]any)
	wantPath := any(nil)
	if p := c.params["KeyPrefix"]; p != "" {
		wantPath = "/" + p
	}
	if origin["OriginPath"] != wantPath {
		t.Errorf("OriginPath: got %v, want %v", origin["OriginPath"], wantPath)
	}
	// Render on miss: an origin group tries the bucket, then (on
	// its 404) the tile function's URL, signed by its own origin
	// access control; the function may be invoked by this
	// distribution only, through its IAM-authenticated URL.
	origins := dc["Origins"].([]any)
	if len(origins) != 2 {
		t.Fatalf("Origins: got %d, want the bucket and the tile function", len(origins))
	}
	fo := origins[1].(map[string]any)
	if fo["Id"] != "tile-function" || fo["DomainName"] != "abcdefghijklmnopqrstuvwxyz123456.lambda-url.us-east-1.on.aws" ||
		fo["OriginAccessControlId"] != "oac-2" || fo["OriginPath"] != nil || m(fo, "CustomOriginConfig", "OriginProtocolPolicy") != "https-only" {
		t.Errorf("tile function origin: got %v; want the function URL's host, its OAC, https-only, no origin path", fo)
	}
	groups := m(dc, "OriginGroups", "Items").([]any)
	if len(groups) != 1 || m(dc, "OriginGroups", "Quantity") != "1" {
		t.Fatalf("OriginGroups: got %v, want one", dc["OriginGroups"])
	}
	g := groups[0].(map[string]any)
	if fmt.Sprint(m(g, "FailoverCriteria", "StatusCodes", "Items")) != "[404]" ||
		fmt.Sprint(m(g, "Members", "Items")) != "[map[OriginId:tiles] map[OriginId:tile-function]]" {
		t.Errorf("origin group: got %v; want the bucket first, the tile function on 404", g)
	}
	if b := dc["DefaultCacheBehavior"].(map[string]any); b["TargetOriginId"] != g["Id"] {
		t.Errorf("the cache behaviour targets %v, want the origin group %v", b["TargetOriginId"], g["Id"])
	}
	oac, _ := resource(t, w, "TileFunctionAccessControl")
	if m(oac, "OriginAccessControlConfig", "OriginAccessControlOriginType") != "lambda" || m(oac, "OriginAccessControlConfig", "SigningBehavior") != "always" {
		t.Errorf("TileFunctionAccessControl: got %v, want lambda, always signed", oac)
	}
	distArn := "arn:aws:cloudfront::000000000000:distribution/E2EXAMPLE"
	for id, action := range map[string]string{"TileFunctionUrlPermission": "lambda:InvokeFunctionUrl", "TileFunctionInvokePermission": "lambda:InvokeFunction"} {
		perm, ok := resource(t, w, id)
		if !ok || perm["Action"] != action || perm["Principal"] != "cloudfront.amazonaws.com" || perm["FunctionName"] != "tile-fn" ||
			!strings.HasSuffix(fmt.Sprint(perm["SourceArn"]), ":cloudfront::000000000000:distribution/E2EXAMPLE") {
			t.Errorf("%s: got %v; want %s for %s only", id, perm, action, distArn)
		}
	}
	if perm, _ := resource(t, w, "TileFunctionUrlPermission"); perm["FunctionUrlAuthType"] != "AWS_IAM" {
		t.Errorf("TileFunctionUrlPermission: FunctionUrlAuthType %v, want AWS_IAM", perm["FunctionUrlAuthType"])
	}
	fn, _ := resource(t, w, "TileFunction")
	if m(fn, "FunctionUrlConfig", "AuthType") != "AWS_IAM" || fn["Timeout"] != "30" || fn["ReservedConcurrentExecutions"] != "10" {
		t.Errorf("TileFunction: got URL %v, timeout %v, reserved %v; want AWS_IAM, 30, 10 (TestTemplateTileFunctionConcurrency)", fn["FunctionUrlConfig"], fn["Timeout"], fn["ReservedConcurrentExecutions"])
	}

	if dc["DefaultRootObject"] != "index.html" {
		t.Errorf("DefaultRootObject: got %v, want index.html (the demo page)", dc["DefaultRootObject"])
	}
}

// checkCdnCacheBehaviour checks the answers to a missing tile, and the cache behaviour.
func checkCdnCacheBehaviour(t *testing.T, tp *template, w *world, c cdnCase, dc map[string]any) {
	t.Helper()
	// A missing tile: S3's own 404 (ListBucket, see
	// TestTemplateBucketAndCdn), cached CdnNotFoundTtl seconds and
	// passed on: no response page, no other code.
	if got, want := fmt.Sprint(dc["CustomErrorResponses"]), "[map[ErrorCachingMinTTL:"+c.ttl+" ErrorCode:404]]"; got != want {
		t.Errorf("CustomErrorResponses: got %s, want %s (a 404 cached briefly, no response page)", got, want)
	}

	// The cache behaviour: preflights pass, are not cached (the key
	// has no Origin), and reach the bucket with their CORS headers.
	b := dc["DefaultCacheBehavior"].(map[string]any)
	if got := strs(b["AllowedMethods"]); !slices.Equal(got, []string{"GET", "HEAD", "OPTIONS"}) {
		t.Errorf("AllowedMethods: got %v, want GET, HEAD, OPTIONS (CORS preflights)", got)
	}
	if got := strs(b["CachedMethods"]); !slices.Equal(got, []string{"GET", "HEAD"}) {
		t.Errorf("CachedMethods: got %v, want GET, HEAD (a preflight's answer depends on its Origin, which is not in the cache key)", got)
	}
	// What CORS-S3Origin forwarded (S3 answers a preflight only with
	// its Origin and Access-Control-Request-Method), and the tile
	// token (TestTemplateTileTokenReachesTileFunction).
	if b["OriginRequestPolicyId"] != "orp-1" {
		t.Errorf("OriginRequestPolicyId: got %v, want the template's own TileOriginRequestPolicy (CORS-S3Origin %s forwards no tile token)", b["OriginRequestPolicyId"], corsS3Origin)
	}
	orp, _ := resource(t, w, "TileOriginRequestPolicy")
	if got := strs(m(orp, "OriginRequestPolicyConfig", "HeadersConfig", "Headers")); !slices.Equal(got, []string{"Origin", "Access-Control-Request-Headers", "Access-Control-Request-Method", "x-tile-token"}) {
		t.Errorf("origin request policy headers: got %v, want CORS-S3Origin's (Origin, Access-Control-Request-Headers, Access-Control-Request-Method) and x-tile-token", got)
	}
	if b["CachePolicyId"] != "cp-1" || b["ResponseHeadersPolicyId"] != "rhp-1" {
		t.Errorf("cache behaviour: got cache policy %v, response headers policy %v; want the template's own", b["CachePolicyId"], b["ResponseHeadersPolicyId"])
	}
	if b["ViewerProtocolPolicy"] != "redirect-to-https" || b["Compress"] != "true" {
		t.Errorf("cache behaviour: got viewer protocol %v, compress %v; want redirect-to-https, true", b["ViewerProtocolPolicy"], b["Compress"])
	}
}

// checkCdnCachingAndCORS checks caching by each object's Cache-Control, and CORS.
func checkCdnCachingAndCORS(t *testing.T, tp *template, w *world, c cdnCase, dc map[string]any) {
	t.Helper()
	// Caching follows each object's Cache-Control.
	cpr, _ := resource(t, w, "TileCachePolicy")
	cp := cpr["CachePolicyConfig"].(map[string]any)
	if cp["MinTTL"] != "0" || cp["MaxTTL"] != "31536000" || cp["DefaultTTL"] != "86400" {
		t.Errorf("cache policy TTLs: got min %v default %v max %v; want 0 (honour short max-age), 86400, 31536000", cp["MinTTL"], cp["DefaultTTL"], cp["MaxTTL"])
	}
	key := cp["ParametersInCacheKeyAndForwardedToOrigin"].(map[string]any)
	for path, want := range map[string]string{"CookiesConfig.CookieBehavior": "none", "HeadersConfig.HeaderBehavior": "none",
		"QueryStringsConfig.QueryStringBehavior": "none", "EnableAcceptEncodingGzip": "true", "EnableAcceptEncodingBrotli": "true"} {
		if got := m(key, strings.Split(path, ".")...); got != want {
			t.Errorf("cache key %s: got %v, want %s (parameters are in the key path; documents compress)", path, got, want)
		}
	}

	// CORS headers on every answer, the origin's own overridden.
	rhp, _ := resource(t, w, "TileResponseHeadersPolicy")
	cors := m(rhp, "ResponseHeadersPolicyConfig", "CorsConfig")
	if got := strs(m(cors, "AccessControlAllowOrigins", "Items")); !slices.Equal(got, c.origins) {
		t.Errorf("CORS allowed origins: got %v, want %v", got, c.origins)
	}
	if got := strs(m(cors, "AccessControlAllowMethods", "Items")); !slices.Equal(got, []string{"GET", "HEAD", "OPTIONS"}) {
		t.Errorf("CORS allowed methods: got %v, want GET, HEAD, OPTIONS", got)
	}
	if got := strs(m(cors, "AccessControlAllowHeaders", "Items")); !slices.Equal(got, []string{"*"}) {
		t.Errorf("CORS allowed headers: got %v, want *", got)
	}
	if got := strs(m(cors, "AccessControlExposeHeaders", "Items")); !slices.Contains(got, "ETag") {
		t.Errorf("CORS exposed headers: got %v, want ETag among them", got)
	}
	if m(cors, "OriginOverride") != "true" || m(cors, "AccessControlAllowCredentials") != "false" || m(cors, "AccessControlMaxAgeSec") == nil {
		t.Errorf("CORS: got %v; want OriginOverride true, no credentials, a max age", cors)
	}
	// The bucket answers the preflights for the same origins.
	bucket, _ := resource(t, w, "TileBucket")
	rules, _ := m(bucket, "CorsConfiguration", "CorsRules").([]any)
	if len(rules) != 1 || !slices.Equal(strs(m(rules[0], "AllowedOrigins")), c.origins) ||
		!slices.Equal(strs(m(rules[0], "AllowedMethods")), []string{"GET", "HEAD"}) {
		t.Errorf("TileBucket CORS rules: got %v; want one allowing GET, HEAD from %v", rules, c.origins)
	}
}

// checkCdnDomainAndLogs checks the custom domain and the access logs.
func checkCdnDomainAndLogs(t *testing.T, tp *template, w *world, c cdnCase, dc map[string]any) {
	t.Helper()
	// The custom domain.
	if c.aliases != nil {
		if got := strs(dc["Aliases"]); !slices.Equal(got, c.aliases) {
			t.Errorf("Aliases: got %v, want %v", got, c.aliases)
		}
		vc := dc["ViewerCertificate"]
		if m(vc, "AcmCertificateArn") != c.params["CdnCertificateArn"] || m(vc, "SslSupportMethod") != "sni-only" ||
			m(vc, "MinimumProtocolVersion") != "TLSv1.2_2021" || m(vc, "CloudFrontDefaultCertificate") != nil {
			t.Errorf("ViewerCertificate: got %v; want the ACM certificate, sni-only, TLSv1.2_2021", vc)
		}
	} else if dc["Aliases"] != nil || fmt.Sprint(dc["ViewerCertificate"]) != "map[CloudFrontDefaultCertificate:true]" {
		t.Errorf("without a domain: got aliases %v, certificate %v; want none, CloudFront's", dc["Aliases"], dc["ViewerCertificate"])
	}

	// Access logs.
	logBucket, hasLogBucket := resource(t, w, "CdnLogBucket")
	if c.logs != hasLogBucket || c.logs != (dc["Logging"] != nil) {
		t.Errorf("access logs %v: got log bucket %v, Logging %v", c.logs, hasLogBucket, dc["Logging"])
	} else if c.logs {
		// CloudFront's standard logs want the bucket's global
		// domain name (bucket.s3.amazonaws.com) and ACLs.
		if fmt.Sprint(dc["Logging"]) != "map[Bucket:logs.s3.amazonaws.com IncludeCookies:false Prefix:cdn/]" {
			t.Errorf("Logging: got %v", dc["Logging"])
		}
		if id, attr := refTarget(get(get(tp.resource("TileDistribution"), "Properties", "DistributionConfig", "Logging").Content[1], "Bucket")); id != "CdnLogBucket" || attr != "DomainName" {
			t.Errorf("Logging.Bucket must be !GetAtt CdnLogBucket.DomainName, got %s.%s", id, attr)
		}
		if got := strs(m(logBucket, "OwnershipControls", "Rules")); fmt.Sprint(got) != "[map[ObjectOwnership:BucketOwnerPreferred]]" {
			t.Errorf("CdnLogBucket ownership: got %v, want BucketOwnerPreferred (CloudFront writes logs with an ACL)", got)
		}
		for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
			if m(logBucket, "PublicAccessBlockConfiguration", k) != "true" {
				t.Errorf("CdnLogBucket: %s must be true", k)
			}
		}
		if m(logBucket, "BucketEncryption") == nil {
			t.Errorf("CdnLogBucket: BucketEncryption missing")
		}
		if lc := fmt.Sprint(m(logBucket, "LifecycleConfiguration", "Rules")); !strings.Contains(lc, "ExpirationInDays:90") || !strings.Contains(lc, "Status:Enabled") {
			t.Errorf("CdnLogBucket: lifecycle rules %s, want logs expired after 90 days", lc)
		}
		if d := get(tp.resource("CdnLogBucket"), "DeletionPolicy"); d == nil || d.Value != "Retain" {
			t.Errorf("CdnLogBucket: DeletionPolicy must be Retain (logs outlive the stack)")
		}
	}
}

// checkCdnURLs checks the functions' view of the distribution, and the outputs.
func checkCdnURLs(t *testing.T, tp *template, w *world, c cdnCase, dc map[string]any) {
	t.Helper()
	// The functions' view, and the outputs.
	wantURL := "https://d111.cloudfront.net"
	if c.aliases != nil {
		wantURL = "https://" + c.aliases[0]
	}
	for _, fn := range tp.functions() {
		env := tp.env(fn)
		if fn == "TileFunction" {
			if env["TILECACHE_CDN_DISTRIBUTION_ID"] != nil {
				t.Errorf("TileFunction must not name the distribution (which depends on it)")
			}
			continue
		}
		if fn == "LogsFunction" {
			continue // reads logs into the task table: no distribution, no URLs (TestTemplateLogIngestion)
		}
		for name, want := range map[string]string{"TILECACHE_CDN_DISTRIBUTION_ID": "E2EXAMPLE", "TILECACHE_PUBLIC_URL": wantURL} {
			got, err := w.eval(env[name])
			if err != nil || got != want {
				t.Errorf("%s %s: got %v (%v), want %s", fn, name, got, err, want)
			}
		}
	}
	for name, want := range map[string]string{"CdnUrl": wantURL, "CdnDistributionId": "E2EXAMPLE", "CdnDomain": "d111.cloudfront.net"} {
		if got, ok := output(t, w, name); !ok || got != want {
			t.Errorf("output %s: got %v (%v), want %s", name, got, ok, want)
		}
	}
}

// TestTemplateCdnRules: a custom domain needs its certificate and the
// other way round, and no alias is empty.
func TestTemplateCdnRules(t *testing.T) {
	tp := loadTemplate(t)
	const cert = "arn:aws:acm:us-east-1:000000000000:certificate/abc"
	for _, c := range []struct {
		aliases, cert string
		ok            bool
	}{
		{"", "", true},
		{"tiles.example.org", cert, true},
		{"tiles.example.org,a.tiles.example.org", cert, true},
		{"tiles.example.org", "", false},
		{"", cert, false},
		{"tiles.example.org,,a.tiles.example.org", cert, false},
		{"tiles.example.org,", cert, false},
	} {
		w := cdnWorld(tp, map[string]string{"EnableCdn": "true", "CdnAliases": c.aliases, "CdnCertificateArn": c.cert})
		fails, err := w.ruleFailures()
		if err != nil {
			t.Fatal(err)
		}
		if (len(fails) == 0) != c.ok {
			t.Errorf("CdnAliases %q, CdnCertificateArn %q: the Rules refuse %v; want refused %v", c.aliases, c.cert, fails, !c.ok)
		}
	}
	// The parameters' own checks.
	for name, want := range map[string]string{"CdnAliases": "CommaDelimitedList", "CdnCorsOrigins": "CommaDelimitedList", "CdnNotFoundTtl": "Number", "CdnAccessLogs": "String"} {
		if typ := get(tp.root, "Parameters", name, "Type"); typ == nil || typ.Value != want {
			t.Errorf("parameter %s: want Type %s", name, want)
		}
	}
	if n := get(tp.root, "Parameters", "CdnNotFoundTtl", "MinValue"); n == nil || n.Value != "0" {
		t.Errorf("CdnNotFoundTtl: want MinValue 0")
	}
}

// TestTemplateInvalidationPermissions: the roles of the functions that
// change tiles may invalidate the distribution, and only with the CDN.
func TestTemplateInvalidationPermissions(t *testing.T) {
	tp := loadTemplate(t)
	for _, cdn := range []string{"true", "false"} {
		w := cdnWorld(tp, map[string]string{"EnableCdn": cdn})
		for _, fn := range []string{"ApiFunction", "WorkerFunction", "CleanerFunction"} {
			role, _ := refTarget(tp.fnProp(fn, "Role"))
			pols, err := w.eval(get(tp.resource(role), "Properties", "Policies"))
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, p := range pols.([]any) {
				for _, st := range p.(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
					st := st.(map[string]any)
					if slices.Contains(strs(st["Action"]), "cloudfront:CreateInvalidation") {
						if st["Effect"] != "Allow" || len(strs(st["Action"])) != 1 {
							t.Errorf("%s: invalidation statement %v: want an Allow of cloudfront:CreateInvalidation alone", role, st)
						}
						found = append(found, strs(st["Resource"])...)
					}
				}
			}
			want := []string{"arn:aws:cloudfront::000000000000:distribution/E2EXAMPLE"}
			if cdn == "false" {
				want = nil
			}
			if !slices.Equal(found, want) {
				t.Errorf("EnableCdn %s: %s may invalidate %v, want %v", cdn, role, found, want)
			}
		}
	}
}

// TestCDNServesArchivesAsTheyAre: the tile archives' paths (archives/*,
// tilestore.ArchivesDir) come from the bucket alone, uncompressed (a map
// client reads them in byte ranges), with the tiles' cache, origin
// request and CORS policies; the CORS answers expose Content-Range and
// Accept-Ranges, which the pmtiles library reads.
func TestCDNServesArchivesAsTheyAre(t *testing.T) {
	tp := loadTemplate(t)
	w := cdnWorld(tp, map[string]string{"EnableCdn": "true"})
	dist, _ := resource(t, w, "TileDistribution")
	dc := dist["DistributionConfig"].(map[string]any)
	bs, _ := dc["CacheBehaviors"].([]any)
	var b any
	for _, c := range bs {
		if m(c, "PathPattern") == tilestore.ArchivesDir+"/*" {
			b = c
		}
	}
	if b == nil {
		t.Fatalf("no cache behaviour for %s/*: %v", tilestore.ArchivesDir, bs)
	}
	def := dc["DefaultCacheBehavior"]
	if m(b, "TargetOriginId") != "tiles" || m(b, "Compress") != "false" {
		t.Errorf("archives behaviour: origin %v, compress %v; want the bucket alone (tiles), uncompressed", m(b, "TargetOriginId"), m(b, "Compress"))
	}
	for _, k := range []string{"CachePolicyId", "OriginRequestPolicyId", "ResponseHeadersPolicyId", "ViewerProtocolPolicy"} {
		if fmt.Sprint(m(b, k)) != fmt.Sprint(m(def, k)) {
			t.Errorf("archives behaviour %s: %v, the tiles' is %v", k, m(b, k), m(def, k))
		}
	}
	rhp, _ := resource(t, w, "TileResponseHeadersPolicy")
	exposed := strs(m(rhp, "ResponseHeadersPolicyConfig", "CorsConfig", "AccessControlExposeHeaders", "Items"))
	bucket, _ := resource(t, w, "TileBucket")
	rules, _ := m(bucket, "CorsConfiguration", "CorsRules").([]any)
	for _, h := range []string{"Content-Range", "Accept-Ranges"} {
		if !slices.Contains(exposed, h) {
			t.Errorf("CORS exposed headers %v lack %s", exposed, h)
		}
		if len(rules) != 1 || !slices.Contains(strs(m(rules[0], "ExposedHeaders")), h) {
			t.Errorf("the bucket's CORS rule does not expose %s", h)
		}
	}
}
