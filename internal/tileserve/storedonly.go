package tileserve

import (
	"net/http"
	"strings"

	"tilecache/internal/httperr"
)

// StoredOnlyHeader, set to 1 on a tile request, asks for the stored tile
// only, as Cache-Control: only-if-cached does. A browser cannot send that
// directive (Chromium takes it as its own cache's and fails the fetch
// without a request), so the console's base map sends this header.
const StoredOnlyHeader = "X-Tilecache-Stored-Only"

// onlyIfCached reports whether a tile request carries the request
// directive Cache-Control: only-if-cached (RFC 9111 §5.2.1.7) or
// StoredOnlyHeader: the client wants what is stored and nothing else. The
// console's base map asks so, so that looking at a layer never renders
// (nor stores) a tile and never calls its upstream.
func onlyIfCached(r *http.Request) bool {
	if r.Header.Get(StoredOnlyHeader) == "1" {
		return true
	}
	for _, v := range r.Header.Values("Cache-Control") {
		for d := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(d), "only-if-cached") {
				return true
			}
		}
	}
	return false
}

// StoredOnly reports whether a tile or object request asks for what is
// stored and nothing else (see onlyIfCached). Such a read tells whether a
// tile is stored without rendering it, where a plain GET of a layer that
// renders on miss would render it: which areas were viewed. So it is an
// account's read: the program puts the accounts in front of it.
func StoredOnly(r *http.Request) bool { return onlyIfCached(r) }

// answerNotCached answers a miss asked only-if-cached: 504, as RFC 9111
// has a cache answer such a request it cannot satisfy from storage.
func answerNotCached(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	httperr.WriteText(w, http.StatusGatewayTimeout, "Tile not stored (only-if-cached): "+r.URL.Path)
}
