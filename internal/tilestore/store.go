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
package tilestore

import (
	"context"
	"time"
)

// Object describes a stored object without its content.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// Meta is what a CDN needs to serve an object straight from the store.
type Meta struct {
	ContentType  string
	CacheControl string // empty: no Cache-Control stored
}

// Store is the tile store port.
type Store interface {
	// Put stores data under key, replacing any previous object. Writes are
	// atomic: a concurrent Get sees the old or the new object, never a mix.
	Put(ctx context.Context, key string, data []byte, meta Meta) error
	// Get returns the object's content and meta; found is false when absent.
	Get(ctx context.Context, key string) (data []byte, meta Meta, found bool, err error)
	// Stat reports whether key exists and its size, without reading content.
	Stat(ctx context.Context, key string) (obj Object, found bool, err error)
	// Delete removes the given keys; absent keys are ignored. It returns how
	// many of the keys existed and were removed where the backend can tell
	// (a backend that cannot tell returns len(keys)).
	Delete(ctx context.Context, keys []string) (int, error)
	// List calls fn for every object whose key starts with prefix, in
	// lexical key order. Returning an error from fn stops the listing and is
	// returned (wrapped) by List.
	List(ctx context.Context, prefix string, fn func(Object) error) error
}

// DeleteBatch is the largest number of keys a caller passes to one Delete;
// it matches S3's DeleteObjects limit.
const DeleteBatch = 1000
