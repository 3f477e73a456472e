// Package rangeread reads an archive where it lies with ranged reads, as
// the PMTiles reader asks for them (pmtiles.RangeReader): a local file, an
// object in a bucket, a file on a web server. A remote archive is checked
// at every read against the ETag its first read saw, so that an archive
// replaced while it is read is an error (ErrChanged), never tiles of two
// archives mixed; the source that reads it opens it again.
package rangeread

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"

	"tilecache/internal/apperr"
)

// MaxRead bounds the length of one read: a PMTiles directory or tile is
// far smaller, and the tile walk reads 1 MiB spans.
const MaxRead = 64 << 20

// ErrChanged is an archive replaced since its first read.
var ErrChanged = errors.New("the archive was replaced since it was opened")

// Location is where an archive lies, as a layer's source names it.
type Location struct {
	// Scheme is "file", "s3" or "https" ("http" for a test server).
	Scheme string
	// Path is the file's path (file).
	Path string
	// Bucket and Key name the object (s3).
	Bucket, Key string
	// URL is the whole URL (https, http).
	URL string
}

// String returns the location as it was written, a URL's query left out
// (it may carry a key).
func (l Location) String() string {
	switch l.Scheme {
	case "file":
		return l.Path
	case "s3":
		return "s3://" + l.Bucket + "/" + l.Key
	}
	if u, err := url.Parse(l.URL); err == nil {
		u.RawQuery, u.User = "", nil
		return u.String()
	}
	return l.Scheme + "://…"
}

// Parse reads an archive's location: an absolute or relative file path
// (or a file:// URL), s3://bucket/key or an https:// (or http://) URL, as
// an xyz source's upstream may be.
func Parse(raw string) (Location, error) {
	if raw == "" {
		return Location{}, errors.New("the archive's location is empty")
	}
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		return Location{Scheme: "file", Path: raw}, nil
	}
	switch strings.ToLower(scheme) {
	case "file":
		if rest == "" {
			return Location{}, fmt.Errorf("%q names no file", raw)
		}
		return Location{Scheme: "file", Path: rest}, nil
	case "s3":
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
			return Location{}, fmt.Errorf("%q is not s3://bucket/key of an object", raw)
		}
		return Location{Scheme: "s3", Bucket: bucket, Key: key}, nil
	case "https", "http":
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return Location{}, errors.New("the archive's URL does not parse or names no host")
		}
		return Location{Scheme: u.Scheme, URL: raw}, nil
	}
	return Location{}, fmt.Errorf("scheme %q: an archive is a file path, s3://bucket/key or an https:// URL", scheme)
}

func checkRange(off, n int64) error {
	if off < 0 || n <= 0 || n > MaxRead {
		return fmt.Errorf("read of %d bytes at %d: the length must be 1 to %d bytes", n, off, MaxRead)
	}
	return nil
}

// File reads a local file. It keeps the file open: a file replaced by
// another (renamed over it) is read as it was when opened.
type File struct {
	f    *os.File
	size int64
}

// OpenFile opens the file at path.
func OpenFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open archive: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open archive: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open archive: %s is not a regular file", path)
	}
	return &File{f: f, size: st.Size()}, nil
}

// Size returns the file's size when it was opened.
func (f *File) Size() int64 { return f.size }

// ReadRange implements pmtiles.RangeReader.
func (f *File) ReadRange(ctx context.Context, off, n int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkRange(off, n); err != nil {
		return nil, err
	}
	if off >= f.size {
		return nil, nil
	}
	b := make([]byte, min(n, f.size-off))
	k, err := f.f.ReadAt(b, off)
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("read archive %s: %w", f.f.Name(), err)
	}
	return b[:k], nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// etagged is what the remote readers share: the ETag of the first read,
// which every later read must answer with.
type etagged struct {
	mu   sync.Mutex
	etag string
	seen bool
}

// check records etag at the first read and compares it at the others.
func (e *etagged) check(etag string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.seen {
		e.etag, e.seen = etag, true
		return nil
	}
	if etag != e.etag {
		return fmt.Errorf("%w (ETag %s, now %s)", ErrChanged, e.etag, etag)
	}
	return nil
}

// ETag returns the ETag the first read saw ("" before it, or when the
// server sends none): what the archive was when it was opened.
func (e *etagged) ETag() string { return e.current() }

func (e *etagged) current() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.etag
}

// Objects reads ranges of objects in a bucket: the tile store's S3
// adapter (s3store.Store).
type Objects interface {
	// ReadObjectRange reads n bytes at off of the object; with etag set
	// only if the object still has it (else an error).
	ReadObjectRange(ctx context.Context, bucket, name string, off, n int64, etag string) (data []byte, gotETag string, size int64, err error)
}

// S3 reads an object of a bucket, every read after the first conditional
// on the ETag of the first (If-Match).
type S3 struct {
	objs        Objects
	bucket, key string
	etagged
}

// NewS3 returns the reader of object key of bucket, read through objs.
func NewS3(objs Objects, bucket, key string) *S3 {
	return &S3{objs: objs, bucket: bucket, key: key}
}

// ReadRange implements pmtiles.RangeReader.
func (s *S3) ReadRange(ctx context.Context, off, n int64) ([]byte, error) {
	if err := checkRange(off, n); err != nil {
		return nil, err
	}
	want := s.current()
	b, etag, _, err := s.objs.ReadObjectRange(ctx, s.bucket, s.key, off, n, want)
	if err != nil {
		if want != "" && apperr.Is(err, apperr.Conflict) {
			return nil, fmt.Errorf("read s3://%s/%s: %w: %v", s.bucket, s.key, ErrChanged, err)
		}
		return nil, fmt.Errorf("read s3://%s/%s: %w", s.bucket, s.key, err)
	}
	if etag != "" || len(b) > 0 {
		if err := s.check(etag); err != nil {
			return nil, fmt.Errorf("read s3://%s/%s: %w", s.bucket, s.key, err)
		}
	}
	return b, nil
}

// Fetcher fetches ranges of files from a web server: the upstream client
// (upstream.Client), which connects only where the layer's address policy
// allows, bounds answers and retries transient failures.
type Fetcher interface {
	FetchRange(ctx context.Context, url string, off, n int64) (data []byte, etag string, size int64, err error)
}

// HTTP reads a file from a web server with range requests. Every answer
// must carry the ETag of the first (a server without ETags is checked by
// the file's size instead).
type HTTP struct {
	f   Fetcher
	url string
	etagged
	sizeMu sync.Mutex
	size   int64 // -1 until known
}

// NewHTTP returns the reader of the file at url, fetched through f.
func NewHTTP(f Fetcher, url string) *HTTP { return &HTTP{f: f, url: url, size: -1} }

// ReadRange implements pmtiles.RangeReader.
func (h *HTTP) ReadRange(ctx context.Context, off, n int64) ([]byte, error) {
	if err := checkRange(off, n); err != nil {
		return nil, err
	}
	b, etag, size, err := h.f.FetchRange(ctx, h.url, off, n)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 && etag == "" {
		return nil, nil // past the end
	}
	if err := h.check(etag); err != nil {
		return nil, err
	}
	if size >= 0 {
		h.sizeMu.Lock()
		prev := h.size
		if prev < 0 {
			h.size = size
		}
		h.sizeMu.Unlock()
		if prev >= 0 && prev != size {
			return nil, fmt.Errorf("%w (%d bytes, now %d)", ErrChanged, prev, size)
		}
	}
	return b, nil
}
