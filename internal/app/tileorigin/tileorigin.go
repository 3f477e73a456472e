// Package tileorigin is the tile origin's assembly: the program of the
// tile function, CloudFront's failover origin when a tile is missing from
// the bucket. It answers GET and HEAD of the bucket's objects by key path
// (package tileserve), renders the missing tiles of layers that render on
// miss, and guards private layers with tile tokens — built from the
// shared core (packages core, backends, sources) and nothing else: it
// links no seed engine, no administration interface and no embedded
// database.
package tileorigin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"tilecache/internal/app/backends"
	"tilecache/internal/app/core"
	"tilecache/internal/app/sources"
	"tilecache/internal/config"
	"tilecache/internal/edgepath"
	"tilecache/internal/layer"
	"tilecache/internal/metrics"
	"tilecache/internal/onmiss"
	"tilecache/internal/tileserve"
	"tilecache/internal/tiletoken"
)

// Config is what the tile origin reads of the configuration.
type Config struct {
	KeyPrefix string // TILECACHE_KEY_PREFIX, prefix of every tile key
	Bucket    string // TILECACHE_S3_BUCKET, the tile bucket
	Table     string // TILECACHE_DYNAMODB_TABLE, the task table (claims, usage, recounts, stored layers)
	// StaleAfter (TILECACHE_STALE_AFTER) sets how long the task table
	// keeps finished tasks listed (backends.FinishedKeep), as every
	// process on the table does.
	StaleAfter time.Duration
	config.Layers
	config.Miss
	config.Upstream
	// TileTokenKeys are the keys tile tokens are checked with
	// (TILECACHE_TILE_TOKEN_KEYS, or read at start from
	// TILECACHE_TILE_TOKEN_KEYS_SECRET, TileTokenKeysSecret).
	TileTokenKeys       string
	TileTokenKeysSecret string
	config.AWS
}

// Load reads the tile origin's configuration through lookup.
func Load(lookup config.Lookup) (Config, error) {
	st, err := config.Read[config.Storage](lookup)
	if err != nil {
		return Config{}, err
	}
	c := Config{KeyPrefix: st.KeyPrefix, Bucket: st.Bucket, Table: st.Table}
	lanes, err := config.Read[config.Lanes](lookup)
	if err != nil {
		return Config{}, err
	}
	c.StaleAfter = lanes.StaleAfter
	if c.Layers, err = config.Read[config.Layers](lookup); err != nil {
		return Config{}, err
	}
	if c.Miss, err = config.Read[config.Miss](lookup); err != nil {
		return Config{}, err
	}
	if c.Upstream, err = config.Read[config.Upstream](lookup); err != nil {
		return Config{}, err
	}
	edge, err := config.Read[config.Edge](lookup)
	if err != nil {
		return Config{}, err
	}
	c.TileTokenKeys, c.TileTokenKeysSecret = edge.TileTokenKeys, edge.TileTokenKeysSecret
	if c.AWS, err = config.Read[config.AWS](lookup); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Of returns the tile origin's part of cfg (what `tilecache serve` and
// the tests that build every program from one configuration hand it).
func Of(cfg config.Config) Config {
	return Config{KeyPrefix: cfg.KeyPrefix, Bucket: cfg.Bucket, Table: cfg.Table, StaleAfter: cfg.StaleAfter,
		Layers: cfg.Layers, Miss: cfg.Miss, Upstream: cfg.Upstream,
		TileTokenKeys: cfg.TileTokenKeys, TileTokenKeysSecret: cfg.TileTokenKeysSecret, AWS: cfg.AWS}
}

// Origin is the tile origin's program.
type Origin struct {
	// Handler answers GET and HEAD of the bucket's objects by key path
	// (the key prefix left out), rendering missing tiles on miss.
	Handler http.Handler
	// Registry keeps the layer catalogue current.
	Registry *layer.Registry
	// Misses renders missing tiles.
	Misses *onmiss.Renderer
	// TileKeys check the tile tokens that open private layers.
	TileKeys *tiletoken.Keyring
	// Metrics is the origin's own registry (EMF installs in it).
	Metrics  *metrics.Registry
	Backends backends.Backends

	emf   core.EMF
	proxy *httpadapter.HandlerAdapterV2
	log   *slog.Logger
}

// New builds the tile origin on the tile bucket and the task table of
// cfg. Close releases what it opened.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Origin, error) {
	return NewWith(ctx, cfg, func(ctx context.Context) (backends.Backends, error) {
		b, _, err := backends.AWS(ctx, cfg.AWS, cfg.Bucket, cfg.Table, cfg.StaleAfter)
		return b, err
	}, log)
}

