package seed

import (
	"testing"

	"tilecache/internal/task"
)

// TestExportChunks: an export's chunks follow from its job alone — the
// chunk a cursor falls in ends where it ends whichever cursor inside it
// a worker starts from — they cover the lane once, hold at most
// exportChunkTiles tiles of whole metatiles (at least one metatile), and
// a small export has about exportChunks of them.
func TestExportChunks(t *testing.T) {
	for _, c := range []struct {
		metatiles  int64
		mw, mh     int
		wantChunks int64
	}{
		{7, 4, 4, 7},               // fewer metatiles than chunks: one each
		{87, 4, 4, 87},             // z0-5 of 900913: still one each
		{5461, 4, 4, 86},           // z0-8: 64 metatiles of 16 tiles a chunk
		{5461, 1, 1, 65},           // one-tile metatiles: 85 a chunk
		{100_000, 64, 64, 100_000}, // metatiles larger than a chunk: one each
	} {
		job := task.NewExport(task.Header{Metatiles: c.metatiles}, task.Range{MetaWidth: c.mw, MetaHeight: c.mh}, "pmtiles")
		var chunks int64
		for from := int64(0); from < c.metatiles; {
			to := exportChunk(job, 0, c.metatiles, from)
			if to <= from || to > c.metatiles || (to-from)*int64(c.mw*c.mh) > max(exportChunkTiles, int64(c.mw*c.mh)) {
				t.Fatalf("%+v: chunk [%d, %d)", c, from, to)
			}
			for mid := from; mid < to; mid++ {
				if got := exportChunk(job, 0, c.metatiles, mid); got != to {
					t.Fatalf("%+v: from %d inside [%d, %d) the chunk ends at %d", c, mid, from, to, got)
				}
			}
			chunks++
			from = to
		}
		if chunks != c.wantChunks {
			t.Errorf("%+v: %d chunks, want %d", c, chunks, c.wantChunks)
		}
	}
}
