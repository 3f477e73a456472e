package gwc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// AccessBatch is the body of POST /rest/diskquota/access.json, an
// extension of this project that GeoWebCache clients never send: reads of
// tiles counted from access logs, per quota page, recorded once per id.
//
//	{"id":"cdn-logs/E2X.2026-11-25-12.ab12.gz#0","reads":[{"layer":"topp:states",
//	 "gridSetId":"EPSG:4326","formatId":"png","parametersId":"default","z":3,"pageX":0,"pageY":0,
//	 "hits":12,"last":"2026-11-25T12:03:04Z"}]}
type AccessBatch struct {
	ID    string       `json:"id"`
	Reads []AccessRead `json:"reads"`
}

// AccessRead is the reads of one page: pageX and pageY are the page's
// column and row (a tile's x and y shifted right by quota.PageShift). The
// layer is named by its name (layer) or by its store id (layerId, the
// first segment of its tile keys: what a log line holds), one of the two.
type AccessRead struct {
	Layer        string    `json:"layer,omitempty"`
	LayerID      string    `json:"layerId,omitempty"`
	GridSetID    string    `json:"gridSetId"`
	FormatID     string    `json:"formatId"`
	ParametersID string    `json:"parametersId"`
	Z            int       `json:"z"`
	PageX        int64     `json:"pageX"`
	PageY        int64     `json:"pageY"`
	Hits         int64     `json:"hits"`
	Last         time.Time `json:"last"`
}

// EncodeAccessBatch encodes a batch of page reads.
func EncodeAccessBatch(id string, reads []quota.Access) []byte {
	b := AccessBatch{ID: id, Reads: make([]AccessRead, len(reads))}
	for i, a := range reads {
		s := a.Page.Set
		b.Reads[i] = AccessRead{Layer: s.Layer, GridSetID: s.GridSetID, FormatID: s.FormatID, ParametersID: s.ParametersID,
			Z: a.Page.Z, PageX: a.Page.X, PageY: a.Page.Y, Hits: a.Hits, Last: a.Last.UTC()}
	}
	out, _ := json.Marshal(b) // plain values: never fails
	return out
}

// DecodeAccessBatch decodes and checks a batch: an id, at most
// quota.MaxReadBatch pages, each named in full with non-negative
// coordinates, at least one hit and a time. Problems are Invalid, named.
// A read naming its layer by id has the id in its Set.Layer, and its
// index in byID, for the caller to resolve.
func DecodeAccessBatch(body []byte) (id string, reads []quota.Access, byID []int, err error) {
	var b AccessBatch
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return "", nil, nil, apperr.Wrap(apperr.Invalid, err, "Malformed access batch: %v", err)
	}
	if dec.More() {
		return "", nil, nil, apperr.Invalidf("Malformed access batch: data after the JSON object")
	}
	if b.ID == "" || len(b.ID) > 512 {
		return "", nil, nil, apperr.Invalidf("An access batch needs an id of 1 to 512 characters")
	}
	if len(b.Reads) > quota.MaxReadBatch {
		return "", nil, nil, apperr.Invalidf("An access batch holds at most %d pages, not %d", quota.MaxReadBatch, len(b.Reads))
	}
	reads = make([]quota.Access, len(b.Reads))
	for i, r := range b.Reads {
		where := fmt.Sprintf("reads[%d]", i)
		switch {
		case (r.Layer == "") == (r.LayerID == ""):
			return "", nil, nil, apperr.Invalidf("%s: give the layer by name (layer) or by id (layerId), one of the two", where)
		case r.GridSetID == "" || r.FormatID == "" || r.ParametersID == "":
			return "", nil, nil, apperr.Invalidf("%s: gridSetId, formatId and parametersId are required", where)
		case r.Z < 0 || r.PageX < 0 || r.PageY < 0:
			return "", nil, nil, apperr.Invalidf("%s: z, pageX and pageY must not be negative", where)
		case r.Hits < 1:
			return "", nil, nil, apperr.Invalidf("%s: hits must be at least 1", where)
		case r.Last.IsZero():
			return "", nil, nil, apperr.Invalidf("%s: last (the time of the latest read, RFC 3339) is required", where)
		}
		layer := r.Layer
		if r.LayerID != "" {
			layer = r.LayerID
			byID = append(byID, i)
		}
		set := tilestore.SetName{Layer: layer, GridSetID: r.GridSetID, FormatID: r.FormatID, ParametersID: r.ParametersID}
		reads[i] = quota.Access{Page: quota.PageKey{Set: set, Z: r.Z, X: r.PageX, Y: r.PageY}, Hits: r.Hits, Last: r.Last}
	}
	return b.ID, reads, byID, nil
}

// EncodeAccessBatchByID encodes a batch of page reads whose Set.Layer is
// the layer's store id (the server resolves it).
func EncodeAccessBatchByID(id string, reads []quota.Access) []byte {
	b := AccessBatch{ID: id, Reads: make([]AccessRead, len(reads))}
	for i, a := range reads {
		s := a.Page.Set
		b.Reads[i] = AccessRead{LayerID: s.Layer, GridSetID: s.GridSetID, FormatID: s.FormatID, ParametersID: s.ParametersID,
			Z: a.Page.Z, PageX: a.Page.X, PageY: a.Page.Y, Hits: a.Hits, Last: a.Last.UTC()}
	}
	out, _ := json.Marshal(b) // plain values: never fails
	return out
}
