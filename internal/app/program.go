// Package app wires tilecache together: it is the only package that knows
// every adapter. New builds the program of `tilecache serve` and of the API
// function — the REST handler, the tile handler and the console in front of
// the maintenance's assembly (package maintenance: the sweeper, the
// disk-quota cleaner, the schedules' ticker), itself on the worker's
// (package worker: the engine, the lane workers) — on the embedded
// backends or on S3, DynamoDB and SQS.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"tilecache/internal/account"
	"tilecache/internal/apitoken"
	"tilecache/internal/app/backends/admin"
	"tilecache/internal/app/backends/embedded"
	"tilecache/internal/app/backends/scheduling"
	"tilecache/internal/app/core"
	"tilecache/internal/app/maintenance"
	"tilecache/internal/audit"
	"tilecache/internal/auth"
	"tilecache/internal/config"
	"tilecache/internal/console"
	"tilecache/internal/edgepath"
	"tilecache/internal/metrics"
	"tilecache/internal/quota"
	"tilecache/internal/rest"
	"tilecache/internal/seed"
	"tilecache/internal/source/upstream"
	"tilecache/internal/tileserve"
)

// Program is the wired program of `tilecache serve` and the API
// function: the maintenance's side (maintenance.Program, on the worker's
// worker.Program, whose fields and methods it has) with the REST interface,
// the tile serving and the console in front.
type Program struct {
	*maintenance.Program
	// Handler serves the REST interface (behind Basic auth) under the
	// configured base path, and 404 elsewhere.
	Handler http.Handler
	// Recorder counts client reads of tiles (nil without the REST handler).
	Recorder *quota.Recorder
	// Prometheus serves the metrics at {base}/metrics (nil without the
	// REST handler); it records while Run runs.
	Prometheus *metrics.Prometheus
	// Audit records the administration requests (nil without the REST
	// handler); Close flushes the refusals it counted.
	Audit *audit.Recorder
	// Admin is the administration's state (the audit trail, the API
	// tokens, the accounts) beside the engine's backends and schedules.
	Admin admin.State

	cfg   config.Config
	log   *slog.Logger
	proxy *httpadapter.HandlerAdapterV2 // HandleAPI's adapter of Handler
}

// New builds the whole program from cfg: engine, backends and the REST
// handler behind Basic auth. Close releases what it opened.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*Program, error) {
	return NewWithAuthClock(ctx, cfg, log, nil)
}

