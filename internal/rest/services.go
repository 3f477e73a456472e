package rest

import (
	"context"
	"io"

	"tilecache/internal/area"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/seed"
	"tilecache/internal/task"
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
}
