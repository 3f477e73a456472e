// Package filestore is the embedded tilestore.Store: a directory on disk
// whose relative paths are the object keys, so the tree looks exactly like
// the S3 bucket (key "topp:states/EPSG:4326/png/default/3/5/2.png" is the
// file <root>/topp:states/EPSG:4326/png/default/3/5/2.png, holding the
// object's bytes and nothing else). The tree can be served by a static file
// server or copied to a bucket as it is.
//
// # Keys
//
// A key is a relative slash-separated path of non-empty segments. Keys that
// are empty, absolute, longer than 1024 bytes or not UTF-8, that contain a
// backslash or NUL, an empty segment ("a//b", "a/") or a segment starting
// with "." (which covers "." and "..") are rejected with apperr.Invalid, so
// no key can name a file outside the root. Segments starting with "." are
// reserved for the store's own sidecar and temporary files.
//
// A filesystem cannot hold both an object "a/b" and an object "a/b/c"; the
// second Put of such a pair fails with apperr.Conflict. GeoWebCache's key
// layout never produces such pairs.
//
// # Meta
//
// Meta costs nothing in the common case: when ContentType is the default for
// the key's extension (png → image/png, jpeg → image/jpeg, pbf →
// application/vnd.mapbox-vector-tile, …; application/octet-stream for
// unknown extensions) and CacheControl is empty, no meta is stored and Get
// derives it from the extension. Any other meta is stored as JSON in a hidden
// sidecar next to the object, ".<name>.meta", which List never reports and
// Delete removes with the object. Get therefore returns exactly the meta that
// was put. A file copied into the tree from outside (without sidecar) is
// served with the default meta of its extension.
//
// # Atomicity and durability
//
// Put writes the object (and its sidecar, if any) to hidden temporary files
// in the object's directory, then renames them into place, so a reader sees
// the old or the new object, never a mix. Object and sidecar are renamed
// under a per-key lock that Get also takes, so within one Store a Get never
// pairs new bytes with old meta. Put does not fsync by default: this is the
// seeding hot path, tiles can always be re-rendered, and a crash of the
// process (as opposed to the machine) loses nothing. A power loss may leave
// recently written objects empty or missing; use NewWithOptions with
// Options.Sync when that matters. Temporary files left by a crash are hidden
// (".<name>.tmp-…"), never listed, and may be removed by hand.
//
// Delete removes objects and then the directories it left empty, up to but
// not including the root, so a truncated layer leaves no empty tree behind.
//
// List walks only the directories the prefix can match and reports keys in
// lexical byte order (which is not the order of a plain directory walk:
// "a.png" sorts before "a/b.png"). It reports regular files only: symbolic
// links and other special files put into the tree by hand are not listed.
//
// # Checksums
//
// Put records the object's MD5 in an extended attribute of its file
// (user.tilecache.md5), set on the temporary file before the rename, so it
// moves into place with the content; beside the digest it keeps the file's
// size and modification time. List and Stat report the digest (Object.MD5)
// while size and time still match, and "" (unknown) otherwise: for a file
// put into the tree by hand, one rewritten in place by another program
// (which keeps the attribute), or a filesystem without user extended
// attributes. A copy that keeps attributes and times (cp -a, rsync -aX)
// keeps the digest, which is still that of its content. Reading it costs
// one getxattr per object listed.
package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"tilecache/internal/apperr"
	"tilecache/internal/tilestore"
)

var _ tilestore.Store = (*Store)(nil)

const (
	lockStripes = 256
	fileMode    = 0o644
	dirMode     = 0o755
	sep         = string(filepath.Separator)
)

// Options tunes a Store. The zero value is what New uses.
type Options struct {
	// Sync makes Put fsync each file and its directory before returning,
	// trading seeding throughput for durability across power loss.
	Sync bool
}

// Store is a tilestore.Store backed by a directory. It is safe for
// concurrent use.
type Store struct {
	root   string // absolute, cleaned
	base   string // root with a trailing separator: base+relative path is a path
	sync   bool
	tmpTag string        // distinguishes this Store's temp files from other processes'
	tmpSeq atomic.Uint64 // makes temp names unique within this Store
	seed   maphash.Seed
	locks  [lockStripes]sync.RWMutex // striped by key: pairs object and sidecar renames
	// dirs orders directory creation against pruning: a Put holds it shared
	// from creating its directory until its temporary file is in it (from
	// then on the directory is not empty), Delete's pruning holds it
	// exclusively. Within one Store a Put then never loses its directory.
	dirs sync.RWMutex
}

// New returns a Store rooted at root, creating the directory if needed.
func New(root string) (*Store, error) {
	return NewWithOptions(root, Options{})
}

