package s3store

import (
	"context"
	"io"
	"strconv"

	"github.com/minio/minio-go/v7"

	"tilecache/internal/apperr"
)

// Open streams an object (an access log, say: too large to hold in
// memory); the caller closes it. A missing object is apperr.NotFound.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	name, err := s.objectName(key)
	if err != nil {
		return nil, err
	}
	body, _, _, err := s.core.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		if isNoSuchKey(err) {
			return nil, apperr.New(apperr.NotFound, "object %s not found in bucket %s", strconv.Quote(key), s.bucket)
		}
		return nil, s.fail(ctx, "open "+strconv.Quote(key), err)
	}
	return body, nil
}
