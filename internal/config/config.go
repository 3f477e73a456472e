// Package config reads tilecache's configuration from the environment.
// Every variable is documented in README.md; Load applies the defaults,
// validates, and reports every problem at once.
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the configuration of `tilecache serve`.
type Config struct {
	Addr       string // TILECACHE_ADDR, listen address
	DataDir    string // TILECACHE_DATA, data directory of the embedded backends
	LayersFile string // TILECACHE_LAYERS, layer file; "" = bundled demo config
	// LayersRefresh is how often, at most, a process reads the stored
	// layer configuration's version (TILECACHE_LAYERS_REFRESH, default
	// 5s): a layer changed through the REST interface is seen everywhere
	// within it.
	LayersRefresh time.Duration
	UsersFile     string        // TILECACHE_USERS, accounts file (name:bcrypt-hash per line)
	Accounts      string        // TILECACHE_ACCOUNTS, the same entries inline (wins over the file)
	SeedThreads   int           // TILECACHE_SEED_THREADS, global pool of seed threads
	Workers       int           // TILECACHE_WORKERS, lane workers in this process (default SeedThreads)
	Backend       string        // TILECACHE_BACKEND: embedded or aws
	KeyPrefix     string        // TILECACHE_KEY_PREFIX, prefix of every tile key
	BasePath      string        // TILECACHE_BASE_PATH, mount prefix in front of /rest
	LogLevel      string        // TILECACHE_LOG_LEVEL: debug, info, warn, error
	Checkpoint    time.Duration // TILECACHE_CHECKPOINT_INTERVAL, longest time between lane checkpoints
	KillCheck     time.Duration // TILECACHE_KILL_CHECK_INTERVAL, how often a working lane looks for a kill
	Slice         time.Duration // TILECACHE_LANE_SLICE, longest time one lane message is worked
	StaleAfter    time.Duration // TILECACHE_STALE_AFTER, heartbeat age after which a lane is re-enqueued
	Visibility    time.Duration // TILECACHE_LANE_VISIBILITY, visibility timeout of a received lane message

	// PublicURL is the base URL the tile store's objects are served from
	// (TILECACHE_PUBLIC_URL): the CDN's domain on AWS; by default the local
	// program's own address. Discovery documents carry it.
	PublicURL string
	// CDNDistribution is the CloudFront distribution in front of the
	// bucket (TILECACHE_CDN_DISTRIBUTION_ID); "" for none: nothing is
	// invalidated.
	CDNDistribution string
	// EdgeGridSets is the ARN of the CloudFront KeyValueStore the edge
	// path function reads the grid sets from (TILECACHE_EDGE_KVS_ARN); ""
	// for none. The cleaner writes it after a cold start.
	EdgeGridSets string
	// UpstreamAllow lists the networks every layer's upstream may be at
	// although they are loopback, link-local, private, unique-local or
	// another class upstream.AddressClass names
	// (TILECACHE_UPSTREAM_ALLOW, CIDR prefixes separated by commas; default
	// none). For development against a map server on the same host
	// (127.0.0.0/8), or an upstream in the deployment's own network: a
	// layer changed through the REST interface may then fetch from it.
	UpstreamAllow []netip.Prefix
	// DecodeMemory bounds the bytes of decoded upstream images in flight
	// in the process (TILECACHE_DECODE_MEMORY, MiB; 0: no bound).
	DecodeMemory int64

	// Render on miss (see seed.Options for each).
	ClaimTTL           time.Duration // TILECACHE_CLAIM_TTL, longest a render's claim lasts (<= the tile function's timeout)
	MissWait           time.Duration // TILECACHE_MISS_WAIT, longest a miss waits for a render slot (then 503)
	MissQueue          int           // TILECACHE_MISS_QUEUE, most misses waiting in the process (beyond: 503 at once)
	MissTimeout        time.Duration // TILECACHE_MISS_TIMEOUT, longest one render on miss
	MissRemember       time.Duration // TILECACHE_MISS_REMEMBER, how long a rendered metatile's blank tiles are remembered
	MissFailureBackoff time.Duration // TILECACHE_MISS_FAILURE_BACKOFF, how long a failed render is answered without asking again

	// MetricsAddr is the listen address of /metrics (TILECACHE_METRICS_ADDR),
	// apart from the tiles; "" (the default) serves it only to an
	// administrator on the main listener.
	MetricsAddr string

	// AWS backend (TILECACHE_BACKEND=aws). Endpoints and credentials follow
	// the SDK's own variables (AWS_ENDPOINT_URL_S3, …_DYNAMODB, …_SQS,
	// AWS_REGION, AWS_ACCESS_KEY_ID, …).
	Bucket   string // TILECACHE_S3_BUCKET, the tile bucket
	Table    string // TILECACHE_DYNAMODB_TABLE, the task table
	QueueURL string // TILECACHE_SQS_QUEUE_URL, the lane queue

	// Retries of every AWS request (S3, DynamoDB, SQS, CloudFront; see
	// awsconf.Retry): at most AWSMaxAttempts attempts per call
	// (TILECACHE_AWS_MAX_ATTEMPTS, the first included), and no retry that
	// could end later than AWSRetryBudget after the call began
	// (TILECACHE_AWS_RETRY_BUDGET).
	AWSMaxAttempts int
	AWSRetryBudget time.Duration

	// Access logs read for the disk quota (the log function, `tilecache
	// quota ingest-logs`): AccessLogFormat is cloudfront, s3 or combined
	// (TILECACHE_ACCESS_LOG_FORMAT, default cloudfront); a URL path's key
	// is AccessLogOriginPath + (the path without AccessLogPathPrefix)
	// (TILECACHE_ACCESS_LOG_PATH_PREFIX, default "/";
	// TILECACHE_ACCESS_LOG_ORIGIN_PATH, default none: CloudFront's origin
	// path, if the distribution has one).
	AccessLogFormat     string
	AccessLogPathPrefix string
	AccessLogOriginPath string
}

