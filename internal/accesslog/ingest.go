package accesslog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Stats counts what became of a log's lines. Every record line (not a
// header, not blank) has exactly one outcome:
//
//	Lines == Kept + Malformed + NotRead + NotSuccessful + NotTile + UnknownLayer
type Stats struct {
	Lines   int64 // record lines read
	Headers int64 // "#" directive lines (CloudFront)
	Kept    int64 // reads of tiles counted

	Malformed     int64
	NotRead       int64
	NotSuccessful int64
	NotTile       int64
	UnknownLayer  int64
	// MalformedBy splits Malformed by reason ("bad time", "missing
	// fields", ...).
	MalformedBy map[string]int64

	Batches int64 // batches flushed
	Pages   int64 // pages in those batches (a page met in two batches counts twice)
}

func (s *Stats) count(o Outcome) {
	switch o {
	case Kept:
		s.Kept++
	case Malformed:
		s.Malformed++
	case NotRead:
		s.NotRead++
	case NotSuccessful:
		s.NotSuccessful++
	case NotTile:
		s.NotTile++
	case UnknownLayer:
		s.UnknownLayer++
	}
}

// Options tune Ingest.
type Options struct {
	// MaxPages is the most pages a batch holds (DefaultMaxPages when ≤ 0).
	MaxPages int
}

// BatchID names the nth batch (counted from 1) Ingest flushes from the log
// named logID: "logID#n". The same log always gives the same batches, so
// the name tells a batch recorded before when the log is read again.
func BatchID(logID string, n int) string {
	return logID + "#" + strconv.Itoa(n)
}

// cancelCheckEvery is how many lines Ingest reads between looks at ctx.
const cancelCheckEvery = 4096

// Ingest reads a log of format f from r (plain or gzip-compressed), maps
// its records with m, and passes the reads of each page, aggregated, to
// flush in batches of at most opts.MaxPages pages; after the last line it
// flushes what is left. Memory stays bounded whatever the log's size.
//
// Malformed lines are counted and skipped. An error reading or
// decompressing r, a failed flush or ctx's end (looked at every few
// thousand records; a reader bound to ctx stops sooner) stops it: the pages
// aggregated since the last flush are then dropped, and batches flushed
// already stay flushed. The same log always gives the same batches, so a
// caller that retries a log can tell batches recorded before by their
// number.
func Ingest(ctx context.Context, r io.Reader, f Format, m *Mapper, flush FlushFunc, opts Options) (Stats, error) {
	rd, err := NewReader(r, f)
	if err != nil {
		return Stats{}, err
	}
	agg := NewAggregator(opts.MaxPages, flush)
	ms := mapState{m: m}
	var st Stats
	result := func(err error) (Stats, error) {
		rs := rd.Stats()
		st.Lines, st.Headers, st.Malformed, st.MalformedBy = rs.Lines, rs.Headers, rs.Malformed, rs.MalformedBy
		st.Batches, st.Pages = agg.Batches()
		return st, err
	}
	for n := 0; ; n++ {
		if n%cancelCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return result(fmt.Errorf("ingest %s log: %w", f, err))
			}
		}
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return result(fmt.Errorf("ingest: %w", err))
		}
		page, outcome := ms.mapRecord(rec)
		st.count(outcome)
		if outcome != Kept {
			continue
		}
		if err := agg.Add(ctx, page, rec.Time); err != nil {
			return result(fmt.Errorf("ingest %s log: %w", f, err))
		}
	}
	if err := agg.Flush(ctx); err != nil {
		return result(fmt.Errorf("ingest %s log: %w", f, err))
	}
	return result(nil)
}
