package rest

// GET /rest/failures.json, an extension of this project: why tasks ended
// ABORTED other than by a kill (a failure budget exhausted, a tile failed
// with retries off, a request that could no longer be worked), kept for
// task.FailureKeep. GeoWebCache's status arrays (contract §5) are
// unchanged: this is a separate answer, for a console.

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/task"
)

// FailureLister lists the recorded task failures (task.FailureStore does).
type FailureLister interface {
	Failures(ctx context.Context, since time.Time, limit int) ([]task.Failure, error)
}

// Bounds of the answer's length.
const (
	failuresDefaultLimit = 100
	failuresMaxLimit     = 1000
)

type failuresAnswer struct {
	Failures  []failureItem `json:"failures"`
	KeptHours int           `json:"keptHours"`
}

type failureItem struct {
	ID     int64  `json:"id"`
	Job    int64  `json:"job"`
	Layer  string `json:"layer"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
	At     string `json:"at"`
	Done   int64  `json:"done"`
	Total  int64  `json:"total"`
}

// failures answers GET /rest/failures.json[?layer=<name>][&limit=<n>]:
// the failures of the last task.FailureKeep, newest task first.
// failuresResource serves /rest/failures.json.
type failuresResource struct {
	failures FailureLister // nil: the route is not served
	layers   Layers
}

func (fr failuresResource) get(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := failuresDefaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > failuresMaxLimit {
			return apperr.Invalidf("Bad limit '%s': a whole number from 1 to %d", apperr.Show(s), failuresMaxLimit)
		}
		limit = n
	}
	layerName := q.Get("layer")
	if layerName != "" {
		if _, ok := fr.layers.Layer(layerName); !ok {
			if _, deleting := deletingOf(fr.layers, layerName); !deleting {
				return apperr.Invalidf("Unknown layer: %s", apperr.Show(layerName))
			}
		}
	}
	read := limit
	if layerName != "" {
		read = 0 // filtered here: every failure kept is read
	}
	fs, err := fr.failures.Failures(r.Context(), time.Now().Add(-task.FailureKeep), read)
	if err != nil {
		return err
	}
	ans := failuresAnswer{Failures: []failureItem{}, KeptHours: int(task.FailureKeep / time.Hour)}
	for _, f := range fs {
		if layerName != "" && f.Layer != layerName {
			continue
		}
		if len(ans.Failures) == limit {
			break
		}
		ans.Failures = append(ans.Failures, failureItem{ID: f.ID, Job: f.JobID, Layer: f.Layer, Type: f.Type.String(), Reason: f.Reason,
			At: f.At.UTC().Format(time.RFC3339Nano), Done: f.Done, Total: f.Total})
	}
	b, err := json.Marshal(ans)
	if err != nil {
		return apperr.Wrap(apperr.Internal, err, "encode the failures")
	}
	writeBody(w, "application/json", b)
	return nil
}
