package s3store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/minio/minio-go/v7"
	"golang.org/x/sync/errgroup"

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

	// Up to deleteConcurrency requests in flight; once one fails, no
	// further request starts (not even in the slot the failure freed) and
	// those in flight finish: a plain group, which cancels nothing.
	var (
		deleted, failures atomic.Int64
		failed            atomic.Bool
		g                 errgroup.Group
	)
	g.SetLimit(s.deleteConcurrency)
	for _, batch := range batches {
		if failed.Load() || ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if failed.Load() || ctx.Err() != nil {
				return nil
			}
			n, errs := s.deleteBatch(ctx, batch)
			deleted.Add(int64(n))
			if len(errs) == 0 {
				return nil
			}
			failed.Store(true)
			failures.Add(int64(len(errs)))
			return &keyError{name: errs[0].ObjectName, err: errs[0].Err}
		})
	}
	err := g.Wait()

	n := int(deleted.Load())
	var ke *keyError
	if errors.As(err, &ke) {
		key := strings.TrimPrefix(ke.name, s.prefix)
		return n, s.fail(ctx, fmt.Sprintf("delete %s (%d failed, first %q)", what, failures.Load(), key), ke.err)
	}
	if err := ctx.Err(); err != nil {
		return n, fmt.Errorf("delete %s: %w", what, err)
	}
	return n, nil
}

// keyError is the first failure of a DeleteObjects request: the object
// and S3's error for it.
type keyError struct {
	name string
	err  error
}

func (e *keyError) Error() string { return e.name + ": " + e.err.Error() }

func (e *keyError) Unwrap() error { return e.err }

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
