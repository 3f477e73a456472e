// Package logingest is the log ingest's assembly: the program of the log
// function, which reads access logs (the CDN's standard logs, the tile
// bucket's server access logs) into the disk quota's pages, so that its LRU
// and LFU clean-ups see the reads the CDN served. It is built from the
// shared core (package core: the layer registry, the AWS clients'
// settings) and the task table alone: it links no administration
// interface, seed engine, image code or tile rendering.
package logingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/accesslog"
	"tilecache/internal/app/core"
	"tilecache/internal/awsconf"
	"tilecache/internal/config"
	"tilecache/internal/edgepath"
	"tilecache/internal/layer"
	"tilecache/internal/metrics"
	"tilecache/internal/quota"
	"tilecache/internal/state/dynamo"
	"tilecache/internal/tilestore/s3store"
)

// Opener streams an object of a bucket (a log object).
type Opener interface {
	Open(ctx context.Context, bucket, key string) (io.ReadCloser, error)
}

// Config is what the log ingest reads of the configuration.
type Config struct {
	KeyPrefix string // TILECACHE_KEY_PREFIX, prefix of every tile key
	Table     string // TILECACHE_DYNAMODB_TABLE, the task table (usage pages, batch marks, stored layers)
	config.Layers
	config.AccessLogs
	config.AWS
}

