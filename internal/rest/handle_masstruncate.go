package rest

import (
	"net/http"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/audit"
	"tilecache/internal/gwc"
)

// massTruncateTypes answers GET /rest/masstruncate (contract §7.1).
func (ts tasksResource) massTruncateTypes(w http.ResponseWriter, r *http.Request) error {
	writeBody(w, "application/xml", gwc.MassTruncateRequestsXML(selfURL(r, ts.basePath)))
	return nil
}

// selfURL is the absolute URL of the requested resource as the client
// addressed it, honouring X-Forwarded-Proto and X-Forwarded-Host.
func selfURL(r *http.Request, basePath string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := firstValue(r.Header.Get("X-Forwarded-Proto")); p != "" {
		scheme = p
	}
	host := r.Host
	if fh := firstValue(r.Header.Get("X-Forwarded-Host")); fh != "" {
		host = fh
	}
	return scheme + "://" + host + basePath + r.URL.EscapedPath()
}

func firstValue(h string) string {
	v, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(v)
}

// massTruncate answers POST /rest/masstruncate (contract §7.2).
func (ts tasksResource) massTruncate(w http.ResponseWriter, r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	switch mediaType(ct) {
	case "":
		if fromBrowser(r) {
			// A browser's post without a Content-Type is a CORS simple
			// request, which any page can send without asking: the most
			// destructive call would rest on the cross-site guard alone.
			return apperr.New(apperr.Unsupported, "Unsupported Content-Type (none): a mass truncate sent by a browser must say Content-Type: text/xml")
		}
	case "text/xml", "application/xml":
	default:
		return apperr.Invalidf("Format extension unknown or not specified: %s", mediaType(ct))
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	name, err := gwc.DecodeMassTruncate(body)
	if err != nil {
		return err
	}
	audit.Note(r.Context(), name)
	if _, err := ts.tasks.MassTruncate(r.Context(), name); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// fromBrowser reports whether a request carries the headers browsers add
// to what a page sends (Origin, Fetch Metadata); curl, the CLI and
// GeoWebCache's tooling send neither.
func fromBrowser(r *http.Request) bool {
	return r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Mode") != "" || r.Header.Get("Sec-Fetch-Site") != ""
}