// NewWith builds the tile origin on the backends open returns (the tile
// store and the state adapters; a queue is not used), opened once the
// tile token keys are read. Its Close closes them.
func NewWith(ctx context.Context, cfg Config, open func(context.Context) (backends.Backends, error), log *slog.Logger) (*Origin, error) {
	keys, err := core.LoadTileTokenKeys(ctx, cfg.AWS, cfg.TileTokenKeys, cfg.TileTokenKeysSecret)
	if err != nil {
		return nil, err
	}
	ring, err := core.TileKeys(keys, log)
	if err != nil {
		return nil, fmt.Errorf("tile token keys: %w", err)
	}
	b, err := open(ctx)
	if err != nil {
		return nil, err
	}
	o, err := build(ctx, cfg, b, ring, log)
	if err != nil {
		if b.Close != nil {
			b.Close()
		}
		return nil, err
	}
	return o, nil
}

// build wires the origin on b.
func build(ctx context.Context, cfg Config, b backends.Backends, ring *tiletoken.Keyring, log *slog.Logger) (*Origin, error) {
	reg, err := core.OpenRegistry(ctx, cfg.Layers, b.Config, log)
	if err != nil {
		return nil, err
	}
	cache, err := sources.ForRegistry(reg, cfg.Upstream, sources.ArchivesIn(b.Tiles))
	if err != nil {
		return nil, err
	}
	misses := sources.NewMisses(reg, cache, b, cfg.Miss, cfg.KeyPrefix, log)
	o := &Origin{Registry: reg, Misses: misses, TileKeys: ring, Metrics: new(metrics.Registry), Backends: b, log: log}
	layers := reg.Catalogue()
	// A WMTS KVP GetTile outside the layer's subset, which the edge maps
	// to a key the bucket lacks, is its binding's TileOutOfRange.
	objects := tileserve.PrivateObjects(layers, ring, tileserve.KVPOutOfRange(layers,
		tileserve.NewObjects(layers, b.Tiles, cfg.KeyPrefix, nil, log).RenderMisses(misses)))
	// GetFeatureInfo, which the edge's OGC bindings function passes on
	// under edgepath.FeatureInfoPrefix (reserved, so never a stored object),
	// and the RESTful FeatureInfo resource, which the CDN's
	// /gwc/featureinfo/* behaviour sends here as it is.
	featureInfo := tileserve.NewFeatureInfo(layers, edgepath.NewLive(layers).Values, cache.Of, cfg.Miss.MissQueue, cfg.Miss.MissTimeout, log, objects)
	o.Handler = core.WithMetrics(o.Metrics, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
			return
		}
		if edgepath.IsFeatureInfo(r.URL.EscapedPath()) {
			featureInfo.ServeHTTP(w, r)
			return
		}
		if edgepath.Reserved(r.URL.EscapedPath()) {
			// The service's own objects (the prepared areas of seed
			// requests) are never served, as `tilecache serve` and the
			// edge refuse them.
			http.Error(w, "Not found: no such tile", http.StatusNotFound)
			return
		}
		objects.ServeHTTP(w, r)
	}))
	o.proxy = httpadapter.NewV2(o.Handler)
	return o, nil
}

// EnableEMF makes the origin record its metrics during each invocation
// and write them to w (the function's log: stdout) as CloudWatch Embedded
// Metric Format lines when the invocation ends, in namespace "tilecache"
// with the dimension Function.
func (o *Origin) EnableEMF(w io.Writer, function string) { o.emf.Enable(o.Metrics, w, function) }

// Close releases the backends.
func (o *Origin) Close() error {
	if o.Backends.Close == nil {
		return nil
	}
	return o.Backends.Close()
}

// HandleTile is the tile function's handler: Lambda function URL events
// (payload 2.0, the shape of an HTTP API's) are served by the object
// handler; a tile answers with its binary body base64-encoded and the
// stored Content-Type and Cache-Control, which CloudFront caches. Its
// requests come from CloudFront only (the function URL is IAM
// authenticated, signed by the distribution's origin access control).
func (o *Origin) HandleTile(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	ctx = metrics.NewContext(ctx, o.Metrics)
	defer o.emf.Flush(o.log)
	core.RefreshLayers(ctx, o.Registry, o.log)
	rc := ev.RequestContext
	res, err := o.proxy.ProxyWithContext(ctx, events.APIGatewayV2HTTPRequest{
		Version: ev.Version, RawPath: ev.RawPath, RawQueryString: ev.RawQueryString, Cookies: ev.Cookies,
		Headers: ev.Headers, QueryStringParameters: ev.QueryStringParameters, Body: ev.Body, IsBase64Encoded: ev.IsBase64Encoded,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: rc.AccountID, RequestID: rc.RequestID, APIID: rc.APIID, DomainName: rc.DomainName,
			DomainPrefix: rc.DomainPrefix, Time: rc.Time, TimeEpoch: rc.TimeEpoch, RouteKey: "$default", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: rc.HTTP.Method, Path: rc.HTTP.Path, Protocol: rc.HTTP.Protocol, SourceIP: rc.HTTP.SourceIP, UserAgent: rc.HTTP.UserAgent,
			},
		},
	})
	if err != nil {
		return events.LambdaFunctionURLResponse{}, err
	}
	return events.LambdaFunctionURLResponse{StatusCode: res.StatusCode, Headers: res.Headers, Body: res.Body,
		IsBase64Encoded: res.IsBase64Encoded, Cookies: res.Cookies}, nil
}
