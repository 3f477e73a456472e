package rest

// An extension of this project: POST /rest/import/{layer}.json copies a
// PMTiles or MBTiles archive into a tile set of the layer as a task
// (seed.Control.SubmitImport), listed and killed with the seed tasks.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"tilecache/internal/apperr"
	"tilecache/internal/seed"
	"tilecache/internal/task"
)

// Importer takes import requests (seed.Control).
type Importer interface {
	// SubmitImport validates an import (its archive opened and checked)
	// and records it as a task; a rejected request records nothing.
	SubmitImport(ctx context.Context, r seed.ImportRequest) ([]task.Task, error)
}

// importsResource serves the imports.
type importsResource struct {
	imports Importer
}

// importBody is an import request's JSON body.
type importBody struct {
	Archive    *string           `json:"archive"`
	GridSetID  string            `json:"gridSetId"`
	Format     string            `json:"format"`
	Parameters map[string]string `json:"parameters"`
	ZoomStart  *int              `json:"zoomStart"`
	ZoomStop   *int              `json:"zoomStop"`
}

// post answers POST /rest/import/{layer}.json with the created task's
// status row, as a seed request's answer lists its tasks.
func (ir importsResource) post(name string, f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if ir.imports == nil {
			return apperr.New(apperr.NotFound, "this server does not import archives")
		}
		if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			// As a seed request's: no form a page of another site can post.
			return apperr.New(apperr.Unsupported, "Unsupported Content-Type %s: an import request must be sent as application/json", apperr.Show(mt))
		}
		data, err := readBody(w, r)
		if err != nil {
			return err
		}
		var b importBody
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			return apperr.Invalidf("Invalid import request: %v (expected {\"archive\": \"<file path, s3://bucket/key or https:// URL>\", "+
				"\"gridSetId\", \"format\", \"parameters\", \"zoomStart\", \"zoomStop\"})", err)
		}
		if b.Archive == nil || *b.Archive == "" {
			return apperr.Invalidf("Invalid import request: archive is required (a file path, s3://bucket/key or an https:// URL of a PMTiles or MBTiles archive)")
		}
		req := seed.ImportRequest{Layer: name, Archive: *b.Archive, GridSetID: b.GridSetID, Format: b.Format, ZoomStart: b.ZoomStart, ZoomStop: b.ZoomStop}
		for k, v := range b.Parameters {
			req.Parameters = append(req.Parameters, [2]string{k, v})
		}
		slices.SortFunc(req.Parameters, func(a, b [2]string) int { return cmp.Compare(a[0], b[0]) })
		tasks, err := ir.imports.SubmitImport(r.Context(), req)
		if err != nil {
			return err
		}
		noteTasks(r.Context(), name, tasks)
		writeTasks(w, f, tasks)
		return nil
	}
}
