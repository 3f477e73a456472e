package dynamo

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"tilecache/internal/accesslog"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore"
)

// BenchmarkReadLogWrites ingests a realistic CloudFront log (200,000 reads
// of 1,000 pages, 80 % of them on 50 pages, plus misses and other paths)
// into a table on DynamoDB Local and reports its DynamoDB writes per
// 1,000 log lines (target ≤ 20): one per page touched and one per batch.
func BenchmarkReadLogWrites(b *testing.B) {
	sh := newShared(b)
	s := sh.store(b)
	ctx := context.Background()
	set := tilestore.SetName{Layer: "bench:world", GridSetID: "EPSG:900913", FormatID: "png", ParametersID: "default"}
	const pages = 1000
	now := time.Now()
	var deltas []quota.PageDelta
	for i := range pages {
		deltas = append(deltas, quota.PageDelta{Page: quota.PageKey{Set: set, Z: 12, X: int64(i % 40), Y: int64(i / 40)}, Tiles: 1, Bytes: 4096})
	}
	for len(deltas) > 0 {
		n := min(len(deltas), 90)
		if err := s.ApplyDeltas(ctx, deltas[:n], now); err != nil {
			b.Fatal(err)
		}
		deltas = deltas[n:]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var log bytes.Buffer
	log.WriteString("#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status\n")
	const lines = 200_000
	at := now.Add(time.Minute).UTC()
	for range lines {
		p := rng.IntN(50)
		if rng.IntN(5) == 0 {
			p = rng.IntN(pages)
		}
		x, y := int64(p%40)<<quota.PageShift+rng.Int64N(64), int64(p/40)<<quota.PageShift+rng.Int64N(64)
		status := 200
		if rng.IntN(50) == 0 {
			status = 404
		}
		fmt.Fprintf(&log, "%s\t%s\tSEA19-C1\t2390\t192.0.2.1\tGET\td1.cloudfront.net\t/bench%%253Aworld/EPSG%%253A900913/png/default/12/%d/%d.png\t%d\n",
			at.Format("2006-01-02"), at.Format("15:04:05"), x, y, status)
	}
	m, err := accesslog.NewMapper(accesslog.MapperConfig{PageShift: 6, LayerName: func(id string) (string, bool) { return id, id == "bench:world" }})
	if err != nil {
		b.Fatal(err)
	}
	rl := quota.NewReadLog(s, s)
	b.ResetTimer()
	for i := range b.N {
		before := s.Writes()
		n := 0
		st, err := accesslog.Ingest(ctx, bytes.NewReader(log.Bytes()), accesslog.CloudFront, m, func(ctx context.Context, batch []accesslog.PageHits) error {
			n++
			reads := quota.ReadsOf(batch)
			_, err := rl.Record(ctx, fmt.Sprintf("bench-%d#%d", i, n), reads)
			return err
		}, accesslog.Options{MaxPages: quota.MaxReadBatch})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(s.Writes()-before)*1000/float64(st.Lines), "writes/1000lines")
		b.ReportMetric(float64(st.Pages), "pages")
	}
}
