package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"

	"tilecache/internal/apperr"
)

// maxRange bounds one ReadObjectRange.
const maxRange = 256 << 20

// ReadObjectRange reads n bytes at off of the object name (its whole
// name: the store's prefix is not applied) in bucket ("" is the store's
// own) with one ranged GET, through the store's client, credentials and
// retries: what an archive in a bucket read as a tile source needs. With
// etag set the GET is conditional on it (If-Match), so that an object
// replaced since the first read is apperr.Conflict, not a mix of two
// archives. It returns the bytes (fewer than n only at the object's end,
// none past it), the object's ETag and its whole size. A missing object
// or bucket is apperr.NotFound.
func (s *Store) ReadObjectRange(ctx context.Context, bucket, name string, off, n int64, etag string) ([]byte, string, int64, error) {
	if bucket == "" {
		bucket = s.bucket
	}
	if off < 0 || n <= 0 || n > maxRange {
		return nil, "", 0, apperr.Invalidf("s3store: range of %d bytes at %d: the length must be 1 to %d bytes", n, off, maxRange)
	}
	if err := checkName(name); err != nil {
		return nil, "", 0, apperr.Invalidf("s3store: object name %q: %s", name, err)
	}
	what := "read s3://" + bucket + "/" + name
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, "", 0, apperr.Invalidf("s3store: %s: %v", what, err)
	}
	if etag != "" {
		if err := opts.SetMatchETag(strings.Trim(etag, `"`)); err != nil {
			return nil, "", 0, apperr.Invalidf("s3store: %s: %v", what, err)
		}
	}
	body, info, h, err := s.core.GetObject(ctx, bucket, name, opts)
	if err != nil {
		var er minio.ErrorResponse
		if errors.As(err, &er) {
			switch {
			case er.Code == minio.NoSuchKey:
				return nil, "", 0, apperr.New(apperr.NotFound, "object %s not found in bucket %s", strconv.Quote(name), bucket)
			case er.Code == minio.NoSuchBucket:
				return nil, "", 0, apperr.New(apperr.NotFound, "S3 bucket %q does not exist", bucket)
			case er.StatusCode == http.StatusRequestedRangeNotSatisfiable || er.Code == "InvalidRange":
				return nil, etag, -1, nil // past the end: nothing there
			case er.StatusCode == http.StatusPreconditionFailed || er.Code == "PreconditionFailed":
				return nil, "", 0, apperr.New(apperr.Conflict, "s3://%s/%s was replaced since it was first read (its ETag is no longer %s)", bucket, name, etag)
			}
		}
		return nil, "", 0, s.fail(ctx, what, err)
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, n+1))
	if err != nil {
		return nil, "", 0, s.fail(ctx, what, err)
	}
	if int64(len(data)) > n {
		return nil, "", 0, fmt.Errorf("s3store: %s: more than the %d bytes asked for", what, n)
	}
	size := int64(-1)
	if _, total, ok := strings.Cut(h.Get("Content-Range"), "/"); ok {
		if v, err := strconv.ParseInt(total, 10, 64); err == nil {
			size = v
		}
	}
	return data, info.ETag, size, nil
}
