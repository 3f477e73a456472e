package config_test

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"tilecache/internal/config"
)

// TestPartDefaults: each part read from an empty environment has the
// documented defaults.
func TestPartDefaults(t *testing.T) {
	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
	s, err := config.Read[config.Server](lookup(nil))
	check("server", s, config.Server{Addr: "127.0.0.1:8080", LogLevel: "info", PublicURL: "http://127.0.0.1:8080"}, err)
	lg, err := config.Read[config.Log](lookup(nil))
	check("log", lg, config.Log{LogLevel: "info"}, err)
	a, err := config.Read[config.Auth](lookup(nil))
	check("auth", a, config.Auth{UsersFile: ".data/users"}, err)
	st, err := config.Read[config.Storage](lookup(nil))
	check("storage", st, config.Storage{Backend: "embedded", DataDir: ".data", Table: "tilecache", AuditRetention: 90 * 24 * time.Hour}, err)
	l, err := config.Read[config.Layers](lookup(nil))
	check("layers", l, config.Layers{LayersRefresh: 5 * time.Second}, err)
	ln, err := config.Read[config.Lanes](lookup(nil))
	check("lanes", ln, config.Lanes{SeedThreads: 16, Workers: 16, Checkpoint: 8 * time.Second, KillCheck: time.Second,
		Slice: 5 * time.Minute, StaleAfter: 2 * time.Minute, Visibility: time.Minute, TruncatePage: 1000}, err)
	m, err := config.Read[config.Miss](lookup(nil))
	check("miss", m, config.Miss{ClaimTTL: time.Minute, MissWait: 3 * time.Second, MissQueue: 64, MissTimeout: 20 * time.Second,
		MissRemember: 5 * time.Minute, MissFailureBackoff: 15 * time.Second}, err)
	u, err := config.Read[config.Upstream](lookup(nil))
	check("upstream", u, config.Upstream{DecodeMemory: 512 << 20}, err)
	cdn, err := config.Read[config.CDN](lookup(nil))
	check("cdn", cdn, config.CDN{CDNPurgeEvery: 30 * time.Second}, err)
	e, err := config.Read[config.Edge](lookup(nil))
	check("edge", e, config.Edge{}, err)
	al, err := config.Read[config.AccessLogs](lookup(nil))
	check("access logs", al, config.AccessLogs{AccessLogFormat: "cloudfront", AccessLogPathPrefix: "/"}, err)
	cs, err := config.Read[config.CrossSite](lookup(nil))
	check("cross site", cs, config.CrossSite{}, err)
	aws, err := config.Read[config.AWS](lookup(nil))
	if err != nil || aws.AWSMaxAttempts != 10 || aws.AWSRetryBudget != 20*time.Second {
		t.Errorf("aws: got %d attempts, budget %v, err %v; want 10, 20s", aws.AWSMaxAttempts, aws.AWSRetryBudget, err)
	}
}

