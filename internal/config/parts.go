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

	"tilecache/internal/tiletoken"
)

// defaultDataDir is TILECACHE_DATA's default, which the accounts file's
// default is in too.
const defaultDataDir = ".data"

// Server is the HTTP side of the process.
type Server struct {
	Addr     string // TILECACHE_ADDR, listen address
	BasePath string // TILECACHE_BASE_PATH, mount prefix in front of /rest
	LogLevel string // TILECACHE_LOG_LEVEL: debug, info, warn, error
	// PublicURL is the base URL the tile store's objects are served from
	// (TILECACHE_PUBLIC_URL): the CDN's domain on AWS; by default the local
	// program's own address. Discovery documents carry it.
	PublicURL string
	// MetricsAddr is the listen address of /metrics (TILECACHE_METRICS_ADDR),
	// apart from the tiles; "" (the default) serves it only to an
	// administrator on the main listener.
	MetricsAddr string
	// ConsoleBaseMap is an operator's base map for the console's maps
	// (TILECACHE_CONSOLE_BASE_MAP): an XYZ URL template of spherical
	// Mercator tiles, https://host/{z}/{x}/{y}.png; "" (the default) for
	// none, and then no request of the console leaves the service.
	ConsoleBaseMap string
}

func (s *Server) read(r *reader) {
	s.Addr = r.str("TILECACHE_ADDR", "127.0.0.1:8080")
	s.BasePath = strings.TrimRight(r.str("TILECACHE_BASE_PATH", ""), "/")
	s.LogLevel = readLogLevel(r)
	s.MetricsAddr = r.str("TILECACHE_METRICS_ADDR", "")
	// Set but empty (a deployment without a CDN): documents carry
	// root-relative URLs.
	s.PublicURL = "http://" + s.Addr + s.BasePath
	if v, ok := r.lookup("TILECACHE_PUBLIC_URL"); ok {
		s.PublicURL = strings.TrimRight(strings.TrimSpace(v), "/")
	}
	if u, err := url.Parse(s.PublicURL); s.PublicURL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "") {
		r.fail(fmt.Errorf("TILECACHE_PUBLIC_URL must be an http(s) URL without query, such as https://tiles.example.org, got %q", s.PublicURL))
	}
	s.ConsoleBaseMap = strings.TrimSpace(r.str("TILECACHE_CONSOLE_BASE_MAP", ""))
	if b := s.ConsoleBaseMap; b != "" {
		u, err := url.Parse(strings.NewReplacer("{z}", "0", "{x}", "0", "{y}", "0", "{-y}", "0").Replace(b))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !strings.Contains(b, "{z}") || !strings.Contains(b, "{x}") || !(strings.Contains(b, "{y}") || strings.Contains(b, "{-y}")) {
			r.fail(fmt.Errorf("TILECACHE_CONSOLE_BASE_MAP must be an http(s) URL template with {z}, {x} and {y}, such as https://tiles.example.org/{z}/{x}/{y}.png, got %q", b))
		}
	}
	if s.BasePath != "" && !strings.HasPrefix(s.BasePath, "/") {
		r.fail(fmt.Errorf("TILECACHE_BASE_PATH must start with /, got %q", s.BasePath))
	}
}

// Log is how a process logs: the one part every function reads besides
// its own (Server holds the same variable for `tilecache serve`).
type Log struct {
	LogLevel string // TILECACHE_LOG_LEVEL: debug, info, warn, error
}

func (l *Log) read(r *reader) { l.LogLevel = readLogLevel(r) }

// readLogLevel reads TILECACHE_LOG_LEVEL.
func readLogLevel(r *reader) string {
	level := strings.ToLower(r.str("TILECACHE_LOG_LEVEL", "info"))
	switch level {
	case "debug", "info", "warn", "error":
	default:
		r.fail(fmt.Errorf("TILECACHE_LOG_LEVEL must be debug, info, warn or error, got %q", level))
	}
	return level
}

// Auth is where the administrators' accounts come from.
type Auth struct {
	UsersFile string // TILECACHE_USERS, accounts file (name:bcrypt-hash per line); default in TILECACHE_DATA
	Accounts  string // TILECACHE_ACCOUNTS, the same entries inline (wins over the file)
	// AccountsSecret is TILECACHE_ACCOUNTS_SECRET, the ARN of an SSM
	// parameter or Secrets Manager secret holding the same entries, read
	// at start (wins over the file; not with TILECACHE_ACCOUNTS).
	AccountsSecret string
}

