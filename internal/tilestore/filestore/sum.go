package filestore

import (
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"tilecache/internal/tilestore"
)

// sumAttr is the extended attribute in which Put records an object's MD5
// (see the package comment, Checksums).
const sumAttr = "user.tilecache.md5"

// setSum records data's MD5 on f, the temporary file data was just
// written to, with the file's size and modification time as they are now.
// Best effort: on a filesystem without user extended attributes the
// object's MD5 stays unknown.
func setSum(f *os.File, data []byte) {
	fi, err := f.Stat()
	if err != nil {
		return
	}
	v := make([]byte, 0, 64)
	v = append(v, tilestore.ContentMD5(data)...)
	v = append(v, ' ')
	v = strconv.AppendInt(v, fi.Size(), 10)
	v = append(v, ' ')
	v = strconv.AppendInt(v, fi.ModTime().UnixNano(), 10)
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { _ = unix.Fsetxattr(int(fd), sumAttr, v, 0) })
}

// readSum returns the MD5 Put recorded on the file at path, whose size and
// modification time are fi's now, or "" when it recorded none or the file
// changed since (its size or time differ: it was written in place by
// something else, which keeps the attribute).
func readSum(path string, fi fs.FileInfo) string {
	var buf [96]byte
	n, err := unix.Getxattr(path, sumAttr, buf[:])
	if err != nil || n <= 0 {
		return ""
	}
	sum, rest, ok := strings.Cut(string(buf[:n]), " ")
	if !ok || !isHexMD5(sum) {
		return ""
	}
	size, mtime, ok := strings.Cut(rest, " ")
	if !ok || size != strconv.FormatInt(fi.Size(), 10) || mtime != strconv.FormatInt(fi.ModTime().UnixNano(), 10) {
		return ""
	}
	return sum
}

// isHexMD5 reports whether s is an MD5 digest in lower-case hex.
func isHexMD5(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
