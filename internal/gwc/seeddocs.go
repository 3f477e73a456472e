package gwc

import "tilecache/internal/area"

// The documents the seed engine takes and answers, as the REST interface
// decodes and encodes them: a seed request (DecodeSeedRequest*), and the
// estimate of one (this project's POST /rest/estimate, which the command
// line decodes too). The engine (internal/seed) plans and prices them; it
// imports this package, never the other way round.

// SeedRequest is a seed request as decoded from the wire, before validation.
// Pointers are nil when the field was absent.
type SeedRequest struct {
	Layer        string
	GridSetID    string
	HasGridSetID bool
	SRS          *int
	Bounds       *[4]float64
	ZoomStart    *int
	ZoomStop     *int
	Format       string
	Type         string
	ThreadCount  *int
	Parameters   [][2]string
	RetryCount   *int
	RetryWaitMS  *int
	MaxFailures  *int
	// Geometries restrict the request to areas (see Geometry).
	Geometries []Geometry
	// TileList restricts the request to the metatiles of a list of tiles
	// (the engine's Planner.ReadTileList reads one).
	TileList *area.TileList
}

// Geometry is an area of a request: GeoJSON or WKT text, in the
// request's srs (EPSG:4326 when it gives none; an EWKT SRID wins),
// buffered by Buffer metres, for levels ZoomStart to ZoomStop (both nil:
// every level of the request).
type Geometry struct {
	Text                string
	Buffer              float64
	ZoomStart, ZoomStop *int
}

// LevelEstimate is one zoom level of an estimate.
type LevelEstimate struct {
	Zoom      int   `json:"zoom"`
	Tiles     int64 `json:"tiles"`
	Metatiles int64 `json:"metatiles"`
}

// Estimate is what a request would cost, without submitting it: the JSON
// answer of the dry-run extension (POST /rest/estimate), which the command
// line decodes into the same type. Tile counts are exact: the tasks'
// totals of the same request add up to Tiles. Bytes, TilesPerSecond and
// Seconds are 0 when unknown (the layer holds no tiles yet, or no lane of
// it ran in this process recently), and CostUSD has no "lambda" while the
// layer's render rate is unknown.
type Estimate struct {
	Layer     string `json:"layer"`
	GridSetID string `json:"gridSetId"`
	Format    string `json:"format"`
	Type      string `json:"type"`
	Tasks     int    `json:"tasks"`
	Tiles     int64  `json:"tiles"`
	Metatiles int64  `json:"metatiles"`
	// BoxTiles is, for a request restricted to a geometry, the tiles its
	// bounding box alone would have planned.
	BoxTiles         int64              `json:"boxTiles,omitempty"`
	Levels           []LevelEstimate    `json:"levels"`
	UpstreamRequests int64              `json:"upstreamRequests"`
	S3Puts           int64              `json:"s3Puts"`
	S3Reads          int64              `json:"s3Reads"` // existence checks and size lookups (HEAD)
	S3Lists          int64              `json:"s3Lists"` // listings that learn stored sizes and MD5s (billed like PUTs)
	S3Deletes        int64              `json:"s3Deletes"`
	DynamoDBWrites   int64              `json:"dynamoDBWrites"`
	SQSMessages      int64              `json:"sqsMessages"`
	AvgTileBytes     int64              `json:"avgTileBytes"`
	Bytes            int64              `json:"bytes"`
	TilesPerSecond   float64            `json:"tilesPerSecond"`
	Seconds          float64            `json:"seconds"`
	CostUSD          map[string]float64 `json:"costUSD"` // US dollars by service ("s3", "dynamodb", "sqs", "lambda") and in "total"
	PricesAsOf       string             `json:"pricesAsOf"`
	Notes            []string           `json:"notes"`
}
