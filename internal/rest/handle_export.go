package rest

// POST /rest/export/{layer}.json|.xml, an extension of this project: an
// export of a layer's stored tiles to an archive (PMTiles, MBTiles or
// GeoPackage), run as a task on the workers as a seed is. Its body is a
// seed request's fields under exportRequest, plus archive; the answer
// names the task (listed with the seed tasks, killed as they are) and
// the key the archive is written to.

import (
	"context"
	"encoding/xml"
	"net/http"
	"path"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/task"
)

// Exporter takes export requests (seed.Control does).
type Exporter interface {
	// SubmitExport validates and records r and starts it when the pool
	// allows; it returns its task and the key of the archive it writes.
	// An unknown layer is NotFound, a request the client got wrong
	// Invalid.
	SubmitExport(ctx context.Context, r gwc.ExportRequest) (task.Task, string, error)
}

// exportAnswer is the answer to an export request.
type exportAnswer struct {
	XMLName xml.Name `json:"-" xml:"exportTask"`
	// Task is the export's task id (its row in the status lists).
	Task  int64  `json:"task" xml:"task"`
	Layer string `json:"layer" xml:"layer"`
	// Archive is its kind: pmtiles, mbtiles or gpkg.
	Archive string `json:"archive" xml:"archive"`
	// Key is where the archive is written in the tile store (the
	// bucket; on the embedded backend, a file of that path under the
	// store's directory), once the task is DONE.
	Key string `json:"key" xml:"key"`
	// Status is the task's row of the status list: [done, total,
	// remaining, id, status].
	Status [5]int64 `json:"status" xml:"-"`
}

// export answers POST /rest/export/{layer}.json|.xml.
func (ts tasksResource) export(name string, f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ex, ok := ts.tasks.(Exporter)
		if !ok {
			return apperr.New(apperr.NotFound, "Not found: exports are not served here")
		}
		if err := requestMediaType(r, f, "an export request"); err != nil {
			return err
		}
		body, err := readBody(w, r)
		if err != nil {
			return err
		}
		var req gwc.ExportRequest
		if f == formatXML {
			req, err = gwc.DecodeExportRequestXML(body)
		} else {
			req, err = gwc.DecodeExportRequestJSON(body)
		}
		if err != nil {
			return err
		}
		req.Layer = name
		t, key, err := ex.SubmitExport(r.Context(), req)
		if err != nil {
			return err
		}
		noteTasks(r.Context(), name, []task.Task{t})
		a := exportAnswer{Task: t.ID, Layer: name, Archive: strings.TrimPrefix(path.Ext(key), "."), Key: key, Status: t.Row()}
		if f == formatXML {
			data, err := xml.Marshal(a)
			if err != nil {
				return err
			}
			writeBody(w, "application/xml", append([]byte(xml.Header), data...))
			return nil
		}
		return writeJSON(w, http.StatusOK, a, "export answer")
	}
}