// NewWithAuthClock is New with the clock of what the program remembers
// of API tokens and of the accounts added at run time (apitoken.CacheFor,
// auth.StoredFor), and of the tokens' expiry; nil is time.Now. A test
// moves it past those spans rather than waiting for them.
func NewWithAuthClock(ctx context.Context, cfg config.Config, log *slog.Logger, authNow func() time.Time) (*Program, error) {
	users, err := LoadAccounts(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p, err := NewWorker(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	layers := p.Registry.Catalogue()
	// API tokens beside the accounts' passwords, each read from the task
	// store at most apitoken.CacheFor ago, so that a revocation reaches
	// every process within that time.
	users = users.WithBearer(apitoken.NewVerifier(p.Admin.Tokens, apitoken.CacheFor).WithClock(authNow))
	// And the accounts added at run time, each read from the task store
	// at most auth.StoredFor ago: a change reaches every process within
	// that time.
	configured := users
	users = users.WithAccountsAt(account.Reader{Store: p.Admin.Accounts}, authNow)
	// The audit trail: the recorder sits outside the accounts' middleware
	// and the cross-site guard to see their refusals; Identify, inside
	// them, names the account (or token) and its role.
	p.Audit = audit.NewRecorder(p.Admin.Audit(cfg.AuditRetention), func(r *http.Request) (string, string) {
		pr, ok := auth.PrincipalOf(r.Context())
		if !ok {
			return "", ""
		}
		who := pr.Name
		if pr.TokenID != "" {
			who = "token:" + pr.TokenID
		}
		return who, pr.Role.String()
	}, auth.ClientAddress, log)
	api := users.Middleware(p.Audit.Identify(withSubmitter(rest.New(rest.Services{
		Planner: p.Engine.Planner, Tasks: engineTasks{p.Engine.Control, p.Engine.Truncation}, Layers: layers,
		Quota: p.Usage, Schedules: p.Backends.Schedules, Editor: p.Registry, Tokens: p.Admin.Tokens,
		Accounts: p.Admin.Accounts, Configured: configured,
		Imports: p.Engine.Control,
	}, rest.Options{
		BasePath:      cfg.BasePath,
		OnQuotaChange: func(quota.Config) { p.Cleaner.Rearm() },
		Usage:         p.Cleaner,
		Reads:         quota.NewReadLog(p.Usage, p.ReadMarks),
		Pages:         p.Usage,
		Recent:        p.Tasks,
		Failures:      p.Tasks,
		Upstream:      upstream.AddressPolicy{Allow: cfg.UpstreamAllow},
		AccountCost:   configured.Cost(),
	}, log))))
	// The audit trail is an administrator's to read.
	api = withAuditTrail(api, users.Middleware(auth.Require(auth.Admin, p.Audit.Handler(log))))
	p.Recorder = quota.NewRecorder(p.Usage, AccessFlushEvery, log)
	if p.TileKeys == nil {
		if p.TileKeys, err = core.TileKeys("", log); err != nil {
			return nil, err
		}
	}
	// A private layer's tiles and documents only with a tile token for
	// it, by every path: /tiles/, the keys and the edge paths.
	var tiles http.Handler = tileserve.NewTiles(layers, p.Tiles, cfg.KeyPrefix, p.Recorder, log).RenderMisses(p.Misses)
	tiles = tileserve.PrivateTiles(layers, p.TileKeys, storedOnlyForAccounts(users, tiles))
	var objects http.Handler = tileserve.NewObjects(layers, p.Tiles, cfg.KeyPrefix, p.Recorder, log).RenderMisses(p.Misses)
	// The WMTS and XYZ paths and the OGC KVP bindings (WMTS KVP, WMS-C),
	// mapped to the stored keys as the CDN's edge functions map them.
	// GetFeatureInfo, which the bindings pass on, answered from the layers'
	// WMS upstreams.
	live := edgepath.NewLive(layers)
	objects = storedOnlyForAccounts(users, live.Handler(tileserve.NewFeatureInfo(layers, live.Values, p.Sources.Of,
		cfg.Miss.MissQueue, cfg.Miss.MissTimeout, log, tileserve.PrivateObjects(layers, p.TileKeys, tileserve.KVPOutOfRange(layers, objects)))))
	p.Prometheus = metrics.NewPrometheus()
	// /metrics is no anonymous path: a viewer's (it only reads, and a
	// scraper should hold the least role) on the main listener, or
	// anyone's on a listener of its own (TILECACHE_METRICS_ADDR, see Serve)
	// that is not exposed where the tiles are.
	var metricsH http.Handler = users.Middleware(auth.Require(auth.Viewer, p.Prometheus.Handler()))
	if cfg.MetricsAddr != "" {
		metricsH = nil
	}
	p.Handler = core.WithMetrics(p.Metrics, p.Audit.Wrap(cfg.BasePath, rest.NewCrossSite(cfg.BasePath, cfg.PublicURL, cfg.AllowedOrigins).Wrap(
		mountConsole(cfg.BasePath, users.Middleware(auth.Require(auth.Viewer, console.Handler(console.Options{Backend: cfg.Backend, BaseMap: cfg.ConsoleBaseMap}))), mount(cfg.BasePath, withTileTokens(api,
			users.Middleware(p.Audit.Identify(auth.Require(auth.Viewer, issueTileTokens(layers, p.TileKeys, time.Now))))), tiles, objects, metricsH)))))
	p.proxy = httpadapter.NewV2(consoleTilesOnly(cfg.BasePath, p.Handler))
	return p, nil
}

// withSubmitter names the account (or API token) that authenticated a
// request as the submitter of the requests it makes (seed.WithSubmitter:
// their job's SubmittedBy).
func withSubmitter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if pr, ok := auth.PrincipalOf(r.Context()); ok {
			r = r.WithContext(seed.WithSubmitter(r.Context(), pr.String()))
		}
		next.ServeHTTP(w, r)
	})
}

