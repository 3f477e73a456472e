package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// FetchRange GETs n bytes at off of the file at url with a Range request,
// through the client's address policy, cap, timeout and retries, as Fetch
// does: what an archive read with range requests (a PMTiles on a static
// host) needs. It returns the bytes (fewer than n only at the file's end,
// none past it), the answer's ETag ("" when it has none) and the file's
// whole size from Content-Range (-1 when the server did not say). A
// server that ignores Range is refused unless the whole file fits in n
// bytes at off 0. n is at most 256 MiB.
func (c *Client) FetchRange(ctx context.Context, url string, off, n int64) (data []byte, etag string, size int64, err error) {
	if off < 0 || n <= 0 || n > maxBody {
		return nil, "", -1, fmt.Errorf("range of %d bytes at %d: the length must be 1 to %d bytes", n, off, maxBody)
	}
	extra := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}
	size = -1
	err = c.withRetries(ctx, func() error {
		buf, h, err := c.fetchOnce(ctx, url, n, "the range", extra)
		if ue, ok := errors.AsType[*Error](err); ok && ue.Status == http.StatusRequestedRangeNotSatisfiable {
			return nil // past the end: nothing there
		}
		if err != nil {
			return err
		}
		defer c.release(buf)
		data, etag, size, err = rangeAnswer(url, off, n, buf.Bytes(), h)
		return useError{err}
	})
	return data, etag, size, err
}

// rangeAnswer checks the answer to a request for n bytes at off and
// returns a copy of its bytes, its ETag and the file's size.
func rangeAnswer(url string, off, n int64, body []byte, h http.Header) ([]byte, string, int64, error) {
	etag := h.Get("ETag")
	cr := h.Get("Content-Range")
	if cr == "" {
		// 200: the server sent the whole file.
		if off != 0 {
			return nil, "", -1, &Error{URL: Redact(url), Status: http.StatusOK, Msg: "the server does not answer range requests (HTTP 200 with the whole file to a Range request)"}
		}
		return bytes.Clone(body), etag, int64(len(body)), nil
	}
	start, total, ok := parseContentRange(cr)
	if !ok || start != off {
		return nil, "", -1, &Error{URL: Redact(url), Status: http.StatusPartialContent, Msg: fmt.Sprintf("Content-Range %q does not answer the range asked for, %d bytes at %d", Excerpt([]byte(cr)), n, off)}
	}
	if got := int64(len(body)); got < n && (total < 0 || off+got < total) {
		return nil, "", -1, &Error{URL: Redact(url), Status: http.StatusPartialContent, Msg: fmt.Sprintf("answer of %d bytes to a range of %d at %d, before the file's end", got, n, off)}
	}
	return bytes.Clone(body), etag, total, nil
}

// parseContentRange reads "bytes start-end/total" (total "*": -1).
func parseContentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	span, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	s, _, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}
