package s3store

import (
	"context"
	"io"
	"strconv"

	"github.com/minio/minio-go/v7"

	"tilecache/internal/tilestore"
)

// UploadPartSize is the size of each part of an upload: an object larger
// than one part goes up as a multipart upload, its parts sent 4 at a
// time when r is a file (an io.ReaderAt), one after the other otherwise.
const UploadPartSize = 16 << 20

// Upload stores size bytes read from r under key (tilestore.Uploader):
// one PUT up to UploadPartSize, a multipart upload above, which S3 makes
// visible atomically when it completes. A failed multipart upload is
// aborted; a part that fails is sent again by minio-go.
func (s *Store) Upload(ctx context.Context, key string, r io.Reader, size int64, meta tilestore.Meta) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := s.objectName(key)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, s.bucket, name, r, size, minio.PutObjectOptions{
		ContentType:     meta.ContentType,
		CacheControl:    meta.CacheControl,
		ContentEncoding: meta.ContentEncoding,
		PartSize:        UploadPartSize,
		NumThreads:      4,
		SendContentMd5:  false,
	})
	if err != nil {
		return s.fail(ctx, "upload "+strconv.Quote(key), err)
	}
	return nil
}
