package cloudfront

import (
	"io"
	"net/http"

	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"
)

// sendOnce makes the HTTP client of a call with a request body keep the
// connection it answered on, so that a request CloudFront answered is not
// sent again.
//
// The SDK closes a request's body as soon as the answer's headers arrive,
// and its body answers a WriteTo after Close with io.EOF. net/http, having
// written the body, drains it with io.Copy, which uses WriteTo and passes
// that io.EOF on as an error when the drain comes after the Close (its
// writer goroutine ran late, as on a loaded machine): the transport then
// closes the connection under the answer being read, the read fails with
// "use of closed network connection", and the SDK retries that as a
// connection error (aws-sdk-go-v2 issue #2737) — a second CreateInvalidation
// for one that was made. CloudFront answers the repeat with the first
// invalidation (same caller reference); a server that does not, moto for
// one, records two. Hiding WriteTo makes the drain a Read, which answers
// io.EOF after Close, the end of the body.
func sendOnce(o *cf.Options) { o.HTTPClient = drainSafeClient{next: o.HTTPClient} }

type drainSafeClient struct{ next cf.HTTPClient }

func (c drainSafeClient) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return c.next.Do(r)
	}
	r = r.WithContext(r.Context()) // a shallow copy: the caller's request keeps its body
	r.Body = readCloser{r.Body}
	return c.next.Do(r)
}

// readCloser has the methods of io.ReadCloser only (no WriteTo).
type readCloser struct{ io.ReadCloser }
