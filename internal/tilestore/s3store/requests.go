package s3store

import (
	"net/http"
	"strings"
	"sync/atomic"
)

// RequestCounts is how many HTTP requests a Store has sent, by kind.
// Retries and failed attempts count: each is a request S3 bills.
type RequestCounts struct {
	Put    int64 // PutObject (and multipart parts)
	Get    int64 // GetObject
	Head   int64 // StatObject
	Delete int64 // DeleteObjects requests (up to 1,000 keys each) and single DeleteObject
	List   int64 // ListObjectsV2 pages (up to 1,000 keys each)
	Other  int64 // anything else: only multipart start and completion, for objects from 16 MiB
}

// Total returns the number of requests of all kinds.
func (c RequestCounts) Total() int64 {
	return c.Put + c.Get + c.Head + c.Delete + c.List + c.Other
}

// Sub returns c minus o, kind by kind: the requests made between two calls
// to Requests.
func (c RequestCounts) Sub(o RequestCounts) RequestCounts {
	return RequestCounts{
		Put:    c.Put - o.Put,
		Get:    c.Get - o.Get,
		Head:   c.Head - o.Head,
		Delete: c.Delete - o.Delete,
		List:   c.List - o.List,
		Other:  c.Other - o.Other,
	}
}

// Requests returns the counts of requests sent so far.
func (s *Store) Requests() RequestCounts {
	c := s.counts
	return RequestCounts{
		Put:    c.put.Load(),
		Get:    c.get.Load(),
		Head:   c.head.Load(),
		Delete: c.delete.Load(),
		List:   c.list.Load(),
		Other:  c.other.Load(),
	}
}

type counters struct {
	put, get, head, delete, list, other atomic.Int64
}

// countingTransport counts requests on the wire, where retries and listing
// pages are visible, rather than per Store call.
type countingTransport struct {
	base   http.RoundTripper
	counts *counters
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.counts
	q := req.URL.RawQuery
	switch req.Method {
	case http.MethodPut:
		c.put.Add(1)
	case http.MethodGet:
		if hasParam(q, "list-type") {
			c.list.Add(1)
		} else {
			c.get.Add(1)
		}
	case http.MethodHead:
		c.head.Add(1)
	case http.MethodPost:
		if hasParam(q, "delete") {
			c.delete.Add(1)
		} else {
			c.other.Add(1)
		}
	case http.MethodDelete:
		c.delete.Add(1)
	default:
		c.other.Add(1)
	}
	return t.base.RoundTrip(req)
}

// hasParam reports whether the raw query string has parameter name.
func hasParam(rawQuery, name string) bool {
	for rawQuery != "" {
		var p string
		p, rawQuery, _ = strings.Cut(rawQuery, "&")
		if k, _, _ := strings.Cut(p, "="); k == name {
			return true
		}
	}
	return false
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the pool.
func (t *countingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