func (a *Auth) read(r *reader) {
	a.UsersFile = r.str("TILECACHE_USERS", filepath.Join(r.str("TILECACHE_DATA", defaultDataDir), "users"))
	a.Accounts = r.str("TILECACHE_ACCOUNTS", "")
	a.AccountsSecret = strings.TrimSpace(r.str("TILECACHE_ACCOUNTS_SECRET", ""))
	if a.AccountsSecret != "" && a.Accounts != "" {
		r.fail(errors.New("TILECACHE_ACCOUNTS_SECRET and TILECACHE_ACCOUNTS are both set: set one"))
	}
}

// Storage is where tiles, tasks and lane messages are kept: the embedded
// backends in a directory, or S3, DynamoDB and SQS.
type Storage struct {
	Backend   string // TILECACHE_BACKEND: embedded or aws
	DataDir   string // TILECACHE_DATA, data directory of the embedded backends
	KeyPrefix string // TILECACHE_KEY_PREFIX, prefix of every tile key

	// AWS backend (TILECACHE_BACKEND=aws). Endpoints and credentials follow
	// the SDK's own variables (see AWS).
	Bucket string // TILECACHE_S3_BUCKET, the tile bucket
	Table  string // TILECACHE_DYNAMODB_TABLE, the task table

	// AuditRetention is how long the audit trail keeps its records in the
	// task store (TILECACHE_AUDIT_RETENTION: days such as 90d, or a
	// duration such as 36h; default 90d).
	AuditRetention time.Duration
}

func (s *Storage) read(r *reader) {
	s.Backend = r.str("TILECACHE_BACKEND", "embedded")
	s.DataDir = r.str("TILECACHE_DATA", defaultDataDir)
	s.KeyPrefix = strings.Trim(r.str("TILECACHE_KEY_PREFIX", ""), "/")
	s.Bucket = r.str("TILECACHE_S3_BUCKET", "")
	s.Table = r.str("TILECACHE_DYNAMODB_TABLE", "tilecache")
	s.AuditRetention = r.days("TILECACHE_AUDIT_RETENTION", "90d")
	switch s.Backend {
	case "embedded":
	case "aws":
		if s.Bucket == "" {
			r.fail(errors.New("TILECACHE_S3_BUCKET is required with TILECACHE_BACKEND=aws"))
		}
	default:
		r.fail(fmt.Errorf("TILECACHE_BACKEND must be embedded or aws, got %q", s.Backend))
	}
}

// Queue is the lane queue: what the engine's assemblies (the API, the
// worker, the cleaner, serve) read beside Storage; the tile origin and the
// log ingest never send a lane.
type Queue struct {
	QueueURL string // TILECACHE_SQS_QUEUE_URL, the lane queue (required with TILECACHE_BACKEND=aws)
}

func (q *Queue) read(r *reader) {
	q.QueueURL = r.str("TILECACHE_SQS_QUEUE_URL", "")
	if r.str("TILECACHE_BACKEND", "embedded") == "aws" && q.QueueURL == "" {
		r.fail(errors.New("TILECACHE_SQS_QUEUE_URL is required with TILECACHE_BACKEND=aws"))
	}
}

// Layers is where the layer configuration comes from.
type Layers struct {
	LayersFile string // TILECACHE_LAYERS, layer file; "" = bundled demo config
	// LayersRefresh is how often, at most, a process reads the stored
	// layer configuration's version (TILECACHE_LAYERS_REFRESH, default
	// 5s): a layer changed through the REST interface is seen everywhere
	// within it.
	LayersRefresh time.Duration
}

func (l *Layers) read(r *reader) {
	l.LayersFile = r.str("TILECACHE_LAYERS", "")
	l.LayersRefresh = r.duration("TILECACHE_LAYERS_REFRESH", "5s")
}

// Lanes is how seed tasks are worked.
type Lanes struct {
	SeedThreads int           // TILECACHE_SEED_THREADS, global pool of seed threads
	Workers     int           // TILECACHE_WORKERS, lane workers in this process (default SeedThreads)
	Checkpoint  time.Duration // TILECACHE_CHECKPOINT_INTERVAL, longest time between lane checkpoints
	KillCheck   time.Duration // TILECACHE_KILL_CHECK_INTERVAL, how often a working lane looks for a kill
	Slice       time.Duration // TILECACHE_LANE_SLICE, longest time one lane message is worked
	StaleAfter  time.Duration // TILECACHE_STALE_AFTER, heartbeat age after which a lane is re-enqueued
	Visibility  time.Duration // TILECACHE_LANE_VISIBILITY, visibility timeout of a received lane message
	// TruncatePage is TILECACHE_TRUNCATE_PAGE, the keys a deleted layer's
	// truncation lists and deletes between checkpoints (1 to 1000).
	TruncatePage int
}

