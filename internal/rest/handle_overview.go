package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/task"
)

// RecentTasks lists the active tasks and those finished since a time, as
// far back as the task store keeps them listed (task.Store does).
type RecentTasks interface {
	List(ctx context.Context, finishedSince time.Time) ([]task.Task, error)
}

// overviewHistory is how far back the overview asks for finished tasks
// (each layer's last finished seed). A status call reads the tasks
// finished since the time it asks for, so this bounds what an overview
// reads to an hour of finished tasks; the stores may keep them for less.
const overviewHistory = time.Hour

type overviewAnswer struct {
	Layers   []overviewLayer   `json:"layers"`
	GridSets []overviewGridSet `json:"gridSets"`
	Quota    *overviewQuota    `json:"quota"`
}

type overviewLayer struct {
	Name         string            `json:"name"`
	Title        string            `json:"title"`
	ManagedBy    string            `json:"managedBy"`
	GridSets     []string          `json:"gridSets"`
	Formats      []string          `json:"formats"`
	Usage        *overviewUsage    `json:"usage"`
	Quota        *overviewLayerQ   `json:"quota"`
	Tasks        overviewTaskCount `json:"tasks"`
	LastFinished *overviewTask     `json:"lastFinished"`
	// Parameters are the layer's parameter filters (handle_overview_params.go).
	Parameters []overviewParam `json:"parameters"`
	// Subsets are its grid subsets' extents and levels (handle_overview_subsets.go).
	Subsets []overviewSubset `json:"subsets"`
	// Private is true for a private layer: its tiles need a tile token
	// (the console asks for one, POST /rest/tiletokens.json).
	Private bool `json:"private,omitempty"`
}

type overviewUsage struct {
	Bytes          int64 `json:"bytes"`
	Tiles          int64 `json:"tiles"`
	RecountPending bool  `json:"recountPending"`
}

type overviewLayerQ struct {
	Bytes  int64  `json:"bytes"`
	Policy string `json:"policy"`
}

type overviewTaskCount struct {
	Running int `json:"running"`
	Pending int `json:"pending"`
}

type overviewTask struct {
	ID       int64  `json:"id"`
	Job      int64  `json:"job"`
	Type     string `json:"type"`
	Status   string `json:"status"`
	Killed   bool   `json:"killed"`
	Done     int64  `json:"done"`
	Total    int64  `json:"total"`
	Finished string `json:"finished"`
}

type overviewGridSet struct {
	Name      string `json:"name"`
	ManagedBy string `json:"managedBy"`
}

type overviewQuota struct {
	Enabled        bool     `json:"enabled"`
	Policy         string   `json:"policy"`
	GlobalQuota    int64    `json:"globalQuotaBytes"`
	UsedBytes      int64    `json:"usedBytes"`
	UsedTiles      int64    `json:"usedTiles"`
	Counted        bool     `json:"counted"`
	LastCleanUp    *string  `json:"lastCleanUp"`
	RecountPending []string `json:"recountPending"`
}

// managedBy words where a layer or grid set is changed: the layer file,
// or the stored configuration the REST interface changes ("" is a
// built-in grid set).
func managedBy(m layer.Managed) string {
	switch m {
	case layer.ManagedByStore:
		return "rest"
	case "":
		return "builtin"
	}
	return "file"
}

// overview answers GET /rest/overview.json, an extension of this project:
// every layer with its grid sets, formats, usage, layer quota, task counts
// and last finished task, the grid sets, and the disk quota's state, in
// one answer for a console's first page.
// overviewResource serves /rest/overview.json.
type overviewResource struct {
	layers Layers
	usage  UsageReporter // nil: no usage in the answer
	recent RecentTasks   // nil: no task counts or last finished tasks
}

func (ov overviewResource) get(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	ans := overviewAnswer{Layers: []overviewLayer{}, GridSets: []overviewGridSet{}}
	var rep *quota.Report
	if ov.usage != nil {
		rp, err := ov.usage.Report(ctx)
		if err != nil {
			return err
		}
		rep = &rp
		ans.Quota = &overviewQuota{Enabled: rp.Enabled, Policy: rp.GlobalPolicy, GlobalQuota: rp.GlobalQuota, UsedBytes: rp.UsedBytes,
			UsedTiles: rp.UsedTiles, Counted: rp.Counted, LastCleanUp: timeOrNull(rp.LastCleanUp), RecountPending: []string{}}
		for _, l := range rp.Layers {
			if l.RecountPending {
				ans.Quota.RecountPending = append(ans.Quota.RecountPending, l.Layer)
			}
		}
	}
	var tasks []task.Task
	if ov.recent != nil {
		var err error
		if tasks, err = ov.recent.List(ctx, time.Now().Add(-overviewHistory)); err != nil {
			return err
		}
	}
	for _, name := range ov.layers.Names() {
		l, ok := ov.layers.Layer(name)
		if !ok {
			continue
		}
		ol := overviewLayer{Name: l.Name, Title: l.Title, ManagedBy: managedBy(l.Managed), GridSets: subsetIDs(l), Formats: append([]string{}, l.Formats...), Parameters: layerParams(l), Subsets: layerSubsets(l), Private: l.Private}
		if rep != nil {
			ol.Usage = &overviewUsage{}
			for _, lr := range rep.Layers {
				if lr.Layer != l.Name {
					continue
				}
				ol.Usage = &overviewUsage{Bytes: lr.UsedBytes, Tiles: lr.UsedTiles, RecountPending: lr.RecountPending}
				if lr.HasQuota() {
					ol.Quota = &overviewLayerQ{Bytes: lr.Quota, Policy: lr.Policy}
				}
			}
		}
		var last *task.Task
		for i, t := range tasks {
			if t.Layer != l.Name {
				continue
			}
			switch t.Status {
			case task.Running:
				ol.Tasks.Running++
			case task.Pending:
				ol.Tasks.Pending++
			default:
				if last == nil || t.Finished.After(last.Finished) || (t.Finished.Equal(last.Finished) && t.ID > last.ID) {
					last = &tasks[i]
				}
			}
		}
		if last != nil {
			ol.LastFinished = &overviewTask{ID: last.ID, Job: last.JobID, Type: last.Type.String(), Status: last.Status.String(), Killed: last.Killed,
				Done: last.Done, Total: last.Total, Finished: last.Finished.UTC().Format(time.RFC3339Nano)}
		}
		ans.Layers = append(ans.Layers, ol)
	}
	for _, id := range ov.layers.GridSetIDs() {
		if _, info, ok := ov.layers.GridSet(id); ok {
			ans.GridSets = append(ans.GridSets, overviewGridSet{Name: id, ManagedBy: managedBy(info.Managed)})
		}
	}
	body, err := json.Marshal(ans)
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "encode the overview")
	}
	writeBody(w, "application/json", body)
	return nil
}
