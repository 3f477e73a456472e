// Package task holds the seed task model and the task store port.
//
// A seed or reseed request with threadCount N becomes a Job and N Tasks; a
// truncate becomes a Job and one Task. Each task owns a lane: a contiguous
// range [Start, End) of the job's numbered metatiles (see grid.Plan). Its
// progress is one cursor, the index of the next metatile to work, and a count
// of tiles processed. Workers advance the cursor only through Checkpoint, a
// conditional write that fails when the task is no longer RUNNING or when
// another worker moved the cursor first; that is what makes redelivered or
// duplicated lane messages harmless.
package task

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"tilecache/internal/quota"
)

// Type is what a job does to its tiles.
type Type int

// The job types of the contract (§4.2).
const (
	Seed Type = iota
	Reseed
	Truncate
)

// Export is the type of an export: a layer's stored tiles written to an
// archive (NewExport). Its own block: the contract's types above are
// GeoWebCache's, the ones from here on this project's.
const Export Type = 3

// Import is the type of an archive's import (NewImport); it is no type a
// seed request may ask for (ParseType does not read it).
const Import Type = 4

// ParseType reads a request's type, case-insensitively; "" means Seed.
func ParseType(s string) (Type, bool) {
	switch strings.ToLower(s) {
	case "", "seed":
		return Seed, true
	case "reseed":
		return Reseed, true
	case "truncate":
		return Truncate, true
	}
	return 0, false
}

// String returns the upper-case name used in kill responses (SEED, RESEED, TRUNCATE).
func (t Type) String() string {
	switch t {
	case Reseed:
		return "RESEED"
	case Truncate:
		return "TRUNCATE"
	case Export:
		return "EXPORT"
	case Import:
		return "IMPORT"
	default:
		return "SEED"
	}
}

// Status is a task's state; the numeric values are the contract's codes.
type Status int

// The task states of contract §5.2.
const (
	Aborted Status = -1
	Pending Status = 0
	Running Status = 1
	Done    Status = 2
)

