package s3store

import (
	"context"
	"mime"
	"net/url"
	"strconv"
	"time"

	"tilecache/internal/apperr"
)

// Link returns a URL that GETs key without credentials until expires has
// passed (a presigned GET; at most 7 days, S3's limit), answered as an
// attachment named filename: how an archive an export wrote, far larger
// than an API answer may be, is downloaded. It makes no request: a missing
// object is a 404 of the link.
func (s *Store) Link(ctx context.Context, key, filename string, expires time.Duration) (string, error) {
	if expires <= 0 || expires > 7*24*time.Hour {
		return "", apperr.Invalidf("s3store: a link lasts 1 s to 7 days, not %v", expires)
	}
	name, err := s.objectName(key)
	if err != nil {
		return "", err
	}
	q := url.Values{}
	if filename != "" {
		q.Set("response-content-disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filename}))
	}
	u, err := s.client.PresignedGetObject(ctx, s.bucket, name, expires, q)
	if err != nil {
		return "", s.fail(ctx, "link "+strconv.Quote(key), err)
	}
	return u.String(), nil
}
