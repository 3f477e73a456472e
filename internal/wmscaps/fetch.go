package wmscaps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
)

// Versions are the WMS versions a GetCapabilities request may ask for; the
// first is the default.
var Versions = []string{"1.3.0", "1.1.1"}

// FetchOptions bound a GetCapabilities request.
type FetchOptions struct {
	// Version is the WMS version asked for ("" for Versions[0]).
	Version string
	// Timeout bounds the whole request, body included (0: none beyond
	// the context's).
	Timeout time.Duration
	// MaxBytes bounds the document (0: no bound); a longer one is an
	// apperr.Invalid error.
	MaxBytes int64
}

// Fetch reads the capabilities document of the WMS at rawURL through
// client: a GetCapabilities request is added to the URL unless its query
// names a REQUEST. It returns the document and the server's address (the
// URL without its query), the address GetMap goes to when the capabilities
// name none. A URL that is not http(s), a request that fails (an address
// client refuses, an unreachable host, a timeout), an answer other than
// 200 and a document over MaxBytes are apperr.Invalid errors naming the
// problem: the caller gave the URL.
func Fetch(ctx context.Context, client *http.Client, rawURL string, o FetchOptions) (data []byte, base string, err error) {
	version := o.Version
	if version == "" {
		version = Versions[0]
	}
	if version != Versions[0] && version != Versions[1] {
		return nil, "", apperr.Invalidf("version %s is not a WMS version asked for: %s", apperr.Show(version), strings.Join(Versions, " or "))
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", apperr.Invalidf("%s is not an http or https URL", apperr.Show(rawURL))
	}
	q := u.Query()
	if !hasKey(q, "REQUEST") {
		q.Set("SERVICE", "WMS")
		q.Set("REQUEST", "GetCapabilities")
		q.Set("VERSION", version)
	}
	asked := *u
	asked.RawQuery = q.Encode()
	b := *u
	b.RawQuery = ""
	b.Fragment = ""
	base = b.String()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, asked.String(), nil)
	if err != nil {
		return nil, "", apperr.Invalidf("%s is not a URL a request can be sent to: %v", apperr.Show(rawURL), err)
	}
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, "", apperr.Wrap(apperr.Invalid, err, "GetCapabilities of %s: %s", base, requestFailure(err, o.Timeout))
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, "", apperr.Invalidf("GetCapabilities of %s: the server answered %d", base, res.StatusCode)
	}
	r := io.Reader(res.Body)
	if o.MaxBytes > 0 {
		r = io.LimitReader(res.Body, o.MaxBytes+1)
	}
	data, err = io.ReadAll(r)
	if err != nil {
		return nil, "", apperr.Wrap(apperr.Invalid, err, "GetCapabilities of %s: %s", base, requestFailure(err, o.Timeout))
	}
	if o.MaxBytes > 0 && int64(len(data)) > o.MaxBytes {
		return nil, "", apperr.Invalidf("GetCapabilities of %s: the document is larger than %d bytes", base, o.MaxBytes)
	}
	return data, base, nil
}

// requestFailure words a failed request without repeating its URL.
func requestFailure(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		if timeout > 0 {
			return fmt.Sprintf("no answer within %v", timeout)
		}
		return "no answer in time"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// hasKey reports whether q has key, in any case (WMS parameter names are
// case-insensitive).
func hasKey(q url.Values, key string) bool {
	for k := range q {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// LayerDocument renders a proposed layer as its GeoWebCache wmsLayer
// document, after the layer file's checks.
func LayerDocument(p gwc.Layer) ([]byte, error) {
	c, err := gwc.Catalogue(nil, []gwc.Layer{p})
	if err != nil {
		return nil, err
	}
	l, _ := c.Layer(p.Name)
	return gwc.EncodeLayer(l)
}
