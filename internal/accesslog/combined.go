package accesslog

import (
	"bytes"
)

// combinedParser parses the combined log format of nginx and Apache
// httpd:
//
//	host ident user [10/Oct/2000:13:55:36 -0700] "GET /path HTTP/1.1" 200 2326 "referer" "user-agent"
//
// The host may be an IPv6 address; the user is read as anything up to the
// bracketed time. Fields after the status are not read, so the common log
// format (without referer and user agent) parses too.
type combinedParser struct {
	days dayCache
}

func (p *combinedParser) header([]byte) {}

func (p *combinedParser) parse(line []byte, rec *Record) string {
	host, _, ok := token(line)
	if !ok {
		return reasonFields
	}
	line = line[len(host):]
	open := bytes.IndexByte(line, '[')
	if open < 0 {
		return reasonTime
	}
	stamp, line, ok := bracketed(line[open:])
	if !ok {
		return reasonTime
	}
	request, line, reason := quoted(line)
	if reason != "" {
		return reason
	}
	status, _, _ := token(line)
	if len(status) == 0 {
		return reasonFields
	}
	t, ok := p.days.clfTime(stamp)
	if !ok {
		return reasonTime
	}
	rec.Time = t
	if rec.Status, ok = parseStatus(status); !ok {
		return reasonStatus
	}
	rec.Method, rec.Key, rec.Query = splitRequest(request)
	rec.Path = true
	return ""
}

// quoted splits a double-quoted field at the start of line from the rest,
// returning the text between the quotes. A backslash escapes the next byte
// (Apache writes \" for a quote; nginx writes \x22, which needs nothing).
func quoted(line []byte) (text, rest []byte, reason string) {
	if len(line) == 0 || line[0] != '"' {
		return nil, nil, reasonFields
	}
	for i := 1; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '"':
			rest = line[i+1:]
			if len(rest) > 0 {
				if rest[0] != ' ' {
					return nil, nil, reasonFields
				}
				rest = rest[1:]
			}
			return line[1:i], rest, ""
		}
	}
	return nil, nil, reasonQuote
}

var rootPath = []byte("/")

// splitRequest returns the method, path and query of a request line
// ("GET /a/b?c HTTP/1.1"), the path without its query or fragment and
// without the scheme and host of an absolute URL, the query without its
// "?" or fragment (nil when there is none). For a line that is not a
// request ("-", or a TLS handshake sent to a plain HTTP port) the method
// is the whole line and the path empty.
func splitRequest(req []byte) (method, path, query []byte) {
	method, target, ok := bytes.Cut(req, []byte{' '})
	if !ok || len(method) == 0 {
		return req, nil, nil
	}
	if sp := bytes.IndexByte(target, ' '); sp >= 0 {
		target = target[:sp] // the protocol, absent from HTTP/0.9 lines
	}
	if i := bytes.IndexByte(target, '#'); i >= 0 {
		target = target[:i]
	}
	if i := bytes.IndexByte(target, '?'); i >= 0 {
		target, query = target[:i], target[i+1:]
	}
	for _, scheme := range [...]string{"http://", "https://"} {
		if rest, ok := bytes.CutPrefix(target, []byte(scheme)); ok {
			if slash := bytes.IndexByte(rest, '/'); slash >= 0 {
				target = rest[slash:]
			} else {
				target = rootPath
			}
		}
	}
	return method, target, query
}
