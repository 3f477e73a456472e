package rest

import (
	"context"
	"io"
	"time"

	"tilecache/internal/account"
	"tilecache/internal/apitoken"
	"tilecache/internal/area"
	"tilecache/internal/auth"
	"tilecache/internal/grid"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/schedule"
	"tilecache/internal/seed"
	"tilecache/internal/task"
	"tilecache/internal/tilestore"
)

// The seeding side's calls the handlers make, one interface per call,
// grouped by who answers them: Planner (seed.Planner), Tasks
// (seed.Control and seed.Truncation) and Layers (layer.Catalogue). A
// request the client got wrong is an apperr.Invalid error whose message is
// answered as it is.

// Submitter takes seed, reseed and truncate requests.
type Submitter interface {
	// Submit validates and records r and starts what the pool allows; it
	// returns the created tasks as they are after that first dispatch. A
	// rejected request records nothing.
	Submit(ctx context.Context, r gwc.SeedRequest) ([]task.Task, error)
}

// TileListReader reads the tile list of a seed request.
type TileListReader interface {
	// ReadTileList reads list as the tiles of request r (its layer and
	// grid set), naming the metatiles that hold them.
	ReadTileList(r gwc.SeedRequest, list io.Reader, o area.ListOptions) (*area.TileList, error)
}

// Estimator plans a seed request without submitting it.
type Estimator interface {
	// Estimate plans r as Submit would (the same validation and errors)
	// and returns what it would cost; nothing is recorded.
	Estimate(ctx context.Context, r gwc.SeedRequest) (gwc.Estimate, error)
}

// TaskLister lists tasks.
type TaskLister interface {
	// List returns the listed tasks (contract §5.1) of layer, or of every
	// layer when layer is ""; none is an empty list, not an error.
	List(ctx context.Context, layer string) ([]task.Task, error)
}

// TaskKiller terminates tasks.
type TaskKiller interface {
	// Kill terminates the tasks of set, of layer or of every layer when
	// layer is ""; it returns the terminated tasks as they were before and
	// the listed tasks that had already finished.
	Kill(ctx context.Context, layer string, set seed.KillSet) (killed, finished []task.Task, err error)
}

// MassTruncater deletes every tile of a layer.
type MassTruncater interface {
	// MassTruncate deletes every object of layer before it returns and
	// reports how many it deleted; an unknown layer is Invalid.
	MassTruncate(ctx context.Context, layer string) (int64, error)
	// StartDeletion records (and starts when the pool allows) the
	// background truncation of the tiles of a layer just deleted with the
	// deletion mark d, and returns its task.
	StartDeletion(ctx context.Context, d layer.Deletion) (task.Task, error)
}

// Planner plans seed requests, recording no task, and finds (and
// removes) what a layer change orphaned (seed.Planner).
type Planner interface {
	Estimator
	Preparer
	TileListReader
	OrphanFinder
}

// Tasks runs requests as tasks and answers for them (seed.Control, with
// seed.Truncation's mass truncation and layer deletion).
type Tasks interface {
	Submitter
	TaskLister
	TaskKiller
	OneTaskKiller
	MassTruncater
}

// Layers is the layer catalogue (layer.Catalogue).
type Layers interface {
	LayerFinder
	LayerCatalogue
	LayerIDs
}

// deletionMarks tells the layers deleted with their tiles whose
// truncation has not ended (layer.Catalogue does): their names are still
// listed and killed on /rest/seed/{layer}, and cannot be created again.
type deletionMarks interface {
	Deleting(name string) (layer.Deletion, bool)
}

// deletingOf returns the deletion mark of layer name, if layers keeps
// them.
func deletingOf(layers Layers, name string) (layer.Deletion, bool) {
	if m, ok := layers.(deletionMarks); ok {
		return m.Deleting(name)
	}
	return layer.Deletion{}, false
}

// LayerFinder finds configured layers by name (layer.Catalogue does).
type LayerFinder interface {
	// Layer returns the layer called name; ok is false when there is none.
	Layer(name string) (l *layer.Layer, ok bool)
}

// Services are what the handler's routes call, each narrowed to those
// calls; each is required by the routes noted beside it. The seeding side
// is three values: the planner, the tasks and the layers.
type Services struct {
	// Planner: POST /rest/estimate/{layer}, the tile list of POST
	// /rest/seed/{layer} (nil: tile lists are not taken), the dry run of
	// POST /rest/schedules, and the orphans of layer and grid set writes.
	Planner Planner
	// Tasks: POST /rest/seed/{layer} (kill requests included),
	// GET /rest/seed.json and /rest/seed/{layer}, POST /rest/masstruncate,
	// and the truncation of a layer deleted with its tiles.
	Tasks Tasks
	// Layers: GET /rest/layers and /rest/gridsets, which layers a path or
	// a read may name, and the layer ids of reads from access logs.
	Layers Layers

	Quota     quota.ConfigStore // /rest/diskquota
	Schedules ScheduleStore     // /rest/schedules
	// Editor serves PUT, POST and DELETE of /rest/layers/… and
	// /rest/gridsets/… (nil: 405, the layer file is all there is).
	Editor LayerEditor
	// Tokens: /rest/tokens (nil: 404, no tokens are kept).
	Tokens TokenStore
	// Accounts: /rest/accounts, the accounts added at run time (nil: 404,
	// none are kept); Configured, the accounts of the accounts file or
	// secret, listed there and never changed.
	Accounts   AccountStore
	Configured ConfiguredAccounts
	// Imports: POST /rest/import/{layer}.json (nil: 404, no imports).
	Imports Importer
}

