package tileserve

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"tilecache/internal/httperr"
	"tilecache/internal/tilestore"
)

// archiveCacheControl is the Cache-Control of an archive stored without
// one: an archive may be replaced by a new export, and a client that
// reads it in ranges checks each answer's ETag, so caches keep it
// briefly and revalidate.
const archiveCacheControl = "public, max-age=300"

// isArchive reports whether rel (a key without the prefix) is under the
// archives' directory: objects served as they are, ranges included.
func isArchive(rel string) bool {
	return strings.HasPrefix(rel, tilestore.ArchivesDir+"/")
}

// serveArchive answers an archive object with range support (single and
// multiple ranges, If-Range, If-None-Match on its ETag), as the bucket
// behind the CDN does: from an open file where the store hands one out
// (the local file store), else from the object read whole.
//
// The archive of a private layer (archives/{its id}/…) is not served: a
// tile token opens tiles, not a whole archive.
func (h *Objects) serveArchive(w http.ResponseWriter, r *http.Request, rel, key string) {
	if seg := strings.Split(rel, "/"); len(seg) > 1 {
		if l, ok := h.layers.ByID(seg[1]); ok && l.Private {
			notFoundText(w, r)
			return
		}
	}
	var content io.ReadSeeker
	var meta tilestore.Meta
	var modified time.Time
	var etag string
	if o, ok := h.tiles.(fileOpener); ok {
		f, size, m, found, err := o.Open(r.Context(), key)
		if err != nil {
			storeReadFailed(w, r, h.log, err)
			return
		}
		if !found {
			notFoundText(w, r)
			return
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil {
			modified = fi.ModTime()
			etag = fmt.Sprintf(`"%x-%x"`, size, fi.ModTime().UnixNano())
		}
		content, meta = f, m
	} else {
		data, m, found, err := h.tiles.Get(r.Context(), key)
		if err != nil {
			storeReadFailed(w, r, h.log, err)
			return
		}
		if !found {
			notFoundText(w, r)
			return
		}
		etag = `"` + tilestore.ContentMD5(data) + `"`
		content, meta = bytes.NewReader(data), m
	}
	hd := w.Header()
	hd.Set("Access-Control-Expose-Headers", "ETag, Content-Length, Content-Type, Content-Range, Accept-Ranges")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", ObjectPolicy)
	hd.Set("Content-Type", orDefault(meta.ContentType, "application/octet-stream"))
	hd.Set("Cache-Control", orDefault(meta.CacheControl, archiveCacheControl))
	if etag != "" {
		hd.Set("ETag", etag)
	}
	http.ServeContent(w, r, "", modified, content)
}

func notFoundText(w http.ResponseWriter, r *http.Request) {
	httperr.WriteText(w, http.StatusNotFound, "Not found: "+r.URL.Path)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