func (l *Lanes) read(r *reader) {
	n, err := strconv.Atoi(r.str("TILECACHE_SEED_THREADS", "16"))
	if err != nil || n < 1 || n > 1024 {
		r.fail(fmt.Errorf("TILECACHE_SEED_THREADS must be an integer from 1 to 1024, got %q", r.str("TILECACHE_SEED_THREADS", "")))
	}
	l.SeedThreads = n
	l.Workers = n
	if v := r.str("TILECACHE_WORKERS", ""); v != "" {
		w, err := strconv.Atoi(v)
		if err != nil || w < 0 || w > 1024 {
			r.fail(fmt.Errorf("TILECACHE_WORKERS must be an integer from 0 to 1024, got %q", v))
		}
		l.Workers = w
	}
	l.Checkpoint = r.duration("TILECACHE_CHECKPOINT_INTERVAL", "8s")
	l.KillCheck = r.duration("TILECACHE_KILL_CHECK_INTERVAL", "1s")
	l.Slice = r.duration("TILECACHE_LANE_SLICE", "5m")
	l.StaleAfter = r.duration("TILECACHE_STALE_AFTER", "2m")
	l.Visibility = r.duration("TILECACHE_LANE_VISIBILITY", "60s")
	if p, err := strconv.Atoi(r.str("TILECACHE_TRUNCATE_PAGE", "1000")); err != nil || p < 1 || p > 1000 {
		r.fail(fmt.Errorf("TILECACHE_TRUNCATE_PAGE must be an integer from 1 to 1000, got %q", r.str("TILECACHE_TRUNCATE_PAGE", "")))
	} else {
		l.TruncatePage = p
	}
}

// Miss is render on miss (see seed.Options for each).
type Miss struct {
	ClaimTTL           time.Duration // TILECACHE_CLAIM_TTL, longest a render's claim lasts (<= the tile function's timeout)
	MissWait           time.Duration // TILECACHE_MISS_WAIT, longest a miss waits for a render slot (then 503)
	MissQueue          int           // TILECACHE_MISS_QUEUE, most misses waiting in the process (beyond: 503 at once)
	MissTimeout        time.Duration // TILECACHE_MISS_TIMEOUT, longest one render on miss
	MissRemember       time.Duration // TILECACHE_MISS_REMEMBER, how long a rendered metatile's blank tiles are remembered
	MissFailureBackoff time.Duration // TILECACHE_MISS_FAILURE_BACKOFF, how long a failed render is answered without asking again
}

func (m *Miss) read(r *reader) {
	m.ClaimTTL = r.duration("TILECACHE_CLAIM_TTL", "60s")
	m.MissWait = r.duration("TILECACHE_MISS_WAIT", "3s")
	m.MissTimeout = r.duration("TILECACHE_MISS_TIMEOUT", "20s")
	m.MissRemember = r.duration("TILECACHE_MISS_REMEMBER", "5m")
	m.MissFailureBackoff = r.duration("TILECACHE_MISS_FAILURE_BACKOFF", "15s")
	if q, err := strconv.Atoi(r.str("TILECACHE_MISS_QUEUE", "64")); err != nil || q < 1 || q > 100000 {
		r.fail(fmt.Errorf("TILECACHE_MISS_QUEUE must be an integer from 1 to 100000, got %q", r.str("TILECACHE_MISS_QUEUE", "")))
	} else {
		m.MissQueue = q
	}
	if m.ClaimTTL > 0 && m.ClaimTTL < 3*time.Second {
		r.fail(fmt.Errorf("TILECACHE_CLAIM_TTL must be at least 3s (a render stops 2s before it), got %s", m.ClaimTTL))
	}
}

// Upstream bounds what every layer's upstream may be and cost.
type Upstream struct {
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
}

