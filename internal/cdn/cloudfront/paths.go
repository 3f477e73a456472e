package cloudfront

import (
	"strings"

	"tilecache/internal/apperr"
)

// encodePaths returns paths as CloudFront wants them (see the package
// comment), or an apperr.Invalid naming the first path it refuses.
func encodePaths(paths []string) ([]string, error) {
	if len(paths) > MaxPaths {
		return nil, apperr.Invalidf("%d paths in one invalidation, CloudFront allows at most %d", len(paths), MaxPaths)
	}
	out := make([]string, len(paths))
	wildcards := 0
	for i, p := range paths {
		e, err := encodePath(p)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(e, "*") {
			wildcards++
		}
		out[i] = e
	}
	if wildcards > MaxWildcardPaths {
		return nil, apperr.Invalidf("%d wildcard paths in one invalidation, CloudFront allows at most %d in progress", wildcards, MaxWildcardPaths)
	}
	return out, nil
}

// encodePath percent-encodes the bytes of p that CloudFront wants encoded
// and checks the rest.
func encodePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", apperr.Invalidf("invalidation path %s does not start with /", apperr.Show(p))
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return "", apperr.Invalidf("invalidation path %s has a %% not followed by two hex digits", apperr.Show(p))
			}
			b.WriteString(p[i : i+3])
			i += 2
		case c == '*':
			if i != len(p)-1 {
				return "", apperr.Invalidf("invalidation path %s has a * before its end (CloudFront's wildcard goes last; encode a literal * as %%2A)", apperr.Show(p))
			}
			b.WriteByte(c)
		case keep(c):
			b.WriteByte(c)
		default:
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
	}
	if b.Len() > MaxPathLength {
		return "", apperr.Invalidf("invalidation path %s is %d bytes long encoded, CloudFront allows at most %d", apperr.Show(p), b.Len(), MaxPathLength)
	}
	return b.String(), nil
}

// keep reports the bytes sent as they are: RFC 3986's unreserved
// characters except "~" (unsafe in RFC 1738), its sub-delimiters, and ":",
// "@", "/" and "?".
func keep(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._!$&'()+,;=:@/?", c) >= 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
