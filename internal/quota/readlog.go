package quota

import (
	"context"
	"fmt"
	"time"

	"tilecache/internal/accesslog"
	"tilecache/internal/tilestore"
	"tilecache/internal/token"
)

// Marks remember which batches of reads were recorded already, with a
// conditional write each (the state adapters' ReadMarks: claims, as
// onmiss.Claims, in the same items).
type Marks interface {
	// Claim takes key for owner until now+ttl unless another owner holds
	// it; it reports whether owner holds it now.
	Claim(ctx context.Context, key, owner string, ttl time.Duration, now time.Time) (bool, error)
	// Unclaim releases owner's claim of key.
	Unclaim(ctx context.Context, key, owner string) error
}

// ReadLogKeep is how long a batch's mark is kept: longer than any
// redelivery of the log object it came from (S3 event notifications are
// retried for hours, Lambda's asynchronous retries for up to six).
const ReadLogKeep = 30 * 24 * time.Hour

// MaxReadBatch is the most pages one batch of reads may carry.
const MaxReadBatch = 5_000

// ReadLog records reads of tiles taken from access logs (the CDN's, the
// bucket's, a proxy's), each batch once: a batch has an id (the log
// object and the batch's number in it), marked with a conditional write
// before its reads are added; the same id again adds nothing.
type ReadLog struct {
	store AccessStore
	marks Marks
	now   func() time.Time
}

// NewReadLog returns a read log recording into store, its batches marked
// in marks.
func NewReadLog(store AccessStore, marks Marks) *ReadLog {
	return &ReadLog{store: store, marks: marks, now: time.Now}
}

// Record adds a batch of reads (hits and the latest read per page) unless
// a batch with the same id was recorded before; dup reports that it was.
// When adding fails, the mark is taken back so that a retry records the
// batch (pages updated before the failure may then count their hits
// twice; a crash between the mark and the reads loses the batch instead:
// a log is never counted in full twice).
func (r *ReadLog) Record(ctx context.Context, id string, reads []Access) (dup bool, err error) {
	if id == "" {
		return false, fmt.Errorf("record reads: a batch needs an id")
	}
	if len(reads) > MaxReadBatch {
		return false, fmt.Errorf("record reads: %d pages in one batch, more than %d", len(reads), MaxReadBatch)
	}
	owner := token.New() // this call's mark
	key := "reads#" + id
	ok, err := r.marks.Claim(ctx, key, owner, ReadLogKeep, r.now())
	if err != nil {
		return false, fmt.Errorf("mark read batch %s: %w", id, err)
	}
	if !ok {
		return true, nil
	}
	if err := r.store.RecordAccess(ctx, reads); err != nil {
		if uerr := r.marks.Unclaim(context.WithoutCancel(ctx), key, owner); uerr != nil {
			err = fmt.Errorf("%w (and the batch's mark stays: %v)", err, uerr)
		}
		return false, fmt.Errorf("record read batch %s: %w", id, err)
	}
	return false, nil
}

// ReadsOf converts a batch of page reads counted from an access log to
// the quota's accesses.
func ReadsOf(batch []accesslog.PageHits) []Access {
	out := make([]Access, len(batch))
	for i, h := range batch {
		p := h.Page
		set := tilestore.SetName{Layer: p.Layer, GridSetID: p.GridSetID, FormatID: p.FormatID, ParametersID: p.ParametersID}
		out[i] = Access{Page: PageKey{Set: set, Z: p.Z, X: p.X, Y: p.Y}, Hits: h.Hits, Last: h.Last}
	}
	return out
}