// TestPartsSet: each part takes its variables, trimmed of space.
func TestPartsSet(t *testing.T) {
	s, err := config.Read[config.Server](lookup(map[string]string{"TILECACHE_ADDR": " :9000 ", "TILECACHE_BASE_PATH": "/gwc/",
		"TILECACHE_LOG_LEVEL": "DEBUG", "TILECACHE_METRICS_ADDR": "127.0.0.1:9090"}))
	if want := (config.Server{Addr: ":9000", BasePath: "/gwc", LogLevel: "debug", PublicURL: "http://:9000/gwc", MetricsAddr: "127.0.0.1:9090"}); err != nil || s != want {
		t.Errorf("server: got %+v, %v; want %+v", s, err, want)
	}
	if lg, err := config.Read[config.Log](lookup(map[string]string{"TILECACHE_LOG_LEVEL": "Warn"})); err != nil || lg.LogLevel != "warn" {
		t.Errorf("log: got %+v, %v; want warn", lg, err)
	}
	if _, err := config.Read[config.Log](lookup(map[string]string{"TILECACHE_LOG_LEVEL": "loud"})); err == nil || !strings.Contains(err.Error(), "TILECACHE_LOG_LEVEL") {
		t.Errorf("log: a level that is none got %v, want an error naming TILECACHE_LOG_LEVEL", err)
	}
	a, err := config.Read[config.Auth](lookup(map[string]string{"TILECACHE_DATA": "/var/tc", "TILECACHE_ACCOUNTS": "a:h"}))
	if want := (config.Auth{UsersFile: "/var/tc/users", Accounts: "a:h"}); err != nil || a != want {
		t.Errorf("auth: got %+v, %v; want %+v", a, err, want)
	}
	st, err := config.Read[config.Storage](lookup(map[string]string{"TILECACHE_BACKEND": "aws", "TILECACHE_KEY_PREFIX": "/cache/",
		"TILECACHE_S3_BUCKET": "b", "TILECACHE_DYNAMODB_TABLE": "t"}))
	if want := (config.Storage{Backend: "aws", DataDir: ".data", KeyPrefix: "cache", Bucket: "b", Table: "t", AuditRetention: 90 * 24 * time.Hour}); err != nil || st != want {
		t.Errorf("storage: got %+v, %v; want %+v", st, err, want)
	}
	// The lane queue is the engine's: required on AWS, read apart from the
	// storage the tile origin and the log ingest read.
	if q, err := config.Read[config.Queue](lookup(map[string]string{"TILECACHE_BACKEND": "aws", "TILECACHE_SQS_QUEUE_URL": "http://q/1/q"})); err != nil || q.QueueURL != "http://q/1/q" {
		t.Errorf("queue: got %+v, %v", q, err)
	}
	if _, err := config.Read[config.Queue](lookup(map[string]string{"TILECACHE_BACKEND": "aws"})); err == nil || !strings.Contains(err.Error(), "TILECACHE_SQS_QUEUE_URL is required") {
		t.Errorf("queue on AWS without a URL: %v, want an error naming TILECACHE_SQS_QUEUE_URL", err)
	}
	ln, err := config.Read[config.Lanes](lookup(map[string]string{"TILECACHE_SEED_THREADS": "4", "TILECACHE_WORKERS": "0", "TILECACHE_LANE_VISIBILITY": "2s"}))
	if err != nil || ln.SeedThreads != 4 || ln.Workers != 0 || ln.Visibility != 2*time.Second {
		t.Errorf("lanes: got %+v, %v; want 4 threads, 0 workers, visibility 2s", ln, err)
	}
	m, err := config.Read[config.Miss](lookup(map[string]string{"TILECACHE_CLAIM_TTL": "3s", "TILECACHE_MISS_QUEUE": "100000"}))
	if err != nil || m.ClaimTTL != 3*time.Second || m.MissQueue != 100000 {
		t.Errorf("miss: got %+v, %v; want claim 3s, queue 100000", m, err)
	}
	u, err := config.Read[config.Upstream](lookup(map[string]string{"TILECACHE_DECODE_MEMORY": "0", "TILECACHE_UPSTREAM_ALLOW": "10.0.0.1/8"}))
	if err != nil || u.DecodeMemory != 0 || fmt.Sprint(u.UpstreamAllow) != fmt.Sprint([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}) {
		t.Errorf("upstream: got %+v, %v; want no bound, [10.0.0.0/8]", u, err)
	}
	cdn, err := config.Read[config.CDN](lookup(map[string]string{"TILECACHE_CDN_DISTRIBUTION_ID": "E1", "TILECACHE_CDN_PURGE_INTERVAL": "5s"}))
	if want := (config.CDN{CDNDistribution: "E1", CDNPurgeEvery: 5 * time.Second}); err != nil || cdn != want {
		t.Errorf("cdn: got %+v, %v; want %+v", cdn, err, want)
	}
	e, err := config.Read[config.Edge](lookup(map[string]string{"TILECACHE_EDGE_KVS_ARN": "arn:kvs"}))
	if want := (config.Edge{EdgeGridSets: "arn:kvs"}); err != nil || e != want {
		t.Errorf("edge: got %+v, %v; want %+v", e, err, want)
	}
	keys := "k2:" + strings.Repeat("s", 32) + ",k1:" + strings.Repeat("t", 32)
	if e, err := config.Read[config.Edge](lookup(map[string]string{"TILECACHE_TILE_TOKEN_KEYS": keys})); err != nil || e.TileTokenKeys != keys {
		t.Errorf("tile token keys: got %q, %v", e.TileTokenKeys, err)
	}
	for _, bad := range []string{"k2", "k2:short", "k:" + strings.Repeat("s", 32) + ",k:" + strings.Repeat("s", 32)} {
		if _, err := config.Read[config.Edge](lookup(map[string]string{"TILECACHE_TILE_TOKEN_KEYS": bad})); err == nil || !strings.Contains(err.Error(), "TILECACHE_TILE_TOKEN_KEYS") {
			t.Errorf("tile token keys %q: got %v, want an error naming the variable", bad, err)
		}
	}
	al, err := config.Read[config.AccessLogs](lookup(map[string]string{"TILECACHE_ACCESS_LOG_FORMAT": "s3",
		"TILECACHE_ACCESS_LOG_PATH_PREFIX": "/tiles/", "TILECACHE_ACCESS_LOG_ORIGIN_PATH": "/o"}))
	if want := (config.AccessLogs{AccessLogFormat: "s3", AccessLogPathPrefix: "/tiles/", AccessLogOriginPath: "/o"}); err != nil || al != want {
		t.Errorf("access logs: got %+v, %v; want %+v", al, err, want)
	}
}