// NewWithOptions is New with options.
func NewWithOptions(root string, o Options) (*Store, error) {
	if root == "" {
		return nil, apperr.Invalidf("filestore: empty root directory")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("filestore: resolve root %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, fmt.Errorf("filestore: create root %q: %w", abs, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("filestore: stat root %q: %w", abs, err)
	}
	if !fi.IsDir() {
		return nil, apperr.Invalidf("filestore: root %q is not a directory", abs)
	}
	base := abs
	if !strings.HasSuffix(base, sep) {
		base += sep
	}
	return &Store{
		root:   abs,
		base:   base,
		sync:   o.Sync,
		tmpTag: strconv.FormatUint(rand.Uint64(), 36),
		seed:   maphash.MakeSeed(),
	}, nil
}

// Root returns the absolute path of the store's directory.
func (s *Store) Root() string { return s.root }

// Put stores data under key, replacing any previous object atomically.
func (s *Store) Put(ctx context.Context, key string, data []byte, meta tilestore.Meta) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("put %q: %w", key, err)
	}
	if err := checkKey(key); err != nil {
		return err
	}
	dir, name := splitKey(key)
	dirPath := s.dirPath(dir)

	tmp, err := s.writeTemp(dirPath, name, data, true, true)
	if err != nil {
		return s.fsErr("put", key, err)
	}
	return s.commit("put", key, dirPath, name, tmp, meta)
}

// commit puts the written temporary file tmp in place as the object key
// (in dirPath, named name) with meta's sidecar, as one object replaced
// for readers; op names the operation in errors. tmp is removed when it
// fails.
func (s *Store) commit(op, key, dirPath, name, tmp string, meta tilestore.Meta) error {
	var metaTmp string
	if !isDefaultMeta(name, meta) {
		b, err := json.Marshal(sidecar(meta))
		if err == nil {
			metaTmp, err = s.writeTemp(dirPath, name, b, false, false)
		}
		if err != nil {
			_ = os.Remove(tmp)
			return s.fsErr(op, key, err)
		}
	}

	dataPath := dirPath + sep + name
	metaPath := sidecarPath(dirPath, name)
	l := s.lock(key)
	l.Lock()
	// The object first: if it fails (a directory is in the way), the old
	// object keeps its old sidecar.
	err := os.Rename(tmp, dataPath)
	if err != nil {
		if fi, serr := os.Lstat(dataPath); serr == nil && fi.IsDir() {
			// Linux says EISDIR, ENOTEMPTY or EEXIST depending on the case.
			err = &fs.PathError{Op: "rename", Path: dataPath, Err: syscall.EISDIR}
		}
	} else {
		if metaTmp != "" {
			err = os.Rename(metaTmp, metaPath)
		} else {
			err = removeSidecar(metaPath)
		}
	}
	l.Unlock()
	if err != nil {
		_ = os.Remove(tmp)
		if metaTmp != "" {
			_ = os.Remove(metaTmp)
		}
		return s.fsErr(op, key, err)
	}
	if s.sync {
		if err := syncDir(dirPath); err != nil {
			return s.fsErr(op, key, err)
		}
	}
	return nil
}

// writeTemp writes b to a new hidden file in dirPath and returns its path.
// With mkdir, missing directories are created; the loop also covers a
// concurrent Delete pruning a directory between MkdirAll and the create.
// With sum, b's MD5 is recorded on the file (setSum).
func (s *Store) writeTemp(dirPath, name string, b []byte, mkdir, sum bool) (string, error) {
	if mkdir {
		s.dirs.RLock()
		defer s.dirs.RUnlock()
	}
	const attempts = 20
	for attempt := 1; ; attempt++ {
		p := dirPath + sep + "." + name + ".tmp-" + s.tmpTag + "-" + strconv.FormatUint(s.tmpSeq.Add(1), 36)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
		if err != nil {
			if attempt < attempts && mkdir && errors.Is(err, fs.ErrNotExist) {
				// A concurrent Delete may prune what MkdirAll creates,
				// making it fail with ErrNotExist or ErrExist: try again.
				if err := os.MkdirAll(dirPath, dirMode); err != nil &&
					!errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrExist) {
					return "", err
				}
				continue
			}
			if attempt < attempts && errors.Is(err, fs.ErrExist) {
				continue
			}
			return "", err
		}
		_, err = f.Write(b)
		if err == nil && sum {
			setSum(f, b)
		}
		if err == nil && s.sync {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(p)
			return "", err
		}
		return p, nil
	}
}

