// Package console serves the administration console: one page
// (index.html) with its script and style sheet, built from web/console by
// `make web` (esbuild bundles OpenLayers into app.js) and embedded here,
// so the program serves it with nothing loaded from elsewhere. The page
// talks to the REST interface beside it (../rest/) with the credentials
// the browser holds; the caller puts the handler behind the same
// authentication as /rest.
package console

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed dist
var dist embed.FS

// Policy is the Content-Security-Policy of every answer: the page runs
// only its own script and style sheet (no inline script, no eval),
// fetches only from its own origin, and may not be framed.
const Policy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; " +
	"connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Options are what the page learns of the server it runs on.
type Options struct {
	// Backend is the backend the program runs on ("embedded" or "aws"):
	// the page prices an estimate's requests only on "aws".
	Backend string
	// BaseMap is an operator's base map, an XYZ URL template
	// (https://host/{z}/{x}/{y}.png, the spherical Mercator's tiles), or
	// "" for none. When set, its origin is added to the policy's img-src,
	// and to nothing else.
	BaseMap string
}

// PolicyFor is the Content-Security-Policy of a console with base map
// template baseMap: Policy, with the template's origin (scheme and host)
// among the images' sources when there is one.
func PolicyFor(baseMap string) string {
	origin := BaseMapOrigin(baseMap)
	if origin == "" {
		return Policy
	}
	return strings.Replace(Policy, "img-src 'self' data: blob:;", "img-src 'self' data: blob: "+origin+";", 1)
}

// BaseMapOrigin is the origin of a base map template ("" when it is not
// an absolute http(s) URL).
func BaseMapOrigin(baseMap string) string {
	u, err := url.Parse(strings.NewReplacer("{z}", "0", "{x}", "0", "{y}", "0", "{-y}", "0").Replace(baseMap))
	if baseMap == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// withMeta returns the page with the options written into its head as
// <meta name="tilecache-…"> elements, which the script reads (no inline
// script, and no request more).
func withMeta(page []byte, o Options) []byte {
	meta := `<meta name="tilecache-backend" content="` + html.EscapeString(o.Backend) + `">` + "\n"
	if BaseMapOrigin(o.BaseMap) != "" {
		meta += `<meta name="tilecache-base-map" content="` + html.EscapeString(o.BaseMap) + `">` + "\n"
	}
	return bytes.Replace(page, []byte("<title>"), []byte(meta+"<title>"), 1)
}

type file struct {
	body  []byte
	ctype string
	etag  string
	gz    func() []byte // body gzipped, made once (started in the background when the files are read)
}

func gzipped(b []byte) func() []byte {
	return sync.OnceValue(func() []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // a valid level: no error
		_, _ = zw.Write(b)                                          // writes to memory do not fail
		_ = zw.Close()
		return buf.Bytes()
	})
}

// embedded are the console's files, read and hashed once per process
// however many handlers it makes (a test process makes one per program
// it starts), and gzipped once, in the background from the first call:
// under the race detector that compression took 6 s of CPU in a test
// run that made a handler for each of its programs.
var embedded = sync.OnceValue(func() map[string]file {
	files := map[string]file{}
	err := fs.WalkDir(dist, "dist", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := dist.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		files[strings.TrimPrefix(p, "dist")] = file{body: b, ctype: contentType(p), etag: `"` + hex.EncodeToString(sum[:12]) + `"`, gz: gzipped(b)}
		return nil
	})
	if err != nil {
		panic("console: embedded files: " + err.Error()) // the embed is part of the binary: cannot fail at run time
	}
	// Compress ahead of the first request (a few tens of milliseconds).
	go func() {
		for _, f := range files {
			f.gz()
		}
	}()
	return files
})

// Handler serves the console's files: "/" (and "/index.html") the page,
// "/app.js" and "/app.css" its parts. Paths are relative to where the
// handler is mounted (http.StripPrefix the mount point). Every answer
// carries the Content-Security-Policy, nosniff, no-referrer and
// X-Frame-Options DENY; the page is never stored by caches
// (no-store), the script and style sheet only privately and revalidated
// by ETag (no-cache), so an update of the program shows at once.
//
// The page carries o (see withMeta), and the policy o.BaseMap's origin.
func Handler(o Options) http.Handler {
	files := embedded()
	if idx, ok := files["/index.html"]; ok {
		b := withMeta(idx.body, o)
		sum := sha256.Sum256(b)
		idx.body, idx.etag, idx.gz = b, `"`+hex.EncodeToString(sum[:12])+`"`, gzipped(b)
		files = maps.Clone(files)
		files["/index.html"] = idx
	}
	policy := PolicyFor(o.BaseMap)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", policy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "Method "+r.Method+" not allowed on the console's pages", http.StatusMethodNotAllowed)
			return
		}
		p := r.URL.Path
		if p == "/" {
			p = "/index.html"
		}
		f, ok := files[p]
		if !ok {
			http.Error(w, "Not found: "+r.URL.Path+" is no page of the console (open /console/)", http.StatusNotFound)
			return
		}
		h.Set("Content-Type", f.ctype)
		h.Add("Vary", "Accept-Encoding")
		body, etag := f.body, f.etag
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			body, etag = f.gz(), strings.TrimSuffix(etag, `"`)+`-gzip"`
		}
		if p == "/index.html" {
			h.Set("Cache-Control", "no-store")
		} else {
			h.Set("Cache-Control", "private, no-cache")
			h.Set("ETag", etag)
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})
}

// acceptsGzip reports whether an Accept-Encoding value accepts gzip
// (listed without q=0).
func acceptsGzip(v string) bool {
	for _, part := range strings.Split(v, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

func contentType(p string) string {
	switch path.Ext(p) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	return "application/octet-stream"
}
