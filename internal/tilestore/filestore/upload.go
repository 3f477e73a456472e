package filestore

import (
	"context"
	"encoding/json"
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
	var metaTmp string
	if !isDefaultMeta(name, meta) {
		b, err := json.Marshal(sidecar(meta))
		if err == nil {
			metaTmp, err = s.writeTemp(dirPath, name, b, false, false)
		}
		if err != nil {
			_ = os.Remove(tmp)
			return s.fsErr("upload", key, err)
		}
	}
	l := s.lock(key)
	l.Lock()
	err = os.Rename(tmp, dirPath+sep+name)
	if err == nil {
		if metaTmp != "" {
			err = os.Rename(metaTmp, sidecarPath(dirPath, name))
		} else {
			err = removeSidecar(sidecarPath(dirPath, name))
		}
	}
	l.Unlock()
	if err != nil {
		_ = os.Remove(tmp)
		if metaTmp != "" {
			_ = os.Remove(metaTmp)
		}
		return s.fsErr("upload", key, err)
	}
	if s.sync {
		return syncDir(dirPath)
	}
	return nil
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