// The calls of the other resources, one small interface per call, here
// with the seeding side's so that every resource's file refers down to
// this one: the layers and grid sets, the accounts, tokens and schedules,
// and the disk quota's (Options: Usage, Reads, Pages).

// LayerIDs finds layers by their store id (layer.Catalogue does).
type LayerIDs interface {
	ByID(id string) (l *layer.Layer, ok bool)
}

// ReadRecorder records reads of tiles counted from access logs, each batch
// once (quota.ReadLog does).
type ReadRecorder interface {
	Record(ctx context.Context, id string, reads []quota.Access) (dup bool, err error)
}

// AccountStore keeps the accounts added at run time (account.Store).
type AccountStore interface {
	Create(ctx context.Context, a account.Account) error
	Get(ctx context.Context, name string) (account.Account, error)
	List(ctx context.Context) ([]account.Account, error)
	Update(ctx context.Context, a account.Account) error
	Delete(ctx context.Context, name string) error
}

// ConfiguredAccounts are the accounts of the accounts file or secret
// (auth.Authenticator).
type ConfiguredAccounts interface {
	Configured() []auth.Account
	IsConfigured(name string) bool
}

// LayerCatalogue is what the layer and grid set resources read: the
// configured layers and grid sets (layer.Catalogue has it).
type LayerCatalogue interface {
	// Names lists the layers in configuration order.
	Names() []string
	// Layer returns the layer called name.
	Layer(name string) (*layer.Layer, bool)
	// GridSetIDs lists every grid set, built in or configured.
	GridSetIDs() []string
	// GridSet returns a grid set and what its entry says beyond the grid.
	GridSet(id string) (*grid.GridSet, layer.GridSetInfo, bool)
	// GridSetVersion fingerprints a custom grid set ("" for a built-in).
	GridSetVersion(id string) string
}

// LayerEditor changes the configuration managed at run time
// (layer.Registry does).
type LayerEditor interface {
	// Update runs edit on the stored configuration's document and the
	// catalogue it makes, saves the result if it is valid, and returns the
	// new catalogue; see layer.Registry.Update.
	Update(ctx context.Context, edit func(doc *layer.Config, current *layer.Catalogue) error) (*layer.Catalogue, error)
}

// OrphanFinder finds (and deletes) the tiles a layer change orphaned
// (seed.Planner does).
type OrphanFinder interface {
	Orphans(ctx context.Context, old, next *layer.Layer, regridded map[string]bool, remove bool) (seed.OrphanReport, error)
}

// PageReader reads the disk quota's usage pages (the usage store does).
type PageReader interface {
	// LevelPages reads the pages of one level of a tile set by key prefix
	// (quota.PageStore).
	LevelPages(ctx context.Context, set tilestore.SetName, z int, after string, limit int) ([]quota.Page, string, error)
	// PagesInOrder reads a layer's pages in expiration order
	// (quota.PageStore).
	PagesInOrder(ctx context.Context, layer, policy, cursor string, limit int) ([]quota.Page, string, error)
}

// ScheduleStore keeps schedules (schedule.Store's calls the handlers make).
type ScheduleStore interface {
	// CreateSchedule stores s; apperr.Conflict when the name is taken or
	// the store holds schedule.MaxSchedules schedules.
	CreateSchedule(ctx context.Context, s schedule.Schedule) error
	// Schedule returns the named schedule; apperr.NotFound when none, an
	// error wrapping schedule.ErrUnreadable when it does not decode.
	Schedule(ctx context.Context, name string) (schedule.Schedule, error)
	// Schedules returns every schedule that decodes, by name, and those
	// that do not.
	Schedules(ctx context.Context) ([]schedule.Schedule, []schedule.Unreadable, error)
	// DeleteSchedule removes the named schedule; apperr.NotFound when none.
	DeleteSchedule(ctx context.Context, name string) error
}

// Preparer validates a seed request without recording anything.
type Preparer interface {
	// Prepare validates and plans r as Submit would; a request the client
	// got wrong is apperr.Invalid.
	Prepare(r gwc.SeedRequest) (seed.Prepared, error)
}

// OneTaskKiller terminates one task (seed.Control does).
type OneTaskKiller interface {
	// KillTask terminates task id when PENDING or RUNNING, of layer (any
	// when ""); it returns the task as it was before, or as it is when it
	// had already finished (killed false). An unknown id is NotFound, a
	// task of another layer Invalid.
	KillTask(ctx context.Context, layer string, id int64) (t task.Task, killed bool, err error)
}

// TokenStore keeps the API tokens (apitoken.Store).
type TokenStore interface {
	Create(ctx context.Context, t apitoken.Token) error
	List(ctx context.Context) ([]apitoken.Token, error)
	Revoke(ctx context.Context, id string, at time.Time) error
}

// UsageReporter answers the disk usage report (quota.Cleaner does).
type UsageReporter interface {
	Report(ctx context.Context) (quota.Report, error)
}
