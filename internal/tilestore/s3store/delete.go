package s3store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/minio/minio-go/v7"

	"tilecache/internal/tilestore"
)

// Delete removes the given keys with DeleteObjects requests of up to 1,000
// keys each, keeping up to Options.DeleteConcurrency of them in flight.
// Absent keys are ignored.
//
// S3 reports every key of a DeleteObjects request as deleted, whether or not
// it existed, so the count returned is that of the keys S3 confirmed: on
// success, len(keys) (the port's "backend that cannot tell" case). On
// failure it is the number confirmed before the error, and the error names
// the first key that failed and how many did; once a request fails, no
// further requests are started, and the requests already in flight finish.
func (s *Store) Delete(ctx context.Context, keys []string) (int, error) {
	what := strconv.Itoa(len(keys)) + " keys"
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("delete %s: %w", what, err)
	}
	names := make([]string, len(keys))
	for i, k := range keys {
		name, err := s.objectName(k)
		if err != nil {
			return 0, err
		}
		names[i] = name
	}
	batches := slices.Collect(slices.Chunk(names, tilestore.DeleteBatch))

	var (
		next, deleted atomic.Int64
		failed        atomic.Bool
		mu            sync.Mutex
		firstErr      error
		firstKey      string
		failures      int
		wg            sync.WaitGroup
	)
	for range min(s.deleteConcurrency, len(batches)) {
		wg.Go(func() {
			for !failed.Load() && ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(batches) {
					return
				}
				n, errs := s.deleteBatch(ctx, batches[i])
				deleted.Add(int64(n))
				if len(errs) == 0 {
					continue
				}
				failed.Store(true)
				mu.Lock()
				if firstErr == nil {
					firstKey, firstErr = errs[0].ObjectName, errs[0].Err
				}
				failures += len(errs)
				mu.Unlock()
			}
		})
	}
	wg.Wait()

	n := int(deleted.Load())
	if firstErr != nil {
		key := strings.TrimPrefix(firstKey, s.prefix)
		return n, s.fail(ctx, fmt.Sprintf("delete %s (%d failed, first %q)", what, failures, key), firstErr)
	}
	if err := ctx.Err(); err != nil {
		return n, fmt.Errorf("delete %s: %w", what, err)
	}
	return n, nil
}

// deleteBatch removes up to 1,000 objects with one DeleteObjects request
// and returns how many S3 confirmed, and the per-key failures.
func (s *Store) deleteBatch(ctx context.Context, names []string) (int, []minio.RemoveObjectResult) {
	// The channel holds the whole batch and is closed before minio-go
	// reads it, so its goroutine sends exactly one request and never
	// waits on us; reading every result below lets it end.
	ch := make(chan minio.ObjectInfo, len(names))
	for _, name := range names {
		ch <- minio.ObjectInfo{Key: name}
	}
	close(ch)
	n := 0
	var errs []minio.RemoveObjectResult
	for res := range s.client.RemoveObjectsWithResult(ctx, s.bucket, ch, minio.RemoveObjectsOptions{}) {
		if res.Err != nil {
			errs = append(errs, res)
			continue
		}
		n++
	}
	return n, errs
}