// withAuditTrail serves audit.Path with trail and everything else with api.
func withAuditTrail(api, trail http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == audit.Path {
			trail.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// storedOnlyForAccounts lets a stored-only read (tileserve.StoredOnly: the
// console's base map) through to next only with an account's credentials,
// challenged like the REST interface's (the browser answers the challenge
// with the credentials it holds for the console); any other read passes
// as it is. Anonymously, whether a tile is stored could be asked without
// rendering it, telling which areas of a render-on-miss layer were viewed.
// Any role may ask (viewer).
func storedOnlyForAccounts(users *auth.Authenticator, next http.Handler) http.Handler {
	guarded := users.Middleware(auth.Require(auth.Viewer, next))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tileserve.StoredOnly(r) {
			guarded.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// consoleTilesOnly is the API function's handler: API Gateway routes
// GET /tiles/{proxy+} to it for the console's map, whose stored-only reads
// (tileserve.StoredOnly, an account's) the CDN cannot answer; every other
// tile read is the CDN's (which renders on a miss through the tile
// function), and is answered 404 here, naming where tiles are served.
func consoleTilesOnly(basePath string, next http.Handler) http.Handler {
	tiles := basePath + "/tiles/"
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, tiles) && !tileserve.StoredOnly(r) {
			http.Error(w, "tiles are served by the CDN: the API answers only the console's stored-only reads ("+tileserve.StoredOnlyHeader+": 1)", http.StatusNotFound)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// AccessFlushEvery is how often tile reads are flushed to the usage store.
const AccessFlushEvery = 5 * time.Second

// NewWorker builds the program without the REST handler (and without
// accounts): the maintenance's side on the engine's (maintenance.New) on
// cfg's backends, the embedded ones or those on AWS, with the
// administration's state opened beside them (Admin).
func NewWorker(ctx context.Context, cfg config.Config, log *slog.Logger) (*Program, error) {
	var st admin.State
	m, err := maintenance.New(ctx, maintenance.Of(cfg), func(ctx context.Context) (scheduling.Backends, error) {
		var b admin.Backends
		var err error
		if cfg.Backend == "aws" {
			b, err = AWSBackends(ctx, cfg)
		} else {
			b, err = embedded.OpenAdmin(cfg.DataDir)
		}
		st = b.Admin
		return b.Backends, err
	}, log)
	if err != nil {
		return nil, err
	}
	return &Program{Program: m, Admin: st, cfg: cfg, log: log}, nil
}

// ScheduleEvery is how often `tilecache serve` looks for due schedules: a
// run starts at most this late (cron's unit is the minute).
const ScheduleEvery = 20 * time.Second

// LoadAccounts reads the administrator accounts: from the SSM parameter or
// Secrets Manager secret TILECACHE_ACCOUNTS_SECRET names (what ApiFunction
// does), or TILECACHE_ACCOUNTS (the accounts-file format inline, entries
// separated by newlines or spaces), or else the file TILECACHE_USERS.
func LoadAccounts(ctx context.Context, cfg config.Config) (*auth.Authenticator, error) {
	accounts, source := cfg.Accounts, "TILECACHE_ACCOUNTS"
	if cfg.AccountsSecret != "" {
		var err error
		if accounts, err = core.ReadSecret(ctx, cfg.AWS, cfg.AccountsSecret); err != nil {
			return nil, fmt.Errorf("load accounts (TILECACHE_ACCOUNTS_SECRET): %w", err)
		}
		source = cfg.AccountsSecret
	}
	if accounts != "" || cfg.AccountsSecret != "" {
		entries := strings.Join(strings.Fields(accounts), "\n")
		users, err := auth.Parse(strings.NewReader(entries), source)
		if err != nil {
			return nil, fmt.Errorf("load accounts: %w", err)
		}
		return users, nil
	}
	users, err := auth.LoadFile(cfg.UsersFile)
	if err != nil {
		return nil, fmt.Errorf("load accounts (create one with `tilecache useradd`): %w", err)
	}
	return users, nil
}

// LoadTileTokenKeys returns cfg with the tile token keys read from the SSM
// parameter or Secrets Manager secret TILECACHE_TILE_TOKEN_KEYS_SECRET
// names, if it names one (what ApiFunction, TileFunction and
// CleanerFunction do at start, as the accounts); else cfg as it is.
// NewWorker reads them likewise (maintenance.New), so every program built
// from it signs, checks and writes to the edge the same keys.
func LoadTileTokenKeys(ctx context.Context, cfg config.Config) (config.Config, error) {
	keys, err := core.LoadTileTokenKeys(ctx, cfg.AWS, cfg.TileTokenKeys, cfg.TileTokenKeysSecret)
	if err != nil {
		return cfg, err
	}
	cfg.TileTokenKeys = keys
	return cfg, nil
}

// mount serves api for base+"/rest" and everything below it, tiles
// (without authentication) for base+"/tiles/…", metricsH (if not nil) for
// base+"/metrics", and the store's objects as the CDN serves them (without
// authentication) for everything else under base.
func mount(base string, api, tiles, objects, metricsH http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, base)
		var h http.Handler
		switch {
		case ok && (rest == "/rest" || strings.HasPrefix(rest, "/rest/")):
			h = api
		case ok && strings.HasPrefix(rest, "/tiles/"):
			h = tiles
		case ok && rest == "/metrics" && metricsH != nil:
			h = metricsH
		case ok && (rest == "" || strings.HasPrefix(rest, "/")):
			h = objects
		default:
			http.Error(w, "Not found: "+r.URL.Path+" (the administration interface is under "+base+"/rest, tiles under "+base+"/tiles)", http.StatusNotFound)
			return
		}
		if base == "" {
			h.ServeHTTP(w, r)
			return
		}
		http.StripPrefix(base, h).ServeHTTP(w, r)
	})
}

// mountConsole serves the console (package console) at base+"/console/",
// behind the same accounts as /rest, and sends everything else to next;
// base+"/console" redirects to it (the page's addresses are relative).
func mountConsole(base string, consoleH, next http.Handler) http.Handler {
	strip := http.StripPrefix(base+"/console", consoleH)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, base+"/console")
		switch {
		case ok && rest == "":
			http.Redirect(w, r, base+"/console/", http.StatusMovedPermanently)
		case ok && strings.HasPrefix(rest, "/"):
			strip.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// Run works lane messages with the pool's threads, sweeps stale lanes,
// runs the disk-quota schedule (clean-ups and recounts), fires the due
// schedules of saved requests and flushes tile reads until ctx ends. On the embedded backend it first re-enqueues the
// lanes the previous process left RUNNING.
func (p *Program) Run(ctx context.Context) error {
	ctx = p.MetricsContext(ctx)
	// Installed first: the listener answers from the start, while the
	// recovery or sweep below may take seconds (a DynamoDB query under
	// load), and what its requests record must not be dropped.
	if p.Prometheus != nil {
		defer p.Metrics.Install(p.Prometheus)()
	}
	if p.RecoverAll {
		if err := p.Engine.Pool.Recover(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped while recovering: the next start recovers
			}
			return fmt.Errorf("recover tasks: %w", err)
		}
	} else if err := p.Engine.Pool.Sweep(ctx); err != nil && ctx.Err() == nil {
		p.log.Error("sweep", "err", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.Publish(ctx) })
	wg.Go(func() { p.Engine.Worker.RunWorkers(ctx, p.cfg.Workers) })
	wg.Go(func() { p.Cleaner.RunSchedule(ctx) })
	wg.Go(func() { p.Purger.Run(ctx) })
	wg.Go(func() { p.Schedules.Run(ctx, ScheduleEvery) })
	if p.Recorder != nil {
		wg.Go(func() { p.Recorder.Run(ctx) })
	}
	tick := time.NewTicker(max(p.cfg.StaleAfter/4, time.Second))
	defer tick.Stop()
	refresh := time.NewTicker(max(p.cfg.LayersRefresh, 100*time.Millisecond))
	defer refresh.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case <-refresh.C:
			p.RefreshLayers(ctx)
		case <-tick.C:
			if err := p.Engine.Pool.Sweep(ctx); err != nil && ctx.Err() == nil {
				p.log.Error("sweep", "err", err)
			}
		}
	}
}