// String returns the upper-case name used in kill responses.
func (s Status) String() string {
	switch s {
	case Aborted:
		return "ABORTED"
	case Pending:
		return "PENDING"
	case Running:
		return "RUNNING"
	case Done:
		return "DONE"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Active reports whether the task still has work to do (PENDING or RUNNING).
func (s Status) Active() bool { return s == Pending || s == Running }

// Job is a validated, normalised request, shared by its tasks: a header
// every job has, and the part of its kind. There are four kinds:
//
//   - a seed or reseed (NewSeed, NewReseed): the tiles it works (Range)
//     and how it renders them (Render);
//   - a truncate (NewTruncate): the tiles it deletes (Range);
//   - a layer deletion (NewLayerDeletion): a TRUNCATE of every object
//     under a deleted layer's key prefix (Prefix), whatever the catalogue
//     says (the layer is no longer in it). Its one lane is worked by
//     listing the prefix page by page from the task's key cursor
//     (Task.After); its Tiles is an estimate (the layer's counted tiles
//     when it was deleted, at least 1);
//   - an export (NewExport): the stored tiles of Range written to an
//     archive of kind Archive, in one lane;
//   - an import (NewImport): the tiles of an archive copied into a tile
//     set (Range) from where it lies (ImportSource), in one lane.
//
// The kind parts are read through Range, Render and Prefix, and set only by
// the constructors (and WithEmptyLevels), so that no job has a part its
// kind does not have: a part a kind lacks reads as its zero value. A Job of
// a Header alone is a seed of no tiles (the task stores' tests make them).
//
// A job records everything needed to rebuild the request's metatile
// numbering, so a worker started later (or in another process) numbers
// metatiles identically. In the stores it is one flat JSON document, the
// same for every kind (see MarshalJSON).
type Job struct {
	Header
	rng     Range
	render  Render
	prefix  string
	archive string
	publish bool
	imp     ImportSource
}

// Header is what every job has.
type Header struct {
	ID        int64  // the id of its first task
	Layer     string // the layer's name
	Type      Type   // set by the constructors
	Metatiles int64  // size of the numbering, to detect a changed layer
	Tiles     int64  // request total
	Lanes     int    // number of tasks; their ids are ID … ID+Lanes−1
	Created   time.Time
	// SubmittedBy names who submitted the request (the account, or the
	// token of an account, as auth.Principal.String words it); empty
	// for a request submitted by no principal (a schedule's run).
	SubmittedBy string
}

// Range is the tiles a seed, reseed or truncate works, and how its
// metatiles are numbered.
type Range struct {
	GridSetID    string
	Format       string
	Parameters   map[string]string // normalised; empty = defaults
	ParametersID string
	Bounds       [4]float64 // minx, miny, maxx, maxy in the grid set's CRS
	ZoomStart    int
	ZoomStop     int
	MetaWidth    int
	MetaHeight   int
	// Order numbers each level's metatiles: "" by rows, "columns" by
	// columns (see grid.Order), so that a lane that lists what is stored
	// lists whole columns.
	Order string
	// Area is the key of the request's area in the tile store when the
	// request is restricted to one (a geometry): workers plan only the
	// metatiles holding its tiles. Stored areas never change.
	Area string
	// LayerVersion is the layer's Version when the request was made, and
	// Definition its definition then (layer.Catalogue.Document; empty when
	// larger than seed.MaxRecordedDefinition): a lane works with the
	// definition its request started with, whatever changed since.
	LayerVersion string
	Definition   string
}

// Render is how a seed or reseed renders its tiles.
type Render struct {
	// Failure handling, as GeoWebCache's request fields (§4.2).
	RetryCount  int // -1: the first tile failure aborts
	RetryWaitMS int // between tries
	MaxFailures int // failures shared by the job's tasks before all abort
	// EmptyLevels (a seed's only) are the zoom levels at which the tile
	// set held no tile when the seed was submitted. Workers render them
	// without existence checks: tiles written since are the job's own, in
	// other metatiles (or another job's, and rewriting an identical tile
	// is harmless).
	EmptyLevels []int
}

// NewSeed returns a seed job of h over r, rendered as rd.
func NewSeed(h Header, r Range, rd Render) Job {
	h.Type = Seed
	return Job{Header: h, rng: r, render: rd}
}

// NewReseed returns a reseed job of h over r, rendered as rd (a reseed
// has no empty levels: it renders every metatile).
func NewReseed(h Header, r Range, rd Render) Job {
	h.Type = Reseed
	rd.EmptyLevels = nil
	return Job{Header: h, rng: r, render: rd}
}

// NewTruncate returns a truncate job of h over r.
func NewTruncate(h Header, r Range) Job {
	h.Type = Truncate
	return Job{Header: h, rng: r}
}

// NewLayerDeletion returns the truncation of every object under prefix, a
// deleted layer's key prefix (h.Layer its name).
func NewLayerDeletion(h Header, prefix string) Job {
	h.Type = Truncate
	return Job{Header: h, prefix: prefix}
}

// NewExport returns an export of the tiles of r stored, written to an
// archive of kind archive ("pmtiles", "mbtiles" or "gpkg"); it has one
// lane.
func NewExport(h Header, r Range, archive string) Job {
	h.Type = Export
	return Job{Header: h, rng: r, archive: archive}
}

// NewPublishedExport returns an export of the tiles of r stored to the
// tile set's PMTiles archive, which is served as the tile set's own
// (Published).
func NewPublishedExport(h Header, r Range) Job {
	j := NewExport(h, r, "pmtiles")
	j.publish = true
	return j
}

// Archive returns the kind of archive an export writes ("" for the other
// kinds).
func (j Job) Archive() string { return j.archive }

// Published reports whether an export writes the tile set's served
// PMTiles archive rather than a private one.
func (j Job) Published() bool { return j.publish }

// ImportSource is the archive an import (NewImport) copies into its
// tile set (Range: grid set, format, parameters, levels).
type ImportSource struct {
	// Archive is the archive's location as the request gave it: a file
	// path, s3://bucket/key or an https:// URL.
	Archive string
	// Kind is "pmtiles" or "mbtiles".
	Kind string
	// Version is what the archive was when the import was submitted
	// (an ETag, a file's size and time; "" when unknown): a lane that
	// finds another stops rather than mix two archives' tiles.
	Version string
	// EmptyLevels are the levels at which the tile set held no tile when
	// the import was submitted: its lane stores there without looking
	// (as a seed's, Render.EmptyLevels).
	EmptyLevels []int
}

// NewImport returns the import of the archive im into the tile set of r
// (its grid set, format, parameters and levels; the other fields are
// unused). Its one lane's cursor counts the archive's tiles inside the
// levels, in the archive's own order; h.Tiles is their number.
func NewImport(h Header, r Range, im ImportSource) Job {
	h.Type = Import
	return Job{Header: h, rng: r, imp: im}
}

// ImportSource returns the archive an import copies (zero for the other
// kinds).
func (j Job) ImportSource() ImportSource { return j.imp }

// Range returns the tiles the job works (zero for a layer deletion).
func (j Job) Range() Range { return j.rng }

// Render returns how the job renders (zero but for a seed or reseed).
func (j Job) Render() Render { return j.render }

// Prefix returns the key prefix a layer deletion truncates ("" for the
// other kinds).
func (j Job) Prefix() string { return j.prefix }

// LayerDeletion reports whether the job is a layer deletion.
func (j Job) LayerDeletion() bool { return j.prefix != "" }

// WithEmptyLevels returns the job with its empty levels set to levels, when
// it is a seed (other jobs are returned as they are).
func (j Job) WithEmptyLevels(levels []int) Job {
	if j.Type == Seed && !j.LayerDeletion() {
		j.render.EmptyLevels = levels
	}
	return j
}

// jobDocument is a job as the stores keep it: one flat JSON object for
// every kind, the fields a kind lacks left out or zero (the layout jobs
// were first stored in, which stored jobs keep).
type jobDocument struct {
	ID           int64             `json:"id"`
	Layer        string            `json:"layer"`
	Type         Type              `json:"type"`
	GridSetID    string            `json:"gridSet"`
	Format       string            `json:"format"`
	Parameters   map[string]string `json:"parameters,omitempty"`
	ParametersID string            `json:"parametersId"`
	Bounds       [4]float64        `json:"bounds"`
	ZoomStart    int               `json:"zoomStart"`
	ZoomStop     int               `json:"zoomStop"`
	MetaWidth    int               `json:"metaWidth"`
	MetaHeight   int               `json:"metaHeight"`
	Metatiles    int64             `json:"metatiles"`
	Tiles        int64             `json:"tiles"`
	Lanes        int               `json:"lanes"`
	Order        string            `json:"order,omitempty"`
	EmptyLevels  []int             `json:"emptyLevels,omitempty"`
	Area         string            `json:"area,omitempty"`
	RetryCount   int               `json:"retryCount"`
	RetryWaitMS  int               `json:"retryWaitMs"`
	MaxFailures  int               `json:"maxFailures"`
	Created      time.Time         `json:"created"`
	LayerVersion string            `json:"layerVersion,omitempty"`
	Definition   string            `json:"definition,omitempty"`
	Prefix       string            `json:"prefix,omitempty"`
	SubmittedBy  string            `json:"submittedBy,omitempty"`
	// An export's archive kind (NewExport), or an import's location
	// (NewImport), with its kind and version.
	Archive        string `json:"archive,omitempty"`
	Publish        bool   `json:"publish,omitempty"`
	ArchiveKind    string `json:"archiveKind,omitempty"`
	ArchiveVersion string `json:"archiveVersion,omitempty"`
}

// MarshalJSON writes the job as the stores keep it (jobDocument).
func (j Job) MarshalJSON() ([]byte, error) {
	h, r, rd := j.Header, j.rng, j.render
	archive := j.archive // an export's kind; an import's location
	if h.Type == Import {
		rd.EmptyLevels = j.imp.EmptyLevels // the one field of empty levels
		archive = j.imp.Archive
	}
	return json.Marshal(jobDocument{
		ID: h.ID, Layer: h.Layer, Type: h.Type, Metatiles: h.Metatiles, Tiles: h.Tiles, Lanes: h.Lanes, Created: h.Created,
		GridSetID: r.GridSetID, Format: r.Format, Parameters: r.Parameters, ParametersID: r.ParametersID, Bounds: r.Bounds,
		ZoomStart: r.ZoomStart, ZoomStop: r.ZoomStop, MetaWidth: r.MetaWidth, MetaHeight: r.MetaHeight, Order: r.Order,
		Area: r.Area, LayerVersion: r.LayerVersion, Definition: r.Definition,
		RetryCount: rd.RetryCount, RetryWaitMS: rd.RetryWaitMS, MaxFailures: rd.MaxFailures, EmptyLevels: rd.EmptyLevels,
		Prefix: j.prefix, SubmittedBy: h.SubmittedBy, Archive: archive, Publish: j.publish,
		ArchiveKind: j.imp.Kind, ArchiveVersion: j.imp.Version,
	})
}

// UnmarshalJSON reads a job as the stores keep it (jobDocument): its kind
// follows from its type and prefix, and the fields its kind lacks are
// ignored.
func (j *Job) UnmarshalJSON(data []byte) error {
	var d jobDocument
	if err := json.Unmarshal(data, &d); err != nil {
		return err
	}
	h := Header{ID: d.ID, Layer: d.Layer, Type: d.Type, Metatiles: d.Metatiles, Tiles: d.Tiles, Lanes: d.Lanes, Created: d.Created, SubmittedBy: d.SubmittedBy}
	r := Range{GridSetID: d.GridSetID, Format: d.Format, Parameters: d.Parameters, ParametersID: d.ParametersID, Bounds: d.Bounds,
		ZoomStart: d.ZoomStart, ZoomStop: d.ZoomStop, MetaWidth: d.MetaWidth, MetaHeight: d.MetaHeight, Order: d.Order,
		Area: d.Area, LayerVersion: d.LayerVersion, Definition: d.Definition}
	rd := Render{RetryCount: d.RetryCount, RetryWaitMS: d.RetryWaitMS, MaxFailures: d.MaxFailures, EmptyLevels: d.EmptyLevels}
	switch {
	case d.Prefix != "":
		*j = NewLayerDeletion(h, d.Prefix)
	case d.Type == Export && d.Publish:
		*j = NewPublishedExport(h, r)
	case d.Type == Export:
		*j = NewExport(h, r, d.Archive)
	case d.Type == Import:
		*j = NewImport(h, r, ImportSource{Archive: d.Archive, Kind: d.ArchiveKind, Version: d.ArchiveVersion, EmptyLevels: d.EmptyLevels})
	case d.Type == Truncate:
		*j = NewTruncate(h, r)
	case d.Type == Reseed:
		*j = NewReseed(h, r, rd)
	default:
		*j = NewSeed(h, r, rd)
	}
	return nil
}

// Lane is the part of a job one task owns: metatiles [Start, End) holding Tiles tiles.
type Lane struct {
	Start, End int64
	Tiles      int64
}

// Task is one lane of a job and its progress.
type Task struct {
	ID     int64  `json:"id"`
	JobID  int64  `json:"job"`
	Layer  string `json:"layer"`
	Type   Type   `json:"type"`
	Status Status `json:"status"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Cursor int64  `json:"cursor"` // next metatile to work; Start ≤ Cursor ≤ End
	Total  int64  `json:"total"`  // tiles in the lane; never changes
	Done   int64  `json:"done"`   // tiles processed; never decreases
	// Heartbeat is the time of the last promotion or checkpoint; a RUNNING
	// task whose heartbeat is old has lost its worker and is re-enqueued.
	Heartbeat time.Time `json:"heartbeat"`
	Created   time.Time `json:"created"`
	Finished  time.Time `json:"finished,omitzero"`
	// Killed is set when a kill request aborted the task.
	Killed bool `json:"killed,omitempty"`
	// Owner holds the lease of a RUNNING task: the token of the one worker
	// allowed to work its lane (see Store.Acquire). Empty when none holds
	// it. The lease lapses when the heartbeat grows older than its TTL.
	Owner string `json:"owner,omitempty"`
	// WriteToken is the Token of the last checkpoint that carried one:
	// a checkpoint retried after its answer was lost recognises itself by
	// it (see Store.Checkpoint).
	WriteToken string `json:"writeToken,omitempty"`
	// After is the key cursor of a layer deletion (see
	// Job.Prefix): the last key it deleted, from which its listing
	// resumes. Empty for other tasks, and before the first page.
	After string `json:"after,omitempty"`
}

// Row is the task's status row of contract §5.2:
// [processed, lane total, remaining, id, status].
func (t Task) Row() [5]int64 {
	done := t.Done
	if t.Status == Pending {
		done = 0
	}
	return [5]int64{done, t.Total, t.Total - done, t.ID, int64(t.Status)}
}

// Checkpoint advances a RUNNING task's cursor from From to To, adding Tiles
// to its processed count.
type Checkpoint struct {
	ID       int64
	From, To int64
	Tiles    int64
	// Usage are the disk-usage changes of the tiles the lane stored and
	// deleted in metatiles [From, To), at most MaxCheckpointPages pages.
	// They are applied in the same atomic step as the checkpoint, so a
	// replayed checkpoint (which fails its condition) never counts twice.
	Usage []quota.PageDelta
	// Owner, when set, fences the checkpoint: it applies only while Owner
	// holds the task's lease, which it keeps (or gives up with Release). A
	// checkpoint without Owner (the sweep's) revokes any lease.
	Owner   string
	Release bool
	// Token, when set, names this write: a checkpoint applied once whose
	// answer was lost (a connection reset after the store committed it)
	// and that is sent again with the same Token succeeds again, applying
	// nothing more, instead of failing its condition. The caller makes a
	// new token for each checkpoint and keeps it across its retries.
	Token string
	// After, when set, becomes the task's key cursor (Task.After) with
	// the checkpoint.
	After string
}

// MaxCheckpointPages is the most page deltas one checkpoint carries: with
// the task and its layer's totals it keeps a DynamoDB transaction within
// its 100 items. Workers checkpoint early rather than exceed it.
const MaxCheckpointPages = 96

// Store is the task store port. Implementations must pass tasktest.Run.
//
// Conditional operations fail with an apperr.Conflict error when their
// condition does not hold; a missing task or job is apperr.NotFound.
type Store interface {
	// Create stores job and one PENDING task per lane, taking len(lanes)
	// consecutive ids from the global sequence in one atomic step. The job's
	// ID is set to the first task id. Nothing is stored on error.
	Create(ctx context.Context, job Job, lanes []Lane, now time.Time) (Job, []Task, error)
	// Job returns a job by id.
	Job(ctx context.Context, id int64) (Job, error)
	// Get returns a task by id.
	Get(ctx context.Context, id int64) (Task, error)
	// List returns every PENDING and RUNNING task plus the tasks that
	// finished at or after finishedSince, sorted by id. The tasks carry at
	// least their listed fields: ID, JobID, Layer, Type, Status, Cursor,
	// Total, Done, Heartbeat, Created, Finished and Killed, what the
	// status, the sweep, the dispatch and render on miss (which tasks
	// were submitted since a render began) use; a store may leave the
	// others zero (Get reads a whole task), so a status call reads only
	// these.
	List(ctx context.Context, finishedSince time.Time) ([]Task, error)
	// Promote moves the oldest PENDING tasks to RUNNING while fewer than
	// pool tasks are RUNNING, and returns the promoted tasks (with at
	// least their listed fields, as List). A task whose layer already has
	// laneCap(layer) RUNNING tasks stays PENDING (the next task is
	// considered); laneCap nil or ≤ 0 means no cap. Both limits hold
	// across every process sharing the store.
	Promote(ctx context.Context, pool int, laneCap func(layer string) int, now time.Time) ([]Task, error)
	// Checkpoint applies cp if the task is RUNNING with cursor cp.From, sets
	// its heartbeat to now and returns the updated task; Conflict otherwise.
	// A cp whose Token is the task's WriteToken was applied already: it
	// returns the task as it is and changes nothing (usage included).
	// cp.Usage is applied to the usage store (quota.UsageStore) in the same
	// atomic step, or not at all; more than MaxCheckpointPages deltas is
	// Invalid.
	Checkpoint(ctx context.Context, cp Checkpoint, now time.Time) (Task, error)
	// Acquire gives a RUNNING task's lease to owner when nobody holds it or
	// its holder's heartbeat is older than ttl, sets the heartbeat to now
	// and returns the task; Conflict when the task is not RUNNING or a
	// live holder other than owner has the lease (an Acquire retried by its
	// owner after a lost answer succeeds again).
	Acquire(ctx context.Context, id int64, owner string, ttl time.Duration, now time.Time) (Task, error)
	// Finish moves a RUNNING task whose cursor is at the end of its lane to
	// DONE, or any RUNNING task to ABORTED, freeing its thread; Conflict
	// when the task is not RUNNING.
	Finish(ctx context.Context, id int64, status Status, now time.Time) (Task, error)
	// Kill moves a task whose status is expect (PENDING or RUNNING) to
	// ABORTED with Killed set, freeing its thread if it was RUNNING, and
	// returns the task as it was before; Conflict when its status differs.
	Kill(ctx context.Context, id int64, expect Status, now time.Time) (Task, error)
	// AddFailures adds n tile failures to a job and returns the job's total.
	AddFailures(ctx context.Context, jobID int64, n int64) (int64, error)
	// KilledAt records the processed count a killed task's lane reached
	// after its last checkpoint (the tiles it stored are stored, and the
	// status rows should say so): Done becomes done when that is more,
	// at most the lane's total. Conflict when the task is not ABORTED by
	// a kill; a smaller count changes nothing.
	KilledAt(ctx context.Context, id int64, done int64) error
}