// Get returns the object's content and meta; found is false when absent.
func (s *Store) Get(ctx context.Context, key string) ([]byte, tilestore.Meta, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, tilestore.Meta{}, false, fmt.Errorf("get %q: %w", key, err)
	}
	if err := checkKey(key); err != nil {
		return nil, tilestore.Meta{}, false, err
	}
	dir, name := splitKey(key)
	dirPath := s.dirPath(dir)

	// Open the object and read its sidecar under the key's read lock, so
	// both belong to the same Put; the content is read afterwards from the
	// open file, which a later rename cannot change.
	l := s.lock(key)
	l.RLock()
	f, err := os.Open(dirPath + sep + name)
	if err != nil {
		l.RUnlock()
		if isNotExist(err) {
			return nil, tilestore.Meta{}, false, nil
		}
		return nil, tilestore.Meta{}, false, s.fsErr("get", key, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		l.RUnlock()
		_ = f.Close()
		if err != nil {
			return nil, tilestore.Meta{}, false, s.fsErr("get", key, err)
		}
		return nil, tilestore.Meta{}, false, nil // a directory: a prefix, not an object
	}
	meta, err := readMeta(dirPath, name)
	l.RUnlock()
	if err != nil {
		_ = f.Close()
		return nil, tilestore.Meta{}, false, s.fsErr("get", key, err)
	}
	data := make([]byte, fi.Size())
	_, err = io.ReadFull(f, data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, tilestore.Meta{}, false, s.fsErr("get", key, err)
	}
	return data, meta, true, nil
}

// Open is Get without reading the content: the caller reads the open
// file (which a later Put cannot change: Puts rename new files into
// place) and closes it. Serving it with io.Copy to an HTTP response lets
// the kernel copy it (sendfile).
func (s *Store) Open(ctx context.Context, key string) (*os.File, int64, tilestore.Meta, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, tilestore.Meta{}, false, fmt.Errorf("open %q: %w", key, err)
	}
	if err := checkKey(key); err != nil {
		return nil, 0, tilestore.Meta{}, false, err
	}
	dir, name := splitKey(key)
	dirPath := s.dirPath(dir)
	l := s.lock(key)
	l.RLock()
	defer l.RUnlock()
	f, err := os.Open(dirPath + sep + name)
	if err != nil {
		if isNotExist(err) {
			return nil, 0, tilestore.Meta{}, false, nil
		}
		return nil, 0, tilestore.Meta{}, false, s.fsErr("open", key, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		if err != nil {
			return nil, 0, tilestore.Meta{}, false, s.fsErr("open", key, err)
		}
		return nil, 0, tilestore.Meta{}, false, nil
	}
	meta, err := readMeta(dirPath, name)
	if err != nil {
		_ = f.Close()
		return nil, 0, tilestore.Meta{}, false, s.fsErr("open", key, err)
	}
	return f, fi.Size(), meta, true, nil
}

// Stat reports whether key exists, its size and its MD5 when Put recorded
// it, without reading content.
func (s *Store) Stat(ctx context.Context, key string) (tilestore.Object, bool, error) {
	if err := ctx.Err(); err != nil {
		return tilestore.Object{}, false, fmt.Errorf("stat %q: %w", key, err)
	}
	if err := checkKey(key); err != nil {
		return tilestore.Object{}, false, err
	}
	fi, err := os.Stat(s.path(key))
	if err != nil {
		if isNotExist(err) {
			return tilestore.Object{}, false, nil
		}
		return tilestore.Object{}, false, s.fsErr("stat", key, err)
	}
	if !fi.Mode().IsRegular() {
		return tilestore.Object{}, false, nil
	}
	return tilestore.Object{Key: key, Size: fi.Size(), Modified: fi.ModTime(), MD5: readSum(s.path(key), fi)}, true, nil
}

func (s *Store) dirPath(dir string) string {
	if dir == "" {
		return s.root
	}
	return s.base + filepath.FromSlash(dir)
}

func (s *Store) path(key string) string { return s.base + filepath.FromSlash(key) }

func (s *Store) lock(key string) *sync.RWMutex {
	return &s.locks[maphash.String(s.seed, key)%lockStripes]
}

// fsErr wraps a filesystem error. A file where a directory is needed, or the
// reverse, means the key collides with another key's path: apperr.Conflict.
func (s *Store) fsErr(op, key string, err error) error {
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
		return apperr.Wrap(apperr.Conflict, err,
			"%s %q: in the file store a key cannot be both an object and a prefix of other keys", op, key)
	}
	return fmt.Errorf("%s %q: %w", op, key, err)
}

// isNotExist reports a missing file, or a missing directory on the way to it
// (ENOTDIR: an object where the key needs a directory).
func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func syncDir(dirPath string) error {
	d, err := os.Open(dirPath)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