// Load reads the configuration through lookup (os.LookupEnv in programs, a
// map in tests).
func Load(lookup func(string) (string, bool)) (Config, error) {
	get := func(name, def string) string {
		if v, ok := lookup(name); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
		return def
	}
	var errs []error
	c := Config{
		Addr:       get("TILECACHE_ADDR", "127.0.0.1:8080"),
		DataDir:    get("TILECACHE_DATA", ".data"),
		LayersFile: get("TILECACHE_LAYERS", ""),
		Backend:    get("TILECACHE_BACKEND", "embedded"),
		KeyPrefix:  strings.Trim(get("TILECACHE_KEY_PREFIX", ""), "/"),
		BasePath:   strings.TrimRight(get("TILECACHE_BASE_PATH", ""), "/"),
		LogLevel:   strings.ToLower(get("TILECACHE_LOG_LEVEL", "info")),
	}
	c.UsersFile = get("TILECACHE_USERS", filepath.Join(c.DataDir, "users"))
	c.Accounts = get("TILECACHE_ACCOUNTS", "")
	n, err := strconv.Atoi(get("TILECACHE_SEED_THREADS", "16"))
	if err != nil || n < 1 || n > 1024 {
		errs = append(errs, fmt.Errorf("TILECACHE_SEED_THREADS must be an integer from 1 to 1024, got %q", get("TILECACHE_SEED_THREADS", "")))
	}
	c.SeedThreads = n
	c.Workers = n
	if v := get("TILECACHE_WORKERS", ""); v != "" {
		w, err := strconv.Atoi(v)
		if err != nil || w < 0 || w > 1024 {
			errs = append(errs, fmt.Errorf("TILECACHE_WORKERS must be an integer from 0 to 1024, got %q", v))
		}
		c.Workers = w
	}
	dur := func(name, def string) time.Duration {
		d, err := time.ParseDuration(get(name, def))
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be a positive duration such as 1s or 250ms, got %q", name, get(name, def)))
		}
		return d
	}
	c.Checkpoint = dur("TILECACHE_CHECKPOINT_INTERVAL", "8s")
	c.LayersRefresh = dur("TILECACHE_LAYERS_REFRESH", "5s")
	c.KillCheck = dur("TILECACHE_KILL_CHECK_INTERVAL", "1s")
	c.Slice = dur("TILECACHE_LANE_SLICE", "5m")
	c.StaleAfter = dur("TILECACHE_STALE_AFTER", "2m")
	c.Visibility = dur("TILECACHE_LANE_VISIBILITY", "60s")
	c.ClaimTTL = dur("TILECACHE_CLAIM_TTL", "60s")
	c.MissWait = dur("TILECACHE_MISS_WAIT", "3s")
	c.MissTimeout = dur("TILECACHE_MISS_TIMEOUT", "20s")
	c.MissRemember = dur("TILECACHE_MISS_REMEMBER", "5m")
	c.MissFailureBackoff = dur("TILECACHE_MISS_FAILURE_BACKOFF", "15s")
	if q, err := strconv.Atoi(get("TILECACHE_MISS_QUEUE", "64")); err != nil || q < 1 || q > 100000 {
		errs = append(errs, fmt.Errorf("TILECACHE_MISS_QUEUE must be an integer from 1 to 100000, got %q", get("TILECACHE_MISS_QUEUE", "")))
	} else {
		c.MissQueue = q
	}
	if c.ClaimTTL > 0 && c.ClaimTTL < 3*time.Second {
		errs = append(errs, fmt.Errorf("TILECACHE_CLAIM_TTL must be at least 3s (a render stops 2s before it), got %s", c.ClaimTTL))
	}
	c.MetricsAddr = get("TILECACHE_METRICS_ADDR", "")
	c.Bucket = get("TILECACHE_S3_BUCKET", "")
	c.Table = get("TILECACHE_DYNAMODB_TABLE", "tilecache")
	c.QueueURL = get("TILECACHE_SQS_QUEUE_URL", "")
	c.CDNDistribution = get("TILECACHE_CDN_DISTRIBUTION_ID", "")
	c.EdgeGridSets = get("TILECACHE_EDGE_KVS_ARN", "")
	if n, err := strconv.Atoi(get("TILECACHE_AWS_MAX_ATTEMPTS", "10")); err != nil || n < 1 || n > 100 {
		errs = append(errs, fmt.Errorf("TILECACHE_AWS_MAX_ATTEMPTS must be an integer from 1 (no retries) to 100, got %q", get("TILECACHE_AWS_MAX_ATTEMPTS", "")))
	} else {
		c.AWSMaxAttempts = n
	}
	// At most 5 minutes: a request sent again carries its first signature,
	// which S3 refuses after 15.
	if c.AWSRetryBudget = dur("TILECACHE_AWS_RETRY_BUDGET", "20s"); c.AWSRetryBudget > 5*time.Minute {
		errs = append(errs, fmt.Errorf("TILECACHE_AWS_RETRY_BUDGET must be at most 5m, got %s", c.AWSRetryBudget))
	}
	c.AccessLogFormat = get("TILECACHE_ACCESS_LOG_FORMAT", "cloudfront")
	if f := c.AccessLogFormat; f != "cloudfront" && f != "s3" && f != "combined" {
		errs = append(errs, fmt.Errorf("TILECACHE_ACCESS_LOG_FORMAT must be cloudfront, s3 or combined, got %q", f))
	}
	c.AccessLogPathPrefix = get("TILECACHE_ACCESS_LOG_PATH_PREFIX", "/")
	c.AccessLogOriginPath = get("TILECACHE_ACCESS_LOG_ORIGIN_PATH", "")
	if mib, err := strconv.ParseInt(get("TILECACHE_DECODE_MEMORY", "512"), 10, 64); err != nil || mib < 0 || mib > 1<<20 {
		errs = append(errs, fmt.Errorf("TILECACHE_DECODE_MEMORY must be a number of MiB from 0 (no bound) to 1048576, got %q", get("TILECACHE_DECODE_MEMORY", "")))
	} else {
		c.DecodeMemory = mib << 20
	}
	for _, f := range strings.Split(get("TILECACHE_UPSTREAM_ALLOW", ""), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("TILECACHE_UPSTREAM_ALLOW must list CIDR prefixes separated by commas, such as 127.0.0.0/8,::1/128; %q is not one", f))
			continue
		}
		c.UpstreamAllow = append(c.UpstreamAllow, p.Masked())
	}
	// Set but empty (a deployment without a CDN): documents carry
	// root-relative URLs.
	c.PublicURL = "http://" + c.Addr + c.BasePath
	if v, ok := lookup("TILECACHE_PUBLIC_URL"); ok {
		c.PublicURL = strings.TrimRight(strings.TrimSpace(v), "/")
	}
	if u, err := url.Parse(c.PublicURL); c.PublicURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "") {
		errs = append(errs, fmt.Errorf("TILECACHE_PUBLIC_URL must be an http(s) URL without query, such as https://tiles.example.org, got %q", c.PublicURL))
	}
	switch c.Backend {
	case "embedded":
	case "aws":
		if c.Bucket == "" {
			errs = append(errs, errors.New("TILECACHE_S3_BUCKET is required with TILECACHE_BACKEND=aws"))
		}
		if c.QueueURL == "" {
			errs = append(errs, errors.New("TILECACHE_SQS_QUEUE_URL is required with TILECACHE_BACKEND=aws"))
		}
	default:
		errs = append(errs, fmt.Errorf("TILECACHE_BACKEND must be embedded or aws, got %q", c.Backend))
	}
	if c.BasePath != "" && !strings.HasPrefix(c.BasePath, "/") {
		errs = append(errs, fmt.Errorf("TILECACHE_BASE_PATH must start with /, got %q", c.BasePath))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("TILECACHE_LOG_LEVEL must be debug, info, warn or error, got %q", c.LogLevel))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}
