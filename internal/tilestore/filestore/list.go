package filestore

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"tilecache/internal/tilestore"
)

// List calls fn for every object whose key starts with prefix, in lexical
// key order.
func (s *Store) List(ctx context.Context, prefix string, fn func(tilestore.Object) error) error {
	return s.ListAfter(ctx, prefix, "", fn)
}

// ListAfter implements tilestore.AfterLister: List of the keys after
// after, skipping whole directories whose keys all come before it.
func (s *Store) ListAfter(ctx context.Context, prefix, after string, fn func(tilestore.Object) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %q: %w", prefix, err)
	}
	// Start at the deepest directory the prefix names in full; the rest of
	// the prefix filters that directory's entries.
	dir, namePrefix := "", prefix
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir, namePrefix = prefix[:i], prefix[i+1:]
		if checkKey(dir) != nil {
			return nil // no valid key starts with this prefix
		}
	}
	if err := s.walk(ctx, dir, namePrefix, after, fn); err != nil {
		return fmt.Errorf("list %q: %w", prefix, err)
	}
	return nil
}

type listEntry struct {
	sortKey string // name, plus "/" for a directory
	entry   fs.DirEntry
}

// walk lists the objects below the directory named by key prefix rel whose
// first segment below rel starts with namePrefix, and whose keys come
// after after (when set).
func (s *Store) walk(ctx context.Context, rel, namePrefix, after string, fn func(tilestore.Object) error) error {
	dirPath := s.dirPath(rel)
	f, err := os.Open(dirPath)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return err
	}
	des, err := f.ReadDir(-1)
	_ = f.Close()
	if err != nil {
		if isNotExist(err) {
			return nil // pruned or replaced concurrently
		}
		return err
	}
	entries := make([]listEntry, 0, len(des))
	for _, de := range des {
		name := de.Name()
		if name[0] == '.' || !strings.HasPrefix(name, namePrefix) {
			continue // sidecars, temp files and anything else hidden
		}
		switch {
		case de.IsDir():
			entries = append(entries, listEntry{name + "/", de})
		case de.Type().IsRegular():
			entries = append(entries, listEntry{name, de})
		}
	}
	// Sorting directories as "name/" gives lexical order of the full keys:
	// "a.png" < "a/…" < "a0…".
	slices.SortFunc(entries, func(a, b listEntry) int { return strings.Compare(a.sortKey, b.sortKey) })

	keyPrefix := ""
	if rel != "" {
		keyPrefix = rel + "/"
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := e.entry.Name()
		if e.entry.IsDir() {
			// Every key below starts with dir; when after does not, they
			// all come before it or all after it.
			if dir := keyPrefix + name + "/"; after != "" && !strings.HasPrefix(after, dir) && dir < after {
				continue
			}
			if err := s.walk(ctx, keyPrefix+name, "", after, fn); err != nil {
				return err
			}
			continue
		}
		if after != "" && keyPrefix+name <= after {
			continue
		}
		fi, err := e.entry.Info()
		if err != nil {
			if isNotExist(err) {
				continue // deleted since ReadDir
			}
			return err
		}
		o := tilestore.Object{Key: keyPrefix + name, Size: fi.Size(), Modified: fi.ModTime(), MD5: readSum(dirPath+sep+name, fi)}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}
