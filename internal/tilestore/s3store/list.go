package s3store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/minio/minio-go/v7"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
)

// List calls fn for every object whose key starts with prefix, in the
// lexical (UTF-8 byte) order S3 guarantees, fetching pages of 1,000 keys
// as fn consumes them. Keys are reported without the store's prefix, with
// the MD5 each ETag stands for (see etagMD5).
//
// It uses minio-go's iterator rather than its channel API: the iterator runs
// on this goroutine and stops when the loop stops, so returning early (fn
// failed, ctx was cancelled) leaves no goroutine behind, whereas an
// abandoned ListObjects channel can leave minio-go's goroutine blocked on a
// send.
//
// MinIO refuses to list a prefix with an empty, "." or ".." path segment
// ("a//", "a/../"), names it never stores. List then lists from the last
// "/" before that segment and filters, so such prefixes behave as on AWS.
func (s *Store) List(ctx context.Context, prefix string, fn func(tilestore.Object) error) error {
	return s.ListAfter(ctx, prefix, "", fn)
}

// ListAfter implements tilestore.AfterLister: List from the first key
// after after on (S3's StartAfter), so the keys before it are not listed
// again.
func (s *Store) ListAfter(ctx context.Context, prefix, after string, fn func(tilestore.Object) error) error {
	action := "list " + strconv.Quote(prefix)
	if after != "" {
		action += " after " + strconv.Quote(after)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	full := s.prefix + prefix
	if len(full) > maxKeyLen {
		return nil // no key is that long
	}
	if !utf8.ValidString(full) {
		return apperr.Invalidf("list prefix %q is not valid UTF-8", prefix)
	}
	start := ""
	if after != "" {
		start = s.prefix + after
	}
	err := s.list(ctx, action, full, full, start, fn)
	if errors.Is(err, errNameRejected) {
		if from := beforeBadSegment(full); from != full {
			return s.list(ctx, action, from, full, start, fn)
		}
	}
	return err
}

// errNameRejected is list's report that the server refused the listing
// prefix as an object name, before fn was called.
var errNameRejected = errors.New("listing prefix rejected")

// list lists the objects whose names start with from (and come after
// start, when set), and calls fn for those whose names start with full.
func (s *Store) list(ctx context.Context, action, from, full, start string, fn func(tilestore.Object) error) error {
	fetchOwner := false
	objects := s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{
		Prefix:     from,
		StartAfter: start,
		Recursive:  true,
		FetchOwner: &fetchOwner,
	})
	called := false
	for obj := range objects {
		if obj.Err != nil {
			if !called && from == full && isNameRejected(obj.Err) {
				return errNameRejected
			}
			return s.fail(ctx, action, obj.Err)
		}
		// minio-go checks ctx only between pages.
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
		if !strings.HasPrefix(obj.Key, full) || start != "" && obj.Key <= start {
			continue
		}
		key := obj.Key[len(s.prefix):]
		if key == "" {
			continue // the prefix itself, as a "directory" object
		}
		called = true
		if err := fn(tilestore.Object{Key: key, Size: obj.Size, Modified: obj.LastModified, MD5: etagMD5(obj.ETag)}); err != nil {
			return fmt.Errorf("%s: %w", action, err)
		}
	}
	// minio-go ends the listing silently when ctx is done.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", action, err)
	}
	return nil
}

// isNameRejected reports MinIO's refusal of an object name or listing
// prefix.
func isNameRejected(err error) bool {
	var er minio.ErrorResponse
	return errors.As(err, &er) && (er.Code == minio.XMinioInvalidObjectName || er.Code == codeMinioInvalidResource)
}

// beforeBadSegment returns name up to the "/" before its first empty, "."
// or ".." segment (a trailing empty segment, after a final "/", is fine),
// or name itself when it has none.
func beforeBadSegment(name string) string {
	start := 0
	for {
		i := strings.IndexByte(name[start:], '/')
		seg := name[start:]
		if i >= 0 {
			seg = seg[:i]
		}
		if seg == "." || seg == ".." || seg == "" && i >= 0 {
			return name[:start]
		}
		if i < 0 {
			return name
		}
		start += i + 1
	}
}
