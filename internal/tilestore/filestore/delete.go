package filestore

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Delete removes the given keys, ignoring absent ones, and returns how many
// existed. Directories left empty are removed up to the root. All keys are
// validated before anything is removed.
func (s *Store) Delete(ctx context.Context, keys []string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("delete %d keys: %w", len(keys), err)
	}
	for _, key := range keys {
		if err := checkKey(key); err != nil {
			return 0, err
		}
	}
	n := 0
	var dirs []string // directories that lost an object, to prune
	for i, key := range keys {
		if i%64 == 63 {
			if err := ctx.Err(); err != nil {
				s.prune(dirs)
				return n, fmt.Errorf("delete %d keys: %w", len(keys), err)
			}
		}
		dir, name := splitKey(key)
		dirPath := s.dirPath(dir)
		removed, err := s.remove(key, dirPath, name)
		if err != nil {
			s.prune(dirs)
			return n, s.fsErr("delete", key, err)
		}
		if removed {
			n++
			if dir != "" && (len(dirs) == 0 || dirs[len(dirs)-1] != dirPath) {
				dirs = append(dirs, dirPath)
			}
		}
	}
	s.prune(dirs)
	return n, nil
}

// remove unlinks one object and its sidecar; removed reports whether the
// object existed.
func (s *Store) remove(key, dirPath, name string) (removed bool, err error) {
	p := dirPath + sep + name
	l := s.lock(key)
	l.Lock()
	defer l.Unlock()
	// syscall.Unlink, unlike os.Remove, never removes a directory: a
	// directory is a key prefix, not an object.
	if err := syscall.Unlink(p); err != nil {
		if isNotExist(err) {
			return false, nil
		}
		if fi, serr := os.Lstat(p); serr == nil && fi.IsDir() {
			return false, nil // EISDIR on Linux, EPERM elsewhere
		}
		return false, &fs.PathError{Op: "unlink", Path: p, Err: err}
	}
	return true, removeSidecar(sidecarPath(dirPath, name))
}

// prune removes the given directories and their ancestors, below the root,
// while they are empty. A concurrent Put that loses its fresh directory to
// pruning recreates it (see writeTemp).
func (s *Store) prune(dirs []string) {
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	// Longest first, so children go before their parents.
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	s.dirs.Lock()
	defer s.dirs.Unlock()
	for _, d := range dirs {
		for len(d) > len(s.base) && strings.HasPrefix(d, s.base) {
			if syscall.Rmdir(d) != nil {
				break // not empty (or gone): its ancestors are not empty either
			}
			d = filepath.Dir(d)
		}
	}
}
