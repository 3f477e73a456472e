package filestore

import (
	"strings"
	"unicode/utf8"

	"tilecache/internal/apperr"
)

const (
	maxKeyLen     = 1024 // S3's limit
	maxSegmentLen = 200  // leaves room for the sidecar and temp suffixes within NAME_MAX (255)
)

// checkKey rejects keys that could escape the root, alias another key or
// collide with the store's own files.
func checkKey(key string) error {
	switch {
	case key == "":
		return apperr.Invalidf("empty key")
	case len(key) > maxKeyLen:
		return apperr.Invalidf("key longer than %d bytes", maxKeyLen)
	case !utf8.ValidString(key):
		return apperr.Invalidf("key %q is not valid UTF-8", key)
	case strings.ContainsAny(key, "\\\x00"):
		return apperr.Invalidf("key %q contains a backslash or NUL", key)
	case key[0] == '/':
		return apperr.Invalidf("key %q is absolute", key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return apperr.Invalidf("key %q has an empty path segment", key)
		case seg == "." || seg == "..":
			return apperr.Invalidf("key %q has a %q path segment", key, seg)
		case seg[0] == '.':
			return apperr.Invalidf("key %q has a path segment starting with '.' (reserved by the file store)", key)
		case len(seg) > maxSegmentLen:
			return apperr.Invalidf("key %q has a path segment longer than %d bytes", key, maxSegmentLen)
		}
	}
	return nil
}

// splitKey splits a valid key into its directory ("" at the root) and name.
func splitKey(key string) (dir, name string) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", key
	}
	return key[:i], key[i+1:]
}
