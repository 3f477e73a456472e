// Package worker is the assembly of the worker function, which works
// the seed engine's lanes (HandleSQS: lane messages). It builds the seed
// engine, render on miss (for truncations), the CDN's purger and the
// documents of the tile store on the shared core (packages core,
// backends, sources). The disk-quota clean-up, the schedules and the edge
// sync are the maintenance's (package maintenance, which builds on this
// program, as `tilecache serve` in package app does): the worker links no
// schedules, cron parser or time zone database, no administration
// interface nor the administration's state, console or embedded database.
package worker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/app/backends"
	"tilecache/internal/app/core"
	"tilecache/internal/app/sources"
	"tilecache/internal/archive"
	"tilecache/internal/archive/mbtiles"
	"tilecache/internal/awsconf"
	"tilecache/internal/cdn"
	"tilecache/internal/config"
	"tilecache/internal/layer"
	"tilecache/internal/metrics"
	"tilecache/internal/onmiss"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/seed"
	"tilecache/internal/site"
	"tilecache/internal/web"
)

// Config is what the worker reads of the configuration.
type Config struct {
	// PublicURL is the base URL the tile store's objects are served from
	// (TILECACHE_PUBLIC_URL), which the documents of the tile store carry.
	PublicURL string
	KeyPrefix string // TILECACHE_KEY_PREFIX, prefix of every tile key
	Bucket    string // TILECACHE_S3_BUCKET, the tile bucket
	Table     string // TILECACHE_DYNAMODB_TABLE, the task table
	QueueURL  string // TILECACHE_SQS_QUEUE_URL, the lane queue
	config.Layers
	config.Lanes
	config.Miss
	config.Upstream
	config.CDN
	config.AWS
}

// Load reads the worker's configuration through lookup.
func Load(lookup config.Lookup) (Config, error) {
	srv, err := config.Read[config.Server](lookup)
	if err != nil {
		return Config{}, err
	}
	st, err := config.Read[config.Storage](lookup)
	if err != nil {
		return Config{}, err
	}
	q, err := config.Read[config.Queue](lookup)
	if err != nil {
		return Config{}, err
	}
	c := Config{PublicURL: srv.PublicURL, KeyPrefix: st.KeyPrefix, Bucket: st.Bucket, Table: st.Table, QueueURL: q.QueueURL}
	if c.Layers, err = config.Read[config.Layers](lookup); err != nil {
		return Config{}, err
	}
	if c.Lanes, err = config.Read[config.Lanes](lookup); err != nil {
		return Config{}, err
	}
	if c.Miss, err = config.Read[config.Miss](lookup); err != nil {
		return Config{}, err
	}
	if c.Upstream, err = config.Read[config.Upstream](lookup); err != nil {
		return Config{}, err
	}
	if c.CDN, err = config.Read[config.CDN](lookup); err != nil {
		return Config{}, err
	}
	if c.AWS, err = config.Read[config.AWS](lookup); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Of returns the worker's part of cfg.
func Of(cfg config.Config) Config {
	return Config{PublicURL: cfg.PublicURL, KeyPrefix: cfg.KeyPrefix, Bucket: cfg.Bucket, Table: cfg.Table, QueueURL: cfg.QueueURL,
		Layers: cfg.Layers, Lanes: cfg.Lanes, Miss: cfg.Miss, Upstream: cfg.Upstream, CDN: cfg.CDN, AWS: cfg.AWS}
}

// Program is the engine's side of tilecache: what the worker function
// runs, and what the cleaner's maintenance and `tilecache serve` build on.
type Program struct {
	// Engine is the seeding engine.
	Engine *seed.Engine
	// Misses renders tiles on a miss (the tile and object paths).
	Misses *onmiss.Renderer
	// Sources are the layers' sources (GetFeatureInfo asks them too).
	Sources *sources.Cache
	// Metrics is the program's own registry: what the program records
	// reaches the exporters installed in it (Prometheus in `tilecache
	// serve`, EMF in a function).
	Metrics *metrics.Registry
	emf     core.EMF
	// Purger invalidates what changed in the CDN in front of the bucket
	// (with cdn.Nop when none is configured).
	Purger *cdn.Purger
	// Site keeps the store marker, the tile sets' documents and the demo
	// page in the tile store.
	Site *site.Site
	// Backends are the backends the engine runs on.
	backends.Backends
	// Registry keeps the layer catalogue current: the layer file and the
	// configuration changed at run time.
	Registry *layer.Registry

	log *slog.Logger
}

// NewAWS builds the program on the tile bucket, task table and lane queue
// of cfg. Close releases what it opened.
func NewAWS(ctx context.Context, cfg Config, log *slog.Logger) (*Program, error) {
	return New(ctx, cfg, func(ctx context.Context) (backends.Backends, error) { return AWSBackends(ctx, cfg) }, log)
}

// AWSBackends connects to the bucket, table and queue of cfg (see
// backends.AWS), the queue with the same AWS configuration.
func AWSBackends(ctx context.Context, cfg Config) (backends.Backends, error) {
	b, awsCfg, err := backends.AWS(ctx, cfg.AWS, cfg.Bucket, cfg.Table, cfg.StaleAfter)
	if err != nil {
		return backends.Backends{}, err
	}
	b.Queue = LaneQueue(awsCfg, cfg)
	return b, nil
}

// LaneQueue is the lane queue of cfg (TILECACHE_SQS_QUEUE_URL) on SQS,
// with the AWS configuration of the other clients.
func LaneQueue(awsCfg aws.Config, cfg Config) *sqsqueue.Queue {
	return sqsqueue.New(sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if e := awsconf.ServiceEndpoint(cfg.AWS.Env, "SQS"); e != nil {
			o.BaseEndpoint = e
		}
	}), cfg.QueueURL)
}

