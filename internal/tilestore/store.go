// Package tilestore defines the tile store port: the object storage that holds
// rendered tiles under GeoWebCache's S3 blob store key layout.
//
// Implementations live in subpackages named after what they wrap (filestore
// for a directory on disk, s3store for S3-compatible buckets). Every
// implementation must pass the conformance suite in storetest.
//
// A missing object is not an error: Stat and Get report found=false, and
// Delete ignores keys that do not exist. Errors are wrapped with context and,
// where the cause is a dependency being unreachable, classified as
// apperr.Unavailable.
//
// # Checksums
//
// List and Stat report an object's MD5 where the backend knows it without
// reading the content (Object.MD5): S3 from the ETag of a single-part
// upload, the file store from what it recorded at Put. A caller that holds
// new content for a key can then tell, from a listing, whether storing it
// would change anything (a reseed skips unchanged tiles this way). An
// empty MD5 means unknown: the caller cannot tell, and must take the
// content as possibly different.
package tilestore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"time"
)

// Object describes a stored object without its content.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
	// MD5 is the content's MD5 digest in lower-case hex (ContentMD5), or
	// "" when the backend does not know it cheaply (an object uploaded in
	// parts, a file put into the tree by hand). A value that is not the
	// content's digest (the ETag of an object encrypted with SSE-KMS) costs
	// a caller only the skip it could have made: short of an MD5 collision
	// it matches no content.
	MD5 string
}

// ContentMD5 returns data's MD5 digest in lower-case hex, the form of
// Object.MD5.
func ContentMD5(data []byte) string {
	sum := md5.Sum(data)
	return hex.EncodeToString(sum[:])
}

// Meta is what a CDN needs to serve an object straight from the store.
type Meta struct {
	ContentType  string
	CacheControl string // empty: no Cache-Control stored
	// ContentEncoding is the content's Content-Encoding ("gzip" for a
	// compressed vector tile), served with it so that a client
	// decompresses it; empty: none.
	ContentEncoding string
}

// Store is the tile store port.
type Store interface {
	// Put stores data under key, replacing any previous object. Writes are
	// atomic: a concurrent Get sees the old or the new object, never a mix.
	Put(ctx context.Context, key string, data []byte, meta Meta) error
	// Get returns the object's content and meta; found is false when absent.
	Get(ctx context.Context, key string) (data []byte, meta Meta, found bool, err error)
	// Stat reports whether key exists, its size and (where known) its MD5,
	// without reading content.
	Stat(ctx context.Context, key string) (obj Object, found bool, err error)
	// Delete removes the given keys; absent keys are ignored. It returns how
	// many of the keys existed and were removed where the backend can tell
	// (a backend that cannot tell returns len(keys)).
	Delete(ctx context.Context, keys []string) (int, error)
	// List calls fn for every object whose key starts with prefix, in
	// lexical key order, with its size and (where known) its MD5. Returning an error from fn stops the listing and is
	// returned (wrapped) by List.
	List(ctx context.Context, prefix string, fn func(Object) error) error
}

// AfterLister is a Store that lists from a key on (both adapters are):
// a listing that deletes what it lists resumes from the last key it
// deleted instead of from the start (on a versioned bucket the start is
// a run of delete markers).
type AfterLister interface {
	// ListAfter is List of the keys greater than after alone (every key
	// with prefix when after is "").
	ListAfter(ctx context.Context, prefix, after string, fn func(Object) error) error
}

// DeleteBatch is the largest number of keys a caller passes to one Delete;
// it matches S3's DeleteObjects limit.
const DeleteBatch = 1000
