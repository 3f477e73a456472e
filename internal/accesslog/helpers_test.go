package accesslog_test

import (
	"context"
	"testing"

	"tilecache/internal/accesslog"
)

// layers is the test catalogue: layer store id → name. Ids may hold ":".
var layers = map[string]string{
	"topp:states": "topp:states",
	"L42":         "osm:basemap",
}

func layerName(id string) (string, bool) {
	name, ok := layers[id]
	return name, ok
}

// MustMapper returns a mapper of cfg, with the test catalogue when cfg
// has no resolver.
func MustMapper(tb testing.TB, cfg accesslog.MapperConfig) *accesslog.Mapper {
	tb.Helper()
	if cfg.LayerName == nil {
		cfg.LayerName = layerName
	}
	m, err := accesslog.NewMapper(cfg)
	if err != nil {
		tb.Fatalf("NewMapper: %v", err)
	}
	return m
}

// collector keeps copies of the batches it is flushed.
type collector struct {
	batches [][]accesslog.PageHits
}

func (c *collector) flush(_ context.Context, batch []accesslog.PageHits) error {
	c.batches = append(c.batches, append([]accesslog.PageHits(nil), batch...))
	return nil
}

// all returns the pages of every batch, in order.
func (c *collector) all() []accesslog.PageHits {
	var out []accesslog.PageHits
	for _, b := range c.batches {
		out = append(out, b...)
	}
	return out
}

// checkAccounted fails unless every line of st has one outcome.
func checkAccounted(tb testing.TB, st accesslog.Stats) {
	tb.Helper()
	sum := st.Kept + st.Malformed + st.NotRead + st.NotSuccessful + st.NotTile + st.UnknownLayer
	if sum != st.Lines {
		tb.Errorf("outcomes add up to %d, want Lines = %d (%+v)", sum, st.Lines, st)
	}
	var byReason int64
	for _, n := range st.MalformedBy {
		byReason += n
	}
	if byReason != st.Malformed {
		tb.Errorf("MalformedBy adds up to %d, want Malformed = %d", byReason, st.Malformed)
	}
}
