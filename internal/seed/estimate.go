// Dry-run estimates of seed, reseed and truncate requests.

package seed

import (
	"context"
	"fmt"
	"math"

	"tilecache/internal/gwc"
	"tilecache/internal/metatile"
	"tilecache/internal/quota"
	"tilecache/internal/task"
)

// Prices are AWS list prices (us-east-1, USD) the estimate uses.
var Prices = struct {
	S3PutPer1000, S3GetPer1000, DynamoDBWritePerMillion, SQSPerMillion, LambdaARMPerGBSecond float64
	Date                                                                                     string
}{0.005, 0.0004, 0.625, 0.40, 0.0000133334, "2026-11"}

// Per-tile and per-lane costs of the engine, measured (seedbench -backend
// aws, EPSG:900913 z0-8, 87,381 tiles, 16 lanes, 8 s checkpoints, which
// reports the writes by operation): DynamoDB writes are time-driven (one
// item per lane every CheckpointEvery, its usage pages every 15th) plus
// about 9 per lane (creation, promotion, lease, finish).
const (
	dynamoWritesPer1000Tiles = 3.0
	dynamoWritesPerLane      = 9.0
	workerMemoryGB           = 1769.0 / 1024
)

// Estimate plans r as Submit would (the same validation and errors) and
// returns what it would cost. A seed's PUTs and upstream requests are
// upper bounds: metatiles whose tiles are all stored are skipped. So are a reseed's
// PUTs: tiles rendered as they are stored are not stored again.
func (pl *Planner) Estimate(ctx context.Context, r gwc.SeedRequest) (gwc.Estimate, error) {
	p, err := pl.Prepare(r)
	if err != nil {
		return gwc.Estimate{}, err
	}
	j, rng := p.Job, p.Job.Range()
	out := gwc.Estimate{Layer: j.Layer, GridSetID: rng.GridSetID, Format: rng.Format, Type: j.Type.String(), Tasks: len(p.Lanes),
		Tiles: p.Plan.Tiles(), Metatiles: p.Plan.Metatiles(), PricesAsOf: Prices.Date}
	for z := rng.ZoomStart; z <= rng.ZoomStop; z++ {
		if lv, ok := p.Plan.Level(z); ok {
			out.Levels = append(out.Levels, gwc.LevelEstimate{Zoom: z, Tiles: lv.Count, Metatiles: lv.Metatiles})
		}
	}
	if p.BoxTiles > 0 {
		out.BoxTiles = p.BoxTiles
		out.Notes = append(out.Notes, fmt.Sprintf("the geometry takes %d tiles, %.1f%% of the %d of its bounding box",
			out.Tiles, 100*float64(out.Tiles)/float64(p.BoxTiles), p.BoxTiles))
	}
	l := p.Layer
	c, capped := pl.sourceOf(l).(metatile.Capped)
	if !capped {
		out.Notes = append(out.Notes, "the layer's source makes no upstream requests")
	}
	switch j.Type {
	case task.Truncate:
		out.S3Deletes = p.Plan.Requested() // the range's tiles, not its metatiles'
		if pl.opts.Usage != nil {
			out.S3Lists, out.S3Reads = pl.sizeLookups(p) // each tile's size, for the disk usage
		}
	default:
		if capped {
			// One request per metatile (a WMS), or per tile (a tile service).
			out.UpstreamRequests = out.Metatiles
			if _, perLane := c.UpstreamCap(l.MetaWidth, l.MetaHeight); perLane > 1 {
				out.UpstreamRequests = out.Tiles
			}
		}
		out.S3Puts = out.Tiles
		if j.Type == task.Seed {
			// Which tiles are missing, learnt as a reseed learns their
			// sizes, in levels that hold tiles (one listing each tells).
			out.S3Lists, out.S3Reads = pl.sizeLookups(p)
			out.S3Lists += int64(rng.ZoomStop - rng.ZoomStart + 1)
			out.Notes = append(out.Notes, "a seed renders only metatiles with missing tiles, and looks for them only in levels that hold tiles: requests and PUTs are upper bounds")
		} else {
			out.S3Lists, out.S3Reads = pl.sizeLookups(p) // the size and MD5 of each replaced tile
			out.Notes = append(out.Notes, "a reseed stores only tiles whose content changed: PUTs are an upper bound, "+
				"and a reseed of unchanged tiles makes the listings and lookups only")
		}
	}
	if avg := pl.averageTileBytes(ctx, j.Layer); avg > 0 && j.Type != task.Truncate {
		out.AvgTileBytes = avg
		out.Bytes = avg * out.Tiles
	}
	rate := pl.rates.of(j.Layer)
	if rate > 0 {
		lanes := float64(min(len(p.Lanes), pl.opts.PoolSize))
		out.TilesPerSecond = rate * lanes
		out.Seconds = float64(out.Tiles) / out.TilesPerSecond
	} else {
		out.Notes = append(out.Notes, "no render rate of the layer measured by this server in the last hour: time and Lambda cost unknown, and left out of the total")
	}
	out.DynamoDBWrites = int64(math.Ceil(float64(out.Tiles)*dynamoWritesPer1000Tiles/1000 + float64(len(p.Lanes))*dynamoWritesPerLane))
	slicesPerLane := int64(1)
	if out.Seconds > 0 {
		slicesPerLane = int64(math.Ceil(out.Seconds / float64(len(p.Lanes)) / pl.opts.Slice.Seconds()))
	}
	out.SQSMessages = int64(len(p.Lanes)) * max(slicesPerLane, 1)
	cost := map[string]float64{
		"s3":       float64(out.S3Puts+out.S3Deletes+out.S3Lists)/1000*Prices.S3PutPer1000 + float64(out.S3Reads)/1000*Prices.S3GetPer1000,
		"dynamodb": float64(out.DynamoDBWrites) / 1e6 * Prices.DynamoDBWritePerMillion,
		"sqs":      float64(out.SQSMessages*3) / 1e6 * Prices.SQSPerMillion, // send, receive, delete
	}
	if out.Seconds > 0 {
		// Every lane's working time on a worker of 1769 MB.
		laneSeconds := float64(out.Tiles) / rate
		cost["lambda"] = laneSeconds * workerMemoryGB * Prices.LambdaARMPerGBSecond
	}
	var total float64
	for _, v := range cost {
		total += v
	}
	cost["total"] = total
	out.CostUSD = cost
	return out, nil
}