// Load reads the log ingest's configuration through lookup.
func Load(lookup config.Lookup) (Config, error) {
	st, err := config.Read[config.Storage](lookup)
	if err != nil {
		return Config{}, err
	}
	c := Config{KeyPrefix: st.KeyPrefix, Table: st.Table}
	if c.Layers, err = config.Read[config.Layers](lookup); err != nil {
		return Config{}, err
	}
	if c.AccessLogs, err = config.Read[config.AccessLogs](lookup); err != nil {
		return Config{}, err
	}
	if c.AWS, err = config.Read[config.AWS](lookup); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Of returns the log ingest's part of cfg.
func Of(cfg config.Config) Config {
	return Config{KeyPrefix: cfg.KeyPrefix, Table: cfg.Table, Layers: cfg.Layers, AccessLogs: cfg.AccessLogs, AWS: cfg.AWS}
}

// Ingester reads access logs (the CDN's standard logs, the bucket's
// server access logs) into the disk quota's pages, each batch of a log
// object once (quota.ReadLog), so that LRU and LFU see the reads the CDN
// served.
type Ingester struct {
	reads  *quota.ReadLog
	mapper *accesslog.Mapper
	format accesslog.Format
	open   Opener
	log    *slog.Logger
	// registry, when set, is refreshed at each invocation (the layers the
	// logs name may have changed).
	registry *layer.Registry
	// emf writes the metrics of an invocation when it ends (EnableEMF).
	emf core.EMF
	// metrics is the ingester's own registry (EMF installs in it).
	metrics *metrics.Registry
}

// EnableEMF makes the ingester record its metrics during each invocation
// and write them to w (the function's log) as CloudWatch Embedded Metric
// Format lines when the invocation ends, in namespace "tilecache" with
// the dimension Function, as every function's program does.
func (li *Ingester) EnableEMF(w io.Writer, function string) { li.emf.Enable(li.metrics, w, function) }

// NewIngester returns an ingester of logs in cfg's format, whose reads
// go to reads; layers resolves the layer ids of tile keys.
func NewIngester(cfg Config, layers *layer.Catalogue, reads *quota.ReadLog, open Opener, log *slog.Logger) (*Ingester, error) {
	f, err := accesslog.ParseFormat(cfg.AccessLogFormat)
	if err != nil {
		return nil, err
	}
	table := edgepath.NewLive(layers)
	m, err := accesslog.NewMapper(accesslog.MapperConfig{PageShift: quota.PageShift,
		Prefix: cfg.KeyPrefix, PathPrefix: cfg.AccessLogPathPrefix, OriginPath: cfg.AccessLogOriginPath,
		// Reads through the edge's WMTS and XYZ paths count like others.
		EdgePrefixes: edgepath.Prefixes,
		EdgePath:     func(p string) (string, bool) { return edgepath.Map(p, table.Table()) },
		// And those of the WMTS KVP and WMS-C bindings, by their query.
		EdgeQuery: table.OWSTile,
		LayerName: func(id string) (string, bool) {
			l, ok := layers.ByID(id)
			if !ok {
				return "", false
			}
			return l.Name, true
		},
	})
	if err != nil {
		return nil, err
	}
	return &Ingester{reads: reads, mapper: m, format: f, open: open, log: log, metrics: new(metrics.Registry)}, nil
}

// Ingest reads one log object and records its reads; id names the object
// (its bucket, key and ETag), so that a redelivery records nothing twice.
func (li *Ingester) Ingest(ctx context.Context, id string, r io.Reader) (accesslog.Stats, error) {
	ctx = metrics.NewContext(ctx, li.metrics)
	n := 0
	var dups int
	st, err := accesslog.Ingest(ctx, r, li.format, li.mapper, func(ctx context.Context, batch []accesslog.PageHits) error {
		n++
		dup, err := li.reads.Record(ctx, accesslog.BatchID(id, n), quota.ReadsOf(batch))
		if dup {
			dups++
		}
		return err
	}, accesslog.Options{MaxPages: quota.MaxReadBatch})
	if err != nil {
		return st, fmt.Errorf("ingest access log %s: %w", id, err)
	}
	li.log.Info("access log ingested", "log", id, "lines", st.Lines, "tile_reads", st.Kept, "pages", st.Pages,
		"batches", st.Batches, "batches_seen_before", dups, "malformed", st.Malformed, "not_tiles", st.NotTile,
		"not_reads", st.NotRead+st.NotSuccessful, "unknown_layer", st.UnknownLayer)
	metrics.AccessLogReads.Add(ctx, float64(st.Kept), "kept")
	metrics.AccessLogReads.Add(ctx, float64(st.NotTile), "not_tile")
	metrics.AccessLogReads.Add(ctx, float64(st.UnknownLayer), "unknown_layer")
	if st.Kept == 0 && st.NotTile+st.UnknownLayer > 0 {
		// Reads, none of them a tile's: the paths may not lead to the
		// keys (TILECACHE_ACCESS_LOG_ORIGIN_PATH, _PATH_PREFIX).
		metrics.AccessLogsNoneKept.Add(ctx, 1)
		li.log.Warn("access log kept no tile read", "log", id, "reads", st.NotTile+st.UnknownLayer,
			"not_tiles", st.NotTile, "unknown_layer", st.UnknownLayer)
	}
	return st, nil
}

// HandleS3 is the log function's handler: each object an S3 event names
// (a log the CDN or the bucket delivered) is ingested. An error fails the
// invocation, which Lambda retries and then hands to the function's
// dead-letter queue; objects of the event ingested before it are not
// counted again on the retry.
func (li *Ingester) HandleS3(ctx context.Context, ev events.S3Event) error {
	ctx = metrics.NewContext(ctx, li.metrics)
	defer li.emf.Flush(li.log)
	if li.registry != nil {
		core.RefreshLayers(ctx, li.registry, li.log)
	}
	var errs []error
	for _, rec := range ev.Records {
		bucket := rec.S3.Bucket.Name
		// Keys in S3 event notifications are URL-encoded, spaces as "+".
		key, err := url.QueryUnescape(rec.S3.Object.Key)
		if err != nil {
			li.log.Error("access log with an undecodable key skipped", "bucket", bucket, "key", rec.S3.Object.Key, "err", err)
			continue
		}
		id := fmt.Sprintf("%s/%s@%s", bucket, key, rec.S3.Object.ETag)
		if err := li.ingestObject(ctx, id, bucket, key); err != nil {
			li.log.Error("access log not ingested", "log", id, "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (li *Ingester) ingestObject(ctx context.Context, id, bucket, key string) error {
	start := time.Now()
	body, err := li.open.Open(ctx, bucket, key)
	if err != nil {
		return fmt.Errorf("open access log %s: %w", id, err)
	}
	defer body.Close()
	if _, err := li.Ingest(ctx, id, body); err != nil {
		return err
	}
	li.log.Debug("access log object done", "log", id, "duration", time.Since(start).String())
	return nil
}

// New builds the log function's ingester on AWS: reads go to the task
// table's usage pages, log objects are read from whichever bucket an
// event names.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Ingester, error) {
	// The task table only: the log function writes page reads and batch
	// marks, and neither the tile bucket nor the queue is its business.
	awsCfg, err := awsconf.Load(ctx, cfg.AWS.Env, awsconf.WithRetry(core.AWSRetry(cfg.AWS)))
	if err != nil {
		return nil, err
	}
	table := dynamo.New(core.DynamoClient(awsCfg, cfg.AWS), cfg.Table)
	reg, err := core.OpenRegistry(ctx, cfg.Layers, table.Config(), log)
	if err != nil {
		return nil, err
	}
	li, err := NewIngester(cfg, reg.Catalogue(), quota.NewReadLog(table.Usage(), table.ReadMarks()), newBucketOpener(cfg), log)
	if err != nil {
		return nil, err
	}
	li.registry = reg
	return li, nil
}

// newBucketOpener returns an opener with cfg's S3 settings (endpoints,
// credentials, as read at start like those of the other clients).
func newBucketOpener(cfg Config) *bucketOpener {
	return &bucketOpener{cfg: cfg, stores: map[string]*s3store.Store{}}
}

// bucketOpener opens objects of any bucket with the S3 settings of cfg,
// one client per bucket.
type bucketOpener struct {
	cfg    Config
	mu     sync.Mutex
	stores map[string]*s3store.Store
}

func (o *bucketOpener) Open(ctx context.Context, bucket, key string) (io.ReadCloser, error) {
	o.mu.Lock()
	st, ok := o.stores[bucket]
	if !ok {
		var err error
		if st, err = s3store.NewFromEnv(o.cfg.AWS.Env, bucket, "", func(so *s3store.Options) { so.Retry = core.AWSRetry(o.cfg.AWS) }); err != nil {
			o.mu.Unlock()
			return nil, fmt.Errorf("log bucket %s: %w", bucket, err)
		}
		o.stores[bucket] = st
	}
	o.mu.Unlock()
	return st.Open(ctx, key)
}