// Close releases the backends, first writing the refusals the audit
// trail counted. Call it after Run returned.
func (p *Program) Close() error {
	if p.Audit != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		p.Audit.Close(ctx)
		cancel()
	}
	return p.Program.Close()
}

// Serve runs `tilecache serve`: the REST interface on cfg.Addr plus the
// workers, until ctx ends; then it shuts down gracefully.
func Serve(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	p, err := New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer p.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	// Bodies are at most 1 MiB: a client slower than ReadTimeout is cut
	// off, and idle keep-alive connections close. No WriteTimeout: a mass
	// truncation answers when it is done.
	srv := &http.Server{Handler: p.Handler, BaseContext: func(net.Listener) context.Context { return p.MetricsContext(context.Background()) }, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	runErr := make(chan error, 1)
	go func() { runErr <- p.Run(runCtx) }()
	srvErr := make(chan error, 2)
	go func() { srvErr <- srv.Serve(ln) }()
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("listen on %s (TILECACHE_METRICS_ADDR): %w", cfg.MetricsAddr, err)
		}
		msrv := &http.Server{Handler: p.Prometheus.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second}
		go func() { srvErr <- msrv.Serve(mln) }()
		defer msrv.Close()
		log.Info("metrics serving", "url", "http://"+mln.Addr().String()+"/metrics")
	}
	log.Info("tilecache serving", "console", "http://"+ln.Addr().String()+cfg.BasePath+"/console/",
		"url", "http://"+ln.Addr().String()+cfg.BasePath+"/rest", "data", cfg.DataDir,
		"seed_threads", cfg.SeedThreads, "backend", cfg.Backend)
	select {
	case <-ctx.Done():
	case err := <-srvErr:
		return fmt.Errorf("serve http: %w", err)
	case err := <-runErr:
		if err != nil {
			return err
		}
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutCtx)
	stopRun()
	if rerr := <-runErr; rerr != nil && err == nil {
		err = rerr
	}
	log.Info("tilecache stopped")
	return err
}

// engineTasks answers the REST API's requests for tasks: the engine's
// control plane (submit, list, kill) and its truncation (a mass
// truncation, a deleted layer's truncation).
type engineTasks struct {
	*seed.Control
	*seed.Truncation
}