// New builds the program on the backends open returns. Close releases
// them.
func New(ctx context.Context, cfg Config, open func(context.Context) (backends.Backends, error), log *slog.Logger) (*Program, error) {
	b, err := open(ctx)
	if err != nil {
		return nil, err
	}
	p, err := build(ctx, cfg, b, log)
	if err != nil {
		if b.Close != nil {
			b.Close()
		}
		return nil, err
	}
	return p, nil
}

// build wires the program on b.
func build(ctx context.Context, cfg Config, b backends.Backends, log *slog.Logger) (*Program, error) {
	reg, err := core.OpenRegistry(ctx, cfg.Layers, b.State.Config, log)
	if err != nil {
		return nil, err
	}
	layers := reg.Catalogue()
	srcs, err := sources.ForRegistry(reg, cfg.Upstream, sources.ArchivesIn(b.Tiles), sources.MBTiles(openMBTiles))
	if err != nil {
		return nil, err
	}
	inv, err := Invalidator(ctx, cfg.CDNDistribution, cfg.AWS)
	if err != nil {
		return nil, err
	}
	purger := cdn.NewPurger(inv, cdn.PurgerOptions{KeyPrefix: cfg.KeyPrefix, Every: cfg.CDNPurgeEvery}, log)
	docs := site.New(b.Tiles, layers, cfg.KeyPrefix, cfg.PublicURL, web.IndexHTML(), log)
	misses := sources.NewMisses(reg, srcs, b, cfg.Miss, cfg.KeyPrefix, log)
	engine := seed.New(layers, nil, b.Tasks, b.Queue, b.Tiles, seed.Options{
		SourceOf: srcs.Of, PoolSize: cfg.SeedThreads, KeyPrefix: cfg.KeyPrefix, CheckpointEvery: cfg.Checkpoint, KillCheckEvery: cfg.KillCheck,
		Slice: cfg.Slice, StaleAfter: cfg.StaleAfter, Visibility: cfg.Visibility, Usage: b.Usage, Changes: purger, Documents: docs,
		Truncations: misses,
		Sync:        func(ctx context.Context) error { _, err := reg.Sync(ctx); return err },
		Unmark:      func(ctx context.Context, name, id string) error { return unmarkDeleted(ctx, reg, name, id) }, TruncatePage: cfg.TruncatePage,
		// Imports (importjob.go in package seed; imports.go here).
		Archives: archiveOpener(b.Tiles, cfg.Upstream),
	}, log)
	p := &Program{Engine: engine, Misses: misses, Sources: srcs, Purger: purger, Site: docs, Backends: b, log: log, Registry: reg,
		Metrics: new(metrics.Registry)}
	reg.OnUpdate(p.layersChanged)
	return p, nil
}

// Publish runs Site.Publish and hands what changed to the purger. Its
// failure is logged (the documents of a tile set are also written by its
// next seed) and reported as false.
func (p *Program) Publish(ctx context.Context) bool {
	changed, err := p.Site.Publish(ctx)
	if err != nil && ctx.Err() == nil {
		p.log.Error("publish the documents of the tile store", "err", err)
	}
	p.Purger.KeysChanged(changed...)
	if len(changed) > 0 {
		p.log.Info("documents of the tile store written", "keys", len(changed))
	}
	return err == nil
}

// Close releases the backends. Call it after the program's work ended.
func (p *Program) Close() error {
	if p.Backends.Close == nil {
		return nil
	}
	return p.Backends.Close()
}

// layersChanged brings the documents of the tile store up to date after
// this process changed the layers (written, the CDN's copies
// invalidated). Other processes only read the new configuration
// (Registry.Refresh); the grid sets of the edge path function are written
// by the maintenance (package maintenance), which holds the right to, when
// it sees a new configuration.
func (p *Program) layersChanged(ctx context.Context, _ *layer.Catalogue, changed []string) {
	p.publishLayers(ctx, changed)
}

// RefreshLayers reads the stored layer configuration's version when it
// is due (Registry.Refresh); a failure is logged and the catalogue kept.
func (p *Program) RefreshLayers(ctx context.Context) { core.RefreshLayers(ctx, p.Registry, p.log) }

// MetricsContext returns ctx carrying the program's registry.
func (p *Program) MetricsContext(ctx context.Context) context.Context {
	return metrics.NewContext(ctx, p.Metrics)
}

// errNoMark ends an Update that finds no deletion mark to remove.
var errNoMark = errors.New("no deletion mark")

// unmarkDeleted removes the deletion mark of layer name and id from the
// stored configuration (nothing when it is gone already): the end of a
// deleted layer's truncation.
func unmarkDeleted(ctx context.Context, reg *layer.Registry, name, id string) error {
	_, err := reg.Update(ctx, func(doc *layer.Config, _ *layer.Catalogue) error {
		if !doc.Unmark(name, id) {
			return errNoMark
		}
		return nil
	})
	if errors.Is(err, errNoMark) {
		return nil
	}
	return err
}

// openMBTiles opens an MBTiles file for an mbtiles source.
func openMBTiles(ctx context.Context, path string) (archive.Reader, error) {
	return mbtiles.Open(ctx, path)
}