func (u *Upstream) read(r *reader) {
	if mib, err := strconv.ParseInt(r.str("TILECACHE_DECODE_MEMORY", "512"), 10, 64); err != nil || mib < 0 || mib > 1<<20 {
		r.fail(fmt.Errorf("TILECACHE_DECODE_MEMORY must be a number of MiB from 0 (no bound) to 1048576, got %q", r.str("TILECACHE_DECODE_MEMORY", "")))
	} else {
		u.DecodeMemory = mib << 20
	}
	for _, f := range strings.Split(r.str("TILECACHE_UPSTREAM_ALLOW", ""), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			r.fail(fmt.Errorf("TILECACHE_UPSTREAM_ALLOW must list CIDR prefixes separated by commas, such as 127.0.0.0/8,::1/128; %q is not one", f))
			continue
		}
		u.UpstreamAllow = append(u.UpstreamAllow, p.Masked())
	}
}

// CDN is the CDN in front of the tile bucket, as the programs that change
// tiles see it: what they invalidate, and how often.
type CDN struct {
	// CDNDistribution is the CloudFront distribution in front of the
	// bucket (TILECACHE_CDN_DISTRIBUTION_ID); "" for none: nothing is
	// invalidated.
	CDNDistribution string
	// CDNPurgeEvery is how often what changed is sent to the CDN as
	// invalidations (TILECACHE_CDN_PURGE_INTERVAL, default 30s): a level
	// that changes throughout is one path per period, not one per tile.
	CDNPurgeEvery time.Duration
}

func (c *CDN) read(r *reader) {
	c.CDNDistribution = r.str("TILECACHE_CDN_DISTRIBUTION_ID", "")
	c.CDNPurgeEvery = r.duration("TILECACHE_CDN_PURGE_INTERVAL", "30s")
}

// Edge is what the CDN's edge functions check requests with: the
// key-value store the maintenance writes for them, and the tile token keys
// (which the API and the tile origin sign and check tokens with too).
type Edge struct {
	// EdgeGridSets is the ARN of the CloudFront KeyValueStore the edge
	// path function reads the grid sets from (TILECACHE_EDGE_KVS_ARN); ""
	// for none. The cleaner writes it after a cold start.
	EdgeGridSets string
	// TileTokenKeys are the keys tile tokens are signed and checked with
	// (TILECACHE_TILE_TOKEN_KEYS: "kid:secret,kid:secret,…", the
	// current key first, see tiletoken.ParseKeyring); "" for a key made
	// at start, whose tokens do not outlive the process.
	TileTokenKeys string
	// TileTokenKeysSecret is TILECACHE_TILE_TOKEN_KEYS_SECRET, the ARN
	// of an SSM parameter or Secrets Manager secret holding the same
	// text, read at start into TileTokenKeys (app.LoadTileTokenKeys; not
	// with TILECACHE_TILE_TOKEN_KEYS): the functions' way, whose
	// environment must hold no secret.
	TileTokenKeysSecret string
}

func (e *Edge) read(r *reader) {
	e.EdgeGridSets = r.str("TILECACHE_EDGE_KVS_ARN", "")
	e.TileTokenKeys = strings.TrimSpace(r.str("TILECACHE_TILE_TOKEN_KEYS", ""))
	if e.TileTokenKeys != "" {
		if _, err := tiletoken.ParseKeyring(e.TileTokenKeys); err != nil {
			r.fail(fmt.Errorf("TILECACHE_TILE_TOKEN_KEYS: %w", err))
		}
	}
	e.TileTokenKeysSecret = strings.TrimSpace(r.str("TILECACHE_TILE_TOKEN_KEYS_SECRET", ""))
	if e.TileTokenKeysSecret != "" && e.TileTokenKeys != "" {
		r.fail(errors.New("TILECACHE_TILE_TOKEN_KEYS_SECRET and TILECACHE_TILE_TOKEN_KEYS are both set: set one"))
	}
}

// AWS is how every AWS client is made.
type AWS struct {
	// Retries of every AWS request (S3, DynamoDB, SQS, CloudFront; see
	// awsconf.Retry): at most AWSMaxAttempts attempts per call
	// (TILECACHE_AWS_MAX_ATTEMPTS, the first included), and no retry that
	// could end later than AWSRetryBudget after the call began
	// (TILECACHE_AWS_RETRY_BUDGET).
	AWSMaxAttempts int
	AWSRetryBudget time.Duration

	// env holds the SDK's variables (sdkVariables) as they were at Load;
	// a function, so that printing a Config shows no credentials.
	env Lookup
}

