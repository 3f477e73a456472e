package upstream

import (
	"net/url"
	"strings"
)

// Redacted stands in Redact's output for what it removed.
const Redacted = "REDACTED"

// UnparseableURL is what Redact returns for input that is not a URL.
const UnparseableURL = "(unparseable URL)"

// Redact returns rawURL in a form fit for logs and error messages, without
// the secrets a source URL may carry (a password, an API key in the query):
//
//   - the userinfo (user name and password) is removed entirely;
//   - every query value is replaced by Redacted, the parameter names are
//     kept as written (apikey=REDACTED); an empty value stays empty
//     (apikey=), and a query part without "=" (?s3cret), which could be a
//     bare token, is replaced as a whole;
//   - a fragment becomes #REDACTED, and the rest of an opaque URL
//     (scheme:rest) is REDACTED;
//   - the scheme, host, port and path are kept, the path as written (an
//     xyz template's {z} stays {z}).
//
// Input that url.Parse refuses, or whose kept parts would not read back
// as they were (a scheme-less "//@//x"), gives UnparseableURL, never the
// input. The output depends only on the parts kept, and Redact(Redact(u))
// == Redact(u).
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return UnparseableURL
	}
	var b strings.Builder
	if u.Opaque != "" {
		b.WriteString(u.Scheme)
		b.WriteString(":" + Redacted)
	} else {
		// url.URL.String without the userinfo, query and fragment.
		c := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath, OmitHost: u.OmitHost}
		s := c.String()
		// String escapes what url.Parse accepted unescaped (the braces
		// of a template): write the path as it was given.
		if esc := c.EscapedPath(); u.RawPath != "" && u.RawPath != esc && strings.HasSuffix(s, esc) {
			s = s[:len(s)-len(esc)] + u.RawPath
		}
		// Without the userinfo, an empty authority can vanish and a path
		// starting with "//" become one ("//@//x"): refuse what would not
		// read back as it was.
		if r, err := url.Parse(s); err != nil || r.Scheme != u.Scheme || r.Host != u.Host || r.Path != u.Path {
			return UnparseableURL
		}
		b.WriteString(s)
	}
	if u.ForceQuery || u.RawQuery != "" {
		b.WriteByte('?')
		for i, part := range strings.Split(u.RawQuery, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			name, value, ok := strings.Cut(part, "=")
			switch {
			case part == "":
			case !ok:
				b.WriteString(Redacted)
			case value == "":
				b.WriteString(name + "=")
			default:
				b.WriteString(name + "=" + Redacted)
			}
		}
	}
	if u.Fragment != "" {
		b.WriteString("#" + Redacted)
	}
	return b.String()
}

// redactURLErrors rewrites, in place, the URL of every *url.Error in err's
// tree to Redact's form. The HTTP client's errors carry the whole URL of
// the request that failed (after a redirect, the target's), query
// included; only its password is masked.
func redactURLErrors(err error) {
	switch e := err.(type) {
	case nil:
		return
	case *url.Error:
		e.URL = Redact(e.URL)
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		redactURLErrors(e.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range e.Unwrap() {
			redactURLErrors(e)
		}
	}
}
