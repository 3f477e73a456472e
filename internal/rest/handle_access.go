package rest

import (
	"context"
	"fmt"
	"net/http"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"

	"tilecache/internal/quota"
	"tilecache/internal/wire"
)

// LayerIDs finds layers by their store id (layer.Catalogue does).
type LayerIDs interface {
	ByID(id string) (l *layer.Layer, ok bool)
}

// ReadRecorder records reads of tiles counted from access logs, each batch
// once (quota.ReadLog does).
type ReadRecorder interface {
	Record(ctx context.Context, id string, reads []quota.Access) (dup bool, err error)
}

// postAccess answers POST /rest/diskquota/access.json, an extension of this
// project: a batch of page reads from an access log (`tilecache quota
// ingest-logs` sends them), added to the disk quota's usage pages so that
// LRU and LFU see reads that never reached this server. A batch whose id
// was recorded before adds nothing.
func (h *Handler) postAccess(w http.ResponseWriter, r *http.Request) error {
	if h.opts.Reads == nil {
		writeText(w, http.StatusNotFound, "Disk usage is not counted by this server")
		return nil
	}
	if mt := mediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		if mt == "" {
			mt = "none"
		}
		return apperr.New(apperr.Unsupported, "Unsupported Content-Type %s: an access batch is sent as application/json", apperr.Show(mt))
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	id, reads, byID, err := wire.DecodeAccessBatch(body)
	if err != nil {
		return err
	}
	// Reads naming a layer by id (as log lines do) are resolved here; ids
	// no layer has (a layer removed since) are skipped.
	unknown := map[int]bool{}
	for _, i := range byID {
		if h.opts.LayerIDs == nil {
			unknown[i] = true
			continue
		}
		if l, ok := h.opts.LayerIDs.ByID(reads[i].Page.Set.Layer); ok {
			reads[i].Page.Set.Layer = l.Name
		} else {
			unknown[i] = true
		}
	}
	kept := reads[:0]
	for i, a := range reads {
		if unknown[i] {
			continue
		}
		if _, ok := h.svc.Layers.Layer(a.Page.Set.Layer); !ok {
			writeText(w, http.StatusBadRequest, fmt.Sprintf("reads[%d]: unknown layer %s", i, a.Page.Set.Layer))
			return nil
		}
		kept = append(kept, a)
	}
	dup, err := h.opts.Reads.Record(r.Context(), id, kept)
	if err != nil {
		return err
	}
	writeBody(w, "application/json", fmt.Appendf(nil, `{"id":%q,"pages":%d,"skipped":%d,"duplicate":%t}`, id, len(kept), len(unknown), dup))
	return nil
}
