package s3store_test

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"

	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// The benchmarks compare the Store with plain minio-go calls doing the same
// work, to show what the adapter costs. They need S3 (gated like the
// tests); MinIO on tmpfs is the intended target. Run them with, e.g.:
//
//	go test -run '^$' -bench . -count 3 ./internal/tilestore/s3store/
//
// Both sides use the same connection pool size (see rawClient).

// benchConcurrency is how many requests the PUT benchmarks keep in flight,
// as a seeding worker does.
const benchConcurrency = 16

// benchTile is a typical 256×256 PNG tile's size.
var benchTile = bytes.Repeat([]byte("tile"), 20_000/4)

var benchMeta = tilestore.Meta{ContentType: "image/png", CacheControl: "public, max-age=86400"}

// benchKey spreads keys over directories as seeding does; keys repeat after
// 4,096, which bounds the space a long run takes.
func benchKey(i int64) string {
	i %= 4096
	return "topp:states/EPSG:900913/png/default/12/" + strconv.FormatInt(i/64, 10) + "/" + strconv.FormatInt(i, 10) + ".png"
}

// setParallelism makes RunParallel run at least benchConcurrency goroutines.
func setParallelism(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((benchConcurrency + procs - 1) / procs)
}

func reportRate(b *testing.B, items int, unit string) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(items)/s, unit)
	}
}

// BenchmarkPut writes 20 KB tiles through the Store from 16 goroutines.
func BenchmarkPut(b *testing.B) {
	s := newStore(b)
	ctx := b.Context()
	var seq atomic.Int64
	before := s.Requests()
	b.SetBytes(int64(len(benchTile)))
	b.ReportAllocs()
	setParallelism(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.Put(ctx, benchKey(seq.Add(1)), benchTile, benchMeta); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportRate(b, b.N, "objects/s")
	b.ReportMetric(float64(s.Requests().Sub(before).Total())*1000/float64(b.N), "requests/1000objects")
}

// BenchmarkPutRaw is BenchmarkPut with minio-go's PutObject called directly.
func BenchmarkPutRaw(b *testing.B) {
	raw, bucket := setup(b)
	prefix := testenv.Name(b, "raw") + "/"
	b.Cleanup(func() {
		if err := removePrefix(context.Background(), raw, bucket, prefix); err != nil {
			b.Errorf("empty prefix %s: %v", prefix, err)
		}
	})
	ctx := b.Context()
	var seq atomic.Int64
	b.SetBytes(int64(len(benchTile)))
	b.ReportAllocs()
	setParallelism(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, err := raw.PutObject(ctx, bucket, prefix+benchKey(seq.Add(1)), bytes.NewReader(benchTile), int64(len(benchTile)),
				minio.PutObjectOptions{ContentType: benchMeta.ContentType, CacheControl: benchMeta.CacheControl})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportRate(b, b.N, "objects/s")
}

// deleteKeys is how many keys each delete benchmark iteration removes.
const deleteKeys = 5000

func deleteBenchKeys() []string {
	keys := make([]string, deleteKeys)
	for i := range keys {
		keys[i] = "topp:states/EPSG:900913/png/default/13/" + strconv.Itoa(i/64) + "/" + strconv.Itoa(i) + ".png"
	}
	return keys
}

// BenchmarkDelete removes 5,000 tiles with one Store.Delete (DeleteObjects
// requests of 1,000 keys, 4 in flight). Storing them again between
// iterations is not timed.
func BenchmarkDelete(b *testing.B) {
	s := newStore(b)
	keys := deleteBenchKeys()
	ctx := b.Context()
	var reqs s3store.RequestCounts
	for b.Loop() {
		b.StopTimer()
		putAll(b, s, keys, benchTile)
		before := s.Requests()
		b.StartTimer()
		n, err := s.Delete(ctx, keys)
		if err != nil || n != len(keys) {
			b.Fatalf("Delete: got %d, %v; want %d, nil", n, err, len(keys))
		}
		b.StopTimer()
		d := s.Requests().Sub(before)
		reqs.Delete += d.Delete
		b.StartTimer()
	}
	reportRate(b, deleteKeys*b.N, "keys/s")
	b.ReportMetric(float64(reqs.Delete)*1000/float64(deleteKeys*b.N), "requests/1000keys")
}

// BenchmarkRemoveObjectsRaw removes the same 5,000 tiles with one call to
// minio-go's RemoveObjects, fed by a channel: DeleteObjects requests of
// 1,000 keys, one after the other.
func BenchmarkRemoveObjectsRaw(b *testing.B) {
	raw, bucket := setup(b)
	s := newStore(b) // only to store the objects and name the prefix
	keys := deleteBenchKeys()
	ctx := b.Context()
	for b.Loop() {
		b.StopTimer()
		putAll(b, s, keys, benchTile)
		b.StartTimer()
		ch := make(chan minio.ObjectInfo)
		go func() {
			defer close(ch)
			for _, k := range keys {
				ch <- minio.ObjectInfo{Key: s.Prefix() + k}
			}
		}()
		for e := range raw.RemoveObjects(ctx, bucket, ch, minio.RemoveObjectsOptions{}) {
			b.Errorf("RemoveObjects: %s: %v", e.ObjectName, e.Err)
		}
	}
	reportRate(b, deleteKeys*b.N, "keys/s")
}