// sizeLookups estimates the requests a reseed or truncate makes to learn
// what is stored of the tiles it replaces or deletes, as its lanes do (see
// lane.lookup): per lane and level, one listing of the whole level when it
// is small and that is cheaper, else listings of each column it works in
// where they cost less than one lookup per tile (see metatile.ListColumn), else one
// lookup per tile.
func (pl *Planner) sizeLookups(p Prepared) (lists, heads int64) {
	sub, _ := p.Layer.Subset(p.Job.Range().GridSetID)
	for _, ln := range p.Lanes {
		for z := p.Job.Range().ZoomStart; z <= p.Job.Range().ZoomStop; z++ {
			ahead, ok := p.Plan.Ahead(z, ln.Start, ln.End)
			if !ok {
				continue
			}
			cov, whole, n := metatile.LevelListing(sub, z, ahead)
			switch {
			case whole:
				lists += n
			case !metatile.ListColumn(cov.MaxY-cov.MinY+1, sub.CoverageRange(z).MaxY-sub.CoverageRange(z).MinY+1):
				if c, ok := ahead.Intersect(sub.CoverageRange(z)); ok {
					heads += c.Count()
				}
			default:
				lists += n
			}
		}
	}
	return lists, heads
}

// averageTileBytes is the layer's stored bytes per tile (block-rounded),
// from the disk usage; 0 when unknown.
func (pl *Planner) averageTileBytes(ctx context.Context, layerName string) int64 {
	us, ok := pl.opts.Usage.(interface {
		Layers(ctx context.Context) ([]quota.LayerUsage, error)
	})
	if !ok {
		return 0
	}
	ls, err := us.Layers(ctx)
	if err != nil {
		return 0
	}
	for _, l := range ls {
		if l.Layer == layerName && l.Tiles > 0 {
			return l.Bytes / l.Tiles
		}
	}
	return 0
}
