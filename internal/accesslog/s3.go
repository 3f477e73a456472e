package accesslog

import (
	"bytes"
)

// s3Parser parses Amazon S3 server access log lines: space-separated
// fields (bucket owner, bucket, [time], remote IP, requester, request ID,
// operation, key, "Request-URI", HTTP status, ...), "-" for empty, the
// time in brackets and free text in double quotes. Only the fields up to
// the status are read, so fields S3 adds at the end change nothing.
type s3Parser struct {
	days   dayCache
	keyBuf []byte
}

func (p *s3Parser) header([]byte) {}

func (p *s3Parser) parse(line []byte, rec *Record) string {
	var ok bool
	// Bucket owner, bucket.
	for range 2 {
		if _, line, ok = token(line); !ok {
			return reasonFields
		}
	}
	stamp, line, ok := bracketed(line)
	if !ok {
		return reasonTime
	}
	// Remote IP, requester, request ID.
	for range 3 {
		if _, line, ok = token(line); !ok {
			return reasonFields
		}
	}
	op, line, ok := token(line)
	if !ok {
		return reasonFields
	}
	key, line, ok := token(line)
	if !ok {
		return reasonFields
	}
	line, reason := skipRequestURI(line)
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
	rec.Method = s3Method(op)
	if isDash(key) {
		return ""
	}
	// The key is URL-encoded in the log: undo that.
	if bytes.IndexByte(key, '%') >= 0 {
		if p.keyBuf, ok = unescapeInto(p.keyBuf, key); !ok {
			return reasonEscape
		}
		key = p.keyBuf
	}
	rec.Key = key
	return ""
}

// s3Method returns the HTTP method of an operation on an object
// ("REST.GET.OBJECT", "WEBSITE.HEAD.OBJECT"), or the whole operation for
// any other (an ACL, tags, a bucket, a copy's source, a lifecycle action).
func s3Method(op []byte) []byte {
	api, rest, ok := bytes.Cut(op, []byte{'.'})
	if !ok || (string(api) != "REST" && string(api) != "WEBSITE") {
		return op
	}
	method, resource, ok := bytes.Cut(rest, []byte{'.'})
	if !ok || string(resource) != "OBJECT" {
		return op
	}
	return method
}

// skipRequestURI passes the Request-URI field: "-", or text in double
// quotes. S3 does not escape a quote inside it (the query is the
// client's), so the closing quote is the first one followed by what the
// log writes next: the status, an error code, then bytes sent, object
// size, total time and turn-around time, each a number or "-". Failing
// that (a line cut short), it is the first quote followed by a status.
func skipRequestURI(line []byte) ([]byte, string) {
	if len(line) == 0 {
		return nil, reasonFields
	}
	if line[0] != '"' {
		_, rest, ok := token(line)
		if !ok {
			return nil, reasonFields
		}
		return rest, ""
	}
	var weak []byte
	for i := 1; ; i++ {
		q := bytes.IndexByte(line[i:], '"')
		if q < 0 {
			break
		}
		i += q
		if i+1 >= len(line) || line[i+1] != ' ' {
			continue
		}
		rest := line[i+2:]
		status, after, _ := token(rest)
		if _, ok := parseStatus(status); !ok {
			continue
		}
		if followsStatus(after) {
			return rest, ""
		}
		if weak == nil {
			weak = rest
		}
	}
	if weak != nil {
		return weak, ""
	}
	return nil, reasonQuote
}

// followsStatus reports whether line starts as the fields after the
// status do: an error code, then four numbers or "-".
func followsStatus(line []byte) bool {
	_, line, ok := token(line) // the error code
	if !ok {
		return false
	}
	for range 4 {
		tok, rest, ok := token(line)
		if !ok {
			return false
		}
		if !isDash(tok) {
			if _, ok := num(tok); !ok {
				return false
			}
		}
		line = rest
	}
	return true
}

// token splits the space-separated field at the start of line from the
// rest; ok is false when line is empty or starts with a space.
func token(line []byte) (tok, rest []byte, ok bool) {
	i := bytes.IndexByte(line, ' ')
	if i < 0 {
		return line, nil, len(line) > 0
	}
	return line[:i], line[i+1:], i > 0
}

// bracketed splits a "[...]" field at the start of line from the rest,
// returning the text between the brackets.
func bracketed(line []byte) (text, rest []byte, ok bool) {
	if len(line) == 0 || line[0] != '[' {
		return nil, nil, false
	}
	end := bytes.IndexByte(line, ']')
	if end < 0 {
		return nil, nil, false
	}
	text, rest = line[1:end], line[end+1:]
	if len(rest) > 0 {
		if rest[0] != ' ' {
			return nil, nil, false
		}
		rest = rest[1:]
	}
	return text, rest, true
}
