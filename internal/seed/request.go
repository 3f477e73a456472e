package seed

import (
	"io"

	"tilecache/internal/apperr"
	"tilecache/internal/area"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// MaxThreads is the largest threadCount honoured; larger values are reduced.
const MaxThreads = 128

// The ranges of a request's failure settings (the contract leaves them
// open; these keep every product of them far from overflowing and every
// wait inside a worker's time). A value outside is a 400 naming the field.
const (
	// MaxRetryCount bounds tileFailureRetryCount (−1 and any negative
	// value: no retry, the first failure aborts the task).
	MaxRetryCount = 100
	// MaxRetryWaitMS bounds tileFailureRetryWaitTime (ms; at least 0).
	MaxRetryWaitMS = 600_000
	// MaxFailuresLimit bounds totalFailuresBeforeAborting (at least 0).
	MaxFailuresLimit = 1_000_000_000
)

// Prepared is a validated request: the job to record and its lanes.
type Prepared struct {
	Job   task.Job
	Lanes []task.Lane
	Plan  *grid.Plan
	// AreaData is the prepared area to store under the job's Range().Area, nil when
	// the request has none.
	AreaData []byte
	// BoxTiles is the tiles a request of the area's bounding box alone
	// would work; 0 when the request has no area.
	BoxTiles int64
	// Layer is the layer's definition the request was planned with.
	Layer *layer.Layer
}

// MaxRecordedDefinition bounds the layer definition a job records (it
// shares the job's DynamoDB item, at most 400 KB). A larger one (a big
// coverage geometry) is not recorded: a lane of the job then works with
// the layer as it is, as long as the change keeps the job's numbering.
const MaxRecordedDefinition = 64 << 10

// Prepare validates r against the layer catalogue as contract §4.2–§4.4
// describe and plans it. Errors are apperr.Invalid with the contract's texts.
func (pl *Planner) Prepare(r gwc.SeedRequest) (Prepared, error) {
	// One configuration throughout (layers change at run time).
	layers := pl.layers.Snapshot()
	l, ok := layers.Layer(r.Layer)
	if !ok {
		return Prepared{}, apperr.Invalidf("Unknown layer: %s", r.Layer)
	}
	typ, ok := task.ParseType(r.Type)
	if !ok {
		return Prepared{}, apperr.Invalidf("Unknown type: %s", r.Type)
	}
	if !l.Enabled && typ != task.Truncate {
		// GeoWebCache's switch: the definition stays, the layer is out of
		// service; its tiles may still be truncated.
		return Prepared{}, apperr.Invalidf("Layer %s is disabled (enabled: false in the layer file): it is not seeded", r.Layer)
	}
	sub, err := resolveGridSet(l, r)
	if err != nil {
		return Prepared{}, err
	}
	if r.TileList != nil {
		if r.Geometries != nil {
			return Prepared{}, apperr.Invalidf("give either a geometry or a tile list, not both")
		}
		if r.TileList.GridSetID() != sub.GridSet.ID {
			return Prepared{}, apperr.Invalidf("the tile list is of grid set %s, the request of %s", r.TileList.GridSetID(), sub.GridSet.ID)
		}
		lo, hi := r.TileList.Zooms()
		if r.ZoomStart == nil {
			r.ZoomStart = &lo
		}
		if r.ZoomStop == nil {
			r.ZoomStop = &hi
		}
	}
	zs, zstop, err := zoomRange(sub, r.ZoomStart, r.ZoomStop)
	if err != nil {
		return Prepared{}, err
	}
	format := r.Format
	if format == "" {
		format = l.Formats[0]
	}
	if !l.HasFormat(format) {
		return Prepared{}, apperr.Invalidf("Unsupported format %s for layer %s", format, l.Name)
	}
	bounds := sub.Extent()
	if r.Bounds != nil {
		b := grid.Extent{MinX: r.Bounds[0], MinY: r.Bounds[1], MaxX: r.Bounds[2], MaxY: r.Bounds[3]}
		if !b.Valid() {
			return Prepared{}, apperr.Invalidf("Invalid bounds %v: need four finite numbers minx, miny, maxx, maxy with minx < maxx and miny < maxy", *r.Bounds)
		}
		bounds = b
	}
	var given interface {
		grid.Area
		Bound(zs, ze int) (grid.Extent, bool)
	} // the request's area, if any
	var areaData []byte
	switch {
	case len(r.Geometries) > 0:
		shape, err := prepareArea(sub, r, zs, zstop)
		if err != nil {
			return Prepared{}, err
		}
		if areaData, err = shape.Marshal(); err != nil {
			return Prepared{}, err
		}
		given = shape
	case r.TileList != nil:
		areaData, given = r.TileList.Marshal(), r.TileList
		if _, ok := r.TileList.Bound(zs, zstop); !ok {
			return Prepared{}, apperr.Invalidf("the tile list has no tile at zoom levels %d to %d", zs, zstop)
		}
	}
	if given != nil {
		if bounds, err = clipToArea(bounds, given, zs, zstop); err != nil {
			return Prepared{}, err
		}
	}
	if cov := l.Area(sub.GridSet.ID); cov != nil {
		if bounds, err = clipToArea(bounds, cov, zs, zstop); err != nil {
			return Prepared{}, apperr.Invalidf("the request lies outside layer %s's coverage geometry", l.Name)
		}
	}
	params, err := l.NormaliseParameters(r.Parameters)
	if err != nil {
		return Prepared{}, err
	}
	threads := 1
	if r.ThreadCount != nil && *r.ThreadCount > 1 {
		threads = min(*r.ThreadCount, MaxThreads)
	}
	if typ == task.Truncate {
		threads = 1
	}
	rng := task.Range{
		GridSetID: sub.GridSet.ID, Format: format,
		Parameters: params, ParametersID: tilestore.ParametersID(params),
		Bounds:    [4]float64{bounds.MinX, bounds.MinY, bounds.MaxX, bounds.MaxY},
		ZoomStart: zs, ZoomStop: zstop, MetaWidth: l.MetaWidth, MetaHeight: l.MetaHeight,
		LayerVersion: l.Version,
	}
	rd := task.Render{RetryCount: -1, RetryWaitMS: 100, MaxFailures: 1000}
	if doc, ok := layers.Document(l.Name); ok && l.Version != "" && len(doc) <= MaxRecordedDefinition {
		rng.Definition = string(doc)
	}
	// Every lane learns what is stored of its tiles by listing columns
	// (see lane.lookup): a seed which of them are missing, a reseed or
	// truncate their sizes. Numbered by columns, each lane lists only its
	// own columns, once (every listBandRows rows of a tall one).
	rng.Order = OrderColumns
	if r.RetryCount != nil {
		if *r.RetryCount > MaxRetryCount {
			return Prepared{}, apperr.Invalidf("tileFailureRetryCount %d is above %d", *r.RetryCount, MaxRetryCount)
		}
		rd.RetryCount = max(*r.RetryCount, -1)
	}
	if r.RetryWaitMS != nil {
		if *r.RetryWaitMS < 0 {
			return Prepared{}, apperr.Invalidf("tileFailureRetryWaitTime shall not be negative: %d", *r.RetryWaitMS)
		}
		if *r.RetryWaitMS > MaxRetryWaitMS {
			return Prepared{}, apperr.Invalidf("tileFailureRetryWaitTime %d is above %d (ms)", *r.RetryWaitMS, MaxRetryWaitMS)
		}
		rd.RetryWaitMS = *r.RetryWaitMS
	}
	if r.MaxFailures != nil {
		if *r.MaxFailures < 0 || *r.MaxFailures > MaxFailuresLimit {
			return Prepared{}, apperr.Invalidf("totalFailuresBeforeAborting %d is outside 0 to %d", *r.MaxFailures, MaxFailuresLimit)
		}
		rd.MaxFailures = *r.MaxFailures
	}
	p := Prepared{AreaData: areaData, Layer: l}
	if areaData != nil {
		rng.Area = areaKey(pl.opts.KeyPrefix, areaData)
	}
	var a grid.Area
	if given != nil {
		a = jobArea(l, sub, given)
	} else {
		a = jobArea(l, sub, nil)
	}
	if a != nil {
		box, err := planJob(sub, 0, rng, nil)
		if err != nil {
			return Prepared{}, err
		}
		p.BoxTiles = box.Tiles()
	}
	plan, err := planJob(sub, 0, rng, a)
	if err != nil {
		return Prepared{}, err
	}
	if plan.Metatiles() == 0 {
		return Prepared{}, apperr.Invalidf("the request's area covers no tile of layer %s's grid set %s at zoom levels %d to %d within the bounds", l.Name, sub.GridSet.ID, zs, zstop)
	}
	h := task.Header{Layer: l.Name, Metatiles: plan.Metatiles(), Tiles: plan.Tiles()}
	var job task.Job
	switch typ {
	case task.Truncate:
		job = task.NewTruncate(h, rng)
	case task.Reseed:
		job = task.NewReseed(h, rng, rd)
	default:
		job = task.NewSeed(h, rng, rd)
	}
	split := plan.Split(threads)
	lanes := make([]task.Lane, len(split))
	for i, s := range split {
		lanes[i] = task.Lane{Start: s.Start, End: s.End, Tiles: s.Tiles}
	}
	p.Job, p.Lanes, p.Plan = job, lanes, plan
	return p, nil
}

// OrderColumns is task.Range.Order for metatiles numbered by columns.
const OrderColumns = "columns"

// planJob plans the metatiles of range r (of job id), restricted to a when
// it is not nil (the job's area, which the caller loads).
func planJob(sub *grid.Subset, id int64, r task.Range, a grid.Area) (*grid.Plan, error) {
	b := grid.Extent{MinX: r.Bounds[0], MinY: r.Bounds[1], MaxX: r.Bounds[2], MaxY: r.Bounds[3]}
	order := grid.ByRows
	switch r.Order {
	case "":
	case OrderColumns:
		order = grid.ByColumns
	default:
		return nil, apperr.Invalidf("job %d: unknown metatile order %q", id, r.Order)
	}
	var plan *grid.Plan
	var err error
	if a != nil {
		plan, err = grid.NewPlanArea(sub, b, r.ZoomStart, r.ZoomStop, r.MetaWidth, r.MetaHeight, order, a)
	} else {
		plan, err = grid.NewPlanOrdered(sub, b, r.ZoomStart, r.ZoomStop, r.MetaWidth, r.MetaHeight, order)
	}
	switch {
	case apperr.Is(err, apperr.Invalid):
		return nil, err // an area's limit, which names itself
	case err != nil:
		return nil, apperr.Wrap(apperr.Invalid, err, "cannot plan the request")
	}
	return plan, nil
}

// resolveGridSet applies contract §4.3.
func resolveGridSet(l *layer.Layer, r gwc.SeedRequest) (*grid.Subset, error) {
	switch {
	case r.HasGridSetID:
		s, ok := l.Subset(r.GridSetID)
		if !ok {
			return nil, apperr.Invalidf("Unknown grid set %s for layer %s", r.GridSetID, l.Name)
		}
		return s, nil
	case r.SRS != nil:
		var found []*grid.Subset
		for _, s := range l.Subsets {
			if grid.SameCRS(s.GridSet.EPSG, *r.SRS) {
				found = append(found, s)
			}
		}
		switch len(found) {
		case 0:
			return nil, apperr.Invalidf("No grid set of layer %s uses EPSG:%d", l.Name, *r.SRS)
		case 1:
			return found[0], nil
		default:
			return nil, apperr.Invalidf("More than one grid set of layer %s matches EPSG:%d; gridSetId must be specified", l.Name, *r.SRS)
		}
	default:
		return l.Subsets[0], nil
	}
}

// zoomRange applies the zoom rules of contract §4.2.
func zoomRange(sub *grid.Subset, start, stop *int) (int, int, error) {
	if start == nil {
		return 0, 0, apperr.Invalidf("zoomStart is required")
	}
	if stop == nil {
		return 0, 0, apperr.Invalidf("zoomStop is required")
	}
	zs, ze := *start, *stop
	if zs < 0 {
		return 0, 0, apperr.Invalidf("zoomStart %d is negative", zs)
	}
	if ze < 0 {
		return 0, 0, apperr.Invalidf("zoomStop %d is negative", ze)
	}
	if zs > sub.MaxZoom {
		return 0, 0, apperr.Invalidf("zoomStart %d is above the highest zoom level %d of grid set %s", zs, sub.MaxZoom, sub.GridSet.ID)
	}
	zs = max(zs, sub.MinZoom)
	ze = min(ze, sub.MaxZoom)
	if zs > ze {
		return 0, 0, apperr.Invalidf("zoomStart %d is greater than zoomStop %d", zs, ze)
	}
	return zs, ze, nil
}

// ReadTileList reads a list of tiles for a request r of a layer (its
// grid set as Prepare resolves it), naming the metatiles of the layer's
// size that hold them.
func (pl *Planner) ReadTileList(r gwc.SeedRequest, list io.Reader, o area.ListOptions) (*area.TileList, error) {
	l, ok := pl.layers.Layer(r.Layer)
	if !ok {
		return nil, apperr.Invalidf("Unknown layer: %s", r.Layer)
	}
	sub, err := resolveGridSet(l, r)
	if err != nil {
		return nil, err
	}
	o.MetaW, o.MetaH = l.MetaWidth, l.MetaHeight
	return area.ReadTileList(list, sub.GridSet, o)
}