// TestPartProblems: every invalid value is reported by its part, with the
// message Load gives, naming the variable and the value.
func TestPartProblems(t *testing.T) {
	tests := []struct {
		part string
		env  map[string]string
		want string
	}{
		{"server", map[string]string{"TILECACHE_PUBLIC_URL": "ftp://x.org"}, `TILECACHE_PUBLIC_URL must be an http(s) URL without query, such as https://tiles.example.org, got "ftp://x.org"`},
		{"server", map[string]string{"TILECACHE_PUBLIC_URL": "https://x.org/#top"}, `TILECACHE_PUBLIC_URL must be an http(s) URL`},
		{"server", map[string]string{"TILECACHE_CONSOLE_BASE_MAP": "tiles.example.org/{z}/{x}/{y}.png"}, `TILECACHE_CONSOLE_BASE_MAP must be an http(s) URL template with {z}, {x} and {y}`},
		{"server", map[string]string{"TILECACHE_CONSOLE_BASE_MAP": "https://tiles.example.org/base.png"}, `TILECACHE_CONSOLE_BASE_MAP must be an http(s) URL template`},
		{"server", map[string]string{"TILECACHE_BASE_PATH": "gwc"}, `TILECACHE_BASE_PATH must start with /, got "gwc"`},
		{"server", map[string]string{"TILECACHE_LOG_LEVEL": "loud"}, `TILECACHE_LOG_LEVEL must be debug, info, warn or error, got "loud"`},
		{"storage", map[string]string{"TILECACHE_BACKEND": "cloud"}, `TILECACHE_BACKEND must be embedded or aws, got "cloud"`},
		{"storage", map[string]string{"TILECACHE_BACKEND": "aws", "TILECACHE_SQS_QUEUE_URL": "http://q"}, `TILECACHE_S3_BUCKET is required with TILECACHE_BACKEND=aws`},
		{"queue", map[string]string{"TILECACHE_BACKEND": "aws", "TILECACHE_S3_BUCKET": "b"}, `TILECACHE_SQS_QUEUE_URL is required with TILECACHE_BACKEND=aws`},
		{"layers", map[string]string{"TILECACHE_LAYERS_REFRESH": "0s"}, `TILECACHE_LAYERS_REFRESH must be a positive duration such as 1s or 250ms, got "0s"`},
		{"lanes", map[string]string{"TILECACHE_SEED_THREADS": "1025"}, `TILECACHE_SEED_THREADS must be an integer from 1 to 1024, got "1025"`},
		{"lanes", map[string]string{"TILECACHE_SEED_THREADS": "zero"}, `TILECACHE_SEED_THREADS must be an integer from 1 to 1024, got "zero"`},
		{"lanes", map[string]string{"TILECACHE_WORKERS": "-1"}, `TILECACHE_WORKERS must be an integer from 0 to 1024, got "-1"`},
		{"lanes", map[string]string{"TILECACHE_CHECKPOINT_INTERVAL": "-1s"}, `TILECACHE_CHECKPOINT_INTERVAL must be a positive duration such as 1s or 250ms, got "-1s"`},
		{"lanes", map[string]string{"TILECACHE_KILL_CHECK_INTERVAL": "1"}, `TILECACHE_KILL_CHECK_INTERVAL must be a positive duration`},
		{"lanes", map[string]string{"TILECACHE_LANE_SLICE": "soon"}, `TILECACHE_LANE_SLICE must be a positive duration`},
		{"lanes", map[string]string{"TILECACHE_STALE_AFTER": "0"}, `TILECACHE_STALE_AFTER must be a positive duration`},
		{"lanes", map[string]string{"TILECACHE_LANE_VISIBILITY": "-5s"}, `TILECACHE_LANE_VISIBILITY must be a positive duration`},
		{"lanes", map[string]string{"TILECACHE_TRUNCATE_PAGE": "1001"}, `TILECACHE_TRUNCATE_PAGE must be an integer from 1 to 1000, got "1001"`},
		{"miss", map[string]string{"TILECACHE_CLAIM_TTL": "2s"}, `TILECACHE_CLAIM_TTL must be at least 3s (a render stops 2s before it), got 2s`},
		{"miss", map[string]string{"TILECACHE_CLAIM_TTL": "x"}, `TILECACHE_CLAIM_TTL must be a positive duration`},
		{"miss", map[string]string{"TILECACHE_MISS_WAIT": "0s"}, `TILECACHE_MISS_WAIT must be a positive duration`},
		{"miss", map[string]string{"TILECACHE_MISS_TIMEOUT": "0s"}, `TILECACHE_MISS_TIMEOUT must be a positive duration`},
		{"miss", map[string]string{"TILECACHE_MISS_REMEMBER": "0s"}, `TILECACHE_MISS_REMEMBER must be a positive duration`},
		{"miss", map[string]string{"TILECACHE_MISS_FAILURE_BACKOFF": "0s"}, `TILECACHE_MISS_FAILURE_BACKOFF must be a positive duration`},
		{"miss", map[string]string{"TILECACHE_MISS_QUEUE": "0"}, `TILECACHE_MISS_QUEUE must be an integer from 1 to 100000, got "0"`},
		{"miss", map[string]string{"TILECACHE_MISS_QUEUE": "100001"}, `TILECACHE_MISS_QUEUE must be an integer from 1 to 100000, got "100001"`},
		{"upstream", map[string]string{"TILECACHE_DECODE_MEMORY": "-3"}, `TILECACHE_DECODE_MEMORY must be a number of MiB from 0 (no bound) to 1048576, got "-3"`},
		{"upstream", map[string]string{"TILECACHE_DECODE_MEMORY": "1048577"}, `TILECACHE_DECODE_MEMORY must be a number of MiB from 0 (no bound) to 1048576, got "1048577"`},
		{"upstream", map[string]string{"TILECACHE_UPSTREAM_ALLOW": "localhost"}, `TILECACHE_UPSTREAM_ALLOW must list CIDR prefixes separated by commas, such as 127.0.0.0/8,::1/128; "localhost" is not one`},
		{"aws", map[string]string{"TILECACHE_AWS_MAX_ATTEMPTS": "0"}, `TILECACHE_AWS_MAX_ATTEMPTS must be an integer from 1 (no retries) to 100, got "0"`},
		{"aws", map[string]string{"TILECACHE_AWS_RETRY_BUDGET": "20"}, `TILECACHE_AWS_RETRY_BUDGET must be a positive duration such as 1s or 250ms, got "20"`},
		{"aws", map[string]string{"TILECACHE_AWS_RETRY_BUDGET": "6m"}, `TILECACHE_AWS_RETRY_BUDGET must be at most 5m, got 6m0s`},
		{"cross site", map[string]string{"TILECACHE_ALLOWED_ORIGINS": "https://a.org,admin.example.org"}, `TILECACHE_ALLOWED_ORIGINS must list origins separated by commas, such as https://admin.example.org,http://localhost:3000; "admin.example.org" is not one`},
		{"cross site", map[string]string{"TILECACHE_ALLOWED_ORIGINS": "https://a.org/console"}, `"https://a.org/console" is not one`},
		{"cross site", map[string]string{"TILECACHE_ALLOWED_ORIGINS": "ftp://a.org"}, `"ftp://a.org" is not one`},
		{"cross site", map[string]string{"TILECACHE_ALLOWED_ORIGINS": "https://a.org?x=1"}, `"https://a.org?x=1" is not one`},
		{"access logs", map[string]string{"TILECACHE_ACCESS_LOG_FORMAT": "w3c"}, `TILECACHE_ACCESS_LOG_FORMAT must be cloudfront, s3 or combined, got "w3c"`},
	}
	parts := map[string]func(config.Lookup) error{
		"server":      func(l config.Lookup) error { _, err := config.Read[config.Server](l); return err },
		"storage":     func(l config.Lookup) error { _, err := config.Read[config.Storage](l); return err },
		"queue":       func(l config.Lookup) error { _, err := config.Read[config.Queue](l); return err },
		"layers":      func(l config.Lookup) error { _, err := config.Read[config.Layers](l); return err },
		"lanes":       func(l config.Lookup) error { _, err := config.Read[config.Lanes](l); return err },
		"miss":        func(l config.Lookup) error { _, err := config.Read[config.Miss](l); return err },
		"upstream":    func(l config.Lookup) error { _, err := config.Read[config.Upstream](l); return err },
		"aws":         func(l config.Lookup) error { _, err := config.Read[config.AWS](l); return err },
		"access logs": func(l config.Lookup) error { _, err := config.Read[config.AccessLogs](l); return err },
		"cross site":  func(l config.Lookup) error { _, err := config.Read[config.CrossSite](l); return err },
	}
	for _, tt := range tests {
		t.Run(tt.part+" "+fmt.Sprint(tt.env), func(t *testing.T) {
			read, ok := parts[tt.part]
			if !ok {
				t.Fatalf("no part %q", tt.part)
			}
			err := read(lookup(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "configuration: ") {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			// Load reports the same problem.
			if _, lerr := config.Load(lookup(tt.env)); lerr == nil || !strings.Contains(lerr.Error(), tt.want) {
				t.Errorf("Load: got %v, want an error with %q", lerr, tt.want)
			}
		})
	}
}

// TestAWSEnv: the SDK's variables are read with the rest and kept as they
// were, neither printed with the configuration nor read for other names.
func TestAWSEnv(t *testing.T) {
	env := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
		"AWS_SECRET_ACCESS_KEY": "s3cret", "AWS_PROFILE": "p"}
	c, err := config.Load(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	env["AWS_REGION"] = "us-west-2" // later changes are not seen
	if v, ok := c.AWS.Env("AWS_REGION"); !ok || v != "eu-west-1" {
		t.Errorf("AWS_REGION: got %q, %v; want eu-west-1 as at Load", v, ok)
	}
	if v, ok := c.AWS.Env("AWS_ENDPOINT_URL_S3"); !ok || v != "http://127.0.0.1:9000" {
		t.Errorf("AWS_ENDPOINT_URL_S3: got %q, %v", v, ok)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "TILECACHE_ADDR"} {
		if v, ok := c.AWS.Env(k); ok {
			t.Errorf("%s: got %q, want unset", k, v)
		}
	}
	if s := fmt.Sprintf("%+v %#v", c, c); strings.Contains(s, "s3cret") {
		t.Errorf("the configuration prints the secret key: %s", s)
	}
	if v, ok := (config.Config{}).AWS.Env("AWS_REGION"); ok {
		t.Errorf("a Config not read: AWS_REGION %q, want unset", v)
	}
}

// TestAllowedOrigins: the allowed origins are kept as browsers write an
// Origin header: lower case, without the scheme's default port or a
// trailing slash.
func TestAllowedOrigins(t *testing.T) {
	cs, err := config.Read[config.CrossSite](lookup(map[string]string{
		"TILECACHE_ALLOWED_ORIGINS": " HTTPS://Admin.Example.org:443/ ,, http://localhost:3000,http://[::1]:80"}))
	if want := []string{"https://admin.example.org", "http://localhost:3000", "http://[::1]"}; err != nil || !reflect.DeepEqual(cs.AllowedOrigins, want) {
		t.Errorf("got %q, %v; want %q", cs.AllowedOrigins, err, want)
	}
}
