package filestore

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"tilecache/internal/tilestore"
)

// Upload stores size bytes read from r under key (tilestore.Uploader):
// copied to a hidden file beside the object's, then renamed over it, as
// Put does. The file records no MD5 (as a file put by hand).
func (s *Store) Upload(ctx context.Context, key string, r io.Reader, size int64, meta tilestore.Meta) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("upload %q: %w", key, err)
	}
	if err := checkKey(key); err != nil {
		return err
	}
	dir, name := splitKey(key)
	dirPath := s.dirPath(dir)
	s.dirs.RLock()
	err := os.MkdirAll(dirPath, dirMode)
	var tmp string
	if err == nil {
		tmp = dirPath + sep + "." + name + ".tmp-" + s.tmpTag + "-" + strconv.FormatUint(s.tmpSeq.Add(1), 36)
		err = copyToFile(tmp, r, size, s.sync)
	}
	s.dirs.RUnlock()
	if err != nil {
		_ = os.Remove(tmp)
		return s.fsErr("upload", key, err)
	}
	return s.commit("upload", key, dirPath, name, tmp, meta)
}

// copyToFile writes size bytes of r to a new file at p.
func copyToFile(p string, r io.Reader, size int64, sync bool) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(r, size))
	if err == nil && n != size {
		err = fmt.Errorf("%d bytes read of %d", n, size)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
