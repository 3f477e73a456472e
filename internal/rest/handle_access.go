package rest

import (
	"fmt"
	"net/http"
	"regexp"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// postAccess answers POST /rest/diskquota/access.json, an extension of this
// project: a batch of page reads from an access log (`tilecache quota
// ingest-logs` sends them), added to the disk quota's usage pages so that
// LRU and LFU see reads that never reached this server. A batch whose id
// was recorded before adds nothing.
func (q quotaResource) postAccess(w http.ResponseWriter, r *http.Request) error {
	if q.reads == nil {
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
	id, reads, byID, err := gwc.DecodeAccessBatch(body)
	if err != nil {
		return err
	}
	// Reads naming a layer by id (as log lines do) are resolved here; ids
	// no layer has (a layer removed since) are skipped.
	unknown, fromLog := map[int]bool{}, map[int]bool{}
	for _, i := range byID {
		fromLog[i] = true
		if l, ok := q.layers.ByID(reads[i].Page.Set.Layer); ok {
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
		l, ok := q.layers.Layer(a.Page.Set.Layer)
		if !ok {
			writeText(w, http.StatusBadRequest, fmt.Sprintf("reads[%d]: unknown layer %s", i, a.Page.Set.Layer))
			return nil
		}
		if err := checkRead(l, a, time.Now()); err != nil {
			if fromLog[i] {
				// A log line of a tile set the layer has no longer: like
				// a layer removed since, skipped.
				unknown[i] = true
				continue
			}
			return apperr.Invalidf("reads[%d]: %s", i, err)
		}
		kept = append(kept, a)
	}
	dup, err := q.reads.Record(r.Context(), id, kept)
	if err != nil {
		return err
	}
	writeBody(w, "application/json", fmt.Appendf(nil, `{"id":%q,"pages":%d,"skipped":%d,"duplicate":%t}`, id, len(kept), len(unknown), dup))
	return nil
}

// maxReadAhead is how far after the server's clock a read's last time may
// be (the clocks of log writers differ a little): a time further ahead
// would keep its page the most recently read until then.
const maxReadAhead = 15 * time.Minute

// earliestRead is the earliest last time a read may have: times are kept
// as Unix nanoseconds, which hold 1678 to 2262.
var earliestRead = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// parametersIDPattern is GeoWebCache's id of non-default parameters: a
// lower-case hex SHA-1 (tilestore.ParametersID).
var parametersIDPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkRead returns why a, a read of layer l's page, cannot be recorded
// (naming the field), nil when it can: its grid set, format and
// parameters are the layer's, its level one of the grid set's, and its
// last time between 1970 and a few minutes from now.
func checkRead(l *layer.Layer, a quota.Access, now time.Time) error {
	set := a.Page.Set
	sub, ok := l.Subset(set.GridSetID)
	if !ok {
		return fmt.Errorf("gridSetId %s is not a grid set of layer %s", apperr.Show(set.GridSetID), l.Name)
	}
	if a.Page.Z >= sub.GridSet.Levels() {
		return fmt.Errorf("z %d is not a level of grid set %s (0 to %d)", a.Page.Z, set.GridSetID, sub.GridSet.Levels()-1)
	}
	format := false
	for _, f := range l.Formats {
		if id, _, ok := tilestore.Format(f); ok && id == set.FormatID {
			format = true
			break
		}
	}
	if !format {
		return fmt.Errorf("formatId %s is not a format of layer %s", apperr.Show(set.FormatID), l.Name)
	}
	switch {
	case set.ParametersID == tilestore.DefaultParametersID:
	case len(l.Filters) == 0:
		return fmt.Errorf("parametersId %s: layer %s has no parameters, its only parametersId is %s", apperr.Show(set.ParametersID), l.Name, tilestore.DefaultParametersID)
	case !parametersIDPattern.MatchString(set.ParametersID):
		return fmt.Errorf("parametersId %s is neither %s nor 40 lower-case hexadecimal digits", apperr.Show(set.ParametersID), tilestore.DefaultParametersID)
	}
	if a.Last.Before(earliestRead) || a.Last.After(now.Add(maxReadAhead)) {
		return fmt.Errorf("last %s must be between %s and %v after the server's clock (%s)", a.Last.UTC().Format(time.RFC3339),
			earliestRead.Format(time.RFC3339), maxReadAhead, now.UTC().Format(time.RFC3339))
	}
	return nil
}