// sdkVariables are the SDK's own variables that awsconf and s3store read
// through a lookup: region, endpoints and static credentials. The SDK's
// clients read the others (AWS_PROFILE, …) themselves.
var sdkVariables = []string{
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
	"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_CLOUDFRONT",
	"AWS_ENDPOINT_URL_SSM", "AWS_ENDPOINT_URL_SECRETS_MANAGER", // TILECACHE_ACCOUNTS_SECRET, TILECACHE_TILE_TOKEN_KEYS_SECRET
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
}

func (a *AWS) read(r *reader) {
	if n, err := strconv.Atoi(r.str("TILECACHE_AWS_MAX_ATTEMPTS", "10")); err != nil || n < 1 || n > 100 {
		r.fail(fmt.Errorf("TILECACHE_AWS_MAX_ATTEMPTS must be an integer from 1 (no retries) to 100, got %q", r.str("TILECACHE_AWS_MAX_ATTEMPTS", "")))
	} else {
		a.AWSMaxAttempts = n
	}
	// At most 5 minutes: a request sent again carries its first signature,
	// which S3 refuses after 15.
	if a.AWSRetryBudget = r.duration("TILECACHE_AWS_RETRY_BUDGET", "20s"); a.AWSRetryBudget > 5*time.Minute {
		r.fail(fmt.Errorf("TILECACHE_AWS_RETRY_BUDGET must be at most 5m, got %s", a.AWSRetryBudget))
	}
	env := map[string]string{}
	for _, k := range sdkVariables {
		if v, ok := r.lookup(k); ok {
			env[k] = v
		}
	}
	a.env = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// Env looks up one of the SDK's variables (AWS_REGION,
// AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, …) as it was when the
// configuration was read: what awsconf.Load and s3store.NewFromEnv take.
// A Config not made by Load or Read has none.
func (a AWS) Env(key string) (string, bool) {
	if a.env == nil {
		return "", false
	}
	return a.env(key)
}

// AccessLogs is how access logs are read for the disk quota (the log
// function, `tilecache quota ingest-logs`).
type AccessLogs struct {
	// AccessLogFormat is cloudfront, s3 or combined
	// (TILECACHE_ACCESS_LOG_FORMAT, default cloudfront); a URL path's key
	// is AccessLogOriginPath + (the path without AccessLogPathPrefix)
	// (TILECACHE_ACCESS_LOG_PATH_PREFIX, default "/";
	// TILECACHE_ACCESS_LOG_ORIGIN_PATH, default none: CloudFront's origin
	// path, if the distribution has one).
	AccessLogFormat     string
	AccessLogPathPrefix string
	AccessLogOriginPath string
}

func (l *AccessLogs) read(r *reader) {
	l.AccessLogFormat = r.str("TILECACHE_ACCESS_LOG_FORMAT", "cloudfront")
	if f := l.AccessLogFormat; f != "cloudfront" && f != "s3" && f != "combined" {
		r.fail(fmt.Errorf("TILECACHE_ACCESS_LOG_FORMAT must be cloudfront, s3 or combined, got %q", f))
	}
	l.AccessLogPathPrefix = r.str("TILECACHE_ACCESS_LOG_PATH_PREFIX", "/")
	l.AccessLogOriginPath = r.str("TILECACHE_ACCESS_LOG_ORIGIN_PATH", "")
}

// CrossSite is what the administration interface takes from browsers: a
// state-changing request a browser marks as sent from another site is
// refused unless its origin is listed here.
type CrossSite struct {
	// AllowedOrigins are the origins (scheme://host[:port], lower case,
	// without a default port) besides the service's own whose pages may
	// change the service (TILECACHE_ALLOWED_ORIGINS, separated by commas;
	// default none).
	AllowedOrigins []string
}

func (c *CrossSite) read(r *reader) {
	for _, f := range strings.Split(r.str("TILECACHE_ALLOWED_ORIGINS", ""), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		o, ok := Origin(f)
		if !ok {
			r.fail(fmt.Errorf("TILECACHE_ALLOWED_ORIGINS must list origins separated by commas, such as https://admin.example.org,http://localhost:3000; %q is not one (an origin is a scheme, a host and a port, without a path)", f))
			continue
		}
		c.AllowedOrigins = append(c.AllowedOrigins, o)
	}
}

// Origin returns the web origin s names, as a browser's Origin header
// writes it: scheme://host[:port] in lower case, without the scheme's
// default port; ok is false when s is not an http(s) origin (it has a
// path other than "/", a query, a fragment or user information).
func Origin(s string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	return u.Scheme + "://" + host, true
}
