package rest

// The bottom floor of the package: what every resource's handlers share
// (the handler function's shape, the path's format suffix, the bodies
// read and written). It refers to nothing else in the package.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"tilecache/internal/apperr"
	"tilecache/internal/httperr"
)

// MaxBody is the largest request body accepted (contract §1).
const MaxBody = 1 << 20

// handlerFunc is a handler that returns its error to be answered in one place.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// writeText writes a one-line text/plain answer.
func writeText(w http.ResponseWriter, status int, msg string) { httperr.WriteText(w, status, msg) }

func writeBody(w http.ResponseWriter, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// readBody reads a request body of at most MaxBody bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tooLarge := apperr.New(apperr.TooLarge, "Request body too large: the limit is 1 MiB")
	if r.ContentLength > MaxBody {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge
		}
		return nil, apperr.Wrap(apperr.Invalid, err, "Could not read the request body")
	}
	return body, nil
}

// mediaType returns the lower-case media type of a Content-Type header,
// without parameters.
func mediaType(header string) string {
	mt, _, _ := strings.Cut(header, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// format is a path suffix: the wire format of a request or response body.
type format int

const (
	formatNone format = iota
	formatJSON
	formatXML
)

// splitSuffix splits "name.json" / "name.xml" into name and format.
func splitSuffix(s string) (string, format) {
	switch {
	case strings.HasSuffix(s, ".json"):
		return strings.TrimSuffix(s, ".json"), formatJSON
	case strings.HasSuffix(s, ".xml"):
		return strings.TrimSuffix(s, ".xml"), formatXML
	}
	return s, formatNone
}

// layerSegment decodes a layer path segment: "+" is a space (GeoWebCache
// behaviour), then percent-decoding.
func layerSegment(raw string) (string, bool) {
	name, err := url.PathUnescape(strings.ReplaceAll(raw, "+", "%20"))
	return name, err == nil && name != ""
}

// writeJSON answers status with v encoded as JSON; what names v in the
// error of an encoding that fails.
func writeJSON(w http.ResponseWriter, status int, v any, what string) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
	return nil
}
