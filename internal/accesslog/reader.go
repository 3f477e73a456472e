package accesslog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Format is a kind of access log.
type Format uint8

// The formats a Reader parses.
const (
	// CloudFront is CloudFront's standard (legacy) log: W3C extended
	// format, tab-separated, columns named by "#Fields:" headers.
	CloudFront Format = iota + 1
	// S3 is the Amazon S3 server access log format.
	S3
	// Combined is the combined log format of nginx and Apache httpd.
	Combined
)

// String returns the format's name as ParseFormat reads it.
func (f Format) String() string {
	switch f {
	case CloudFront:
		return "cloudfront"
	case S3:
		return "s3"
	case Combined:
		return "combined"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat returns the format named name: "cloudfront", "s3" or
// "combined".
func ParseFormat(name string) (Format, error) {
	for _, f := range [...]Format{CloudFront, S3, Combined} {
		if f.String() == name {
			return f, nil
		}
	}
	return 0, fmt.Errorf("parse log format %q: want cloudfront, s3 or combined", name)
}

// Record is one request of a log, with the fields the quota needs. Its
// byte slices point into the Reader's buffers and are valid until the next
// call of Next.
type Record struct {
	// Method is the request's HTTP method ("GET", "HEAD", ...). For S3
	// logs it is taken from the operation: "GET" for REST.GET.OBJECT and
	// WEBSITE.GET.OBJECT, "HEAD" for the HEAD ones; for an operation on
	// anything but an object it is the whole operation (REST.GET.ACL), so
	// that it is not taken for a read.
	Method []byte
	// Key is the object key (S3 logs) or the URL path without its query
	// (CloudFront and combined logs: it starts with "/"), with the log's
	// own escaping undone: what the client sent, still percent-encoded if
	// the client encoded it. Mapper decodes it once more, as the bucket
	// does. It is empty when the log has none ("-").
	Key []byte
	// Query is the URL's query without its "?" (CloudFront's
	// cs-uri-query, the combined log's request line), with the log's own
	// escaping undone as for Key; nil when the log has none. The OGC
	// key-value-pair bindings name their tiles by it.
	Query []byte
	// Path tells that Key is a URL path rather than an object key.
	Path bool
	// Status is the HTTP status; 0 when the log has none ("-", or
	// CloudFront's "000" for a viewer that left before the answer).
	Status int
	// Time is when the request was logged, in UTC: when CloudFront
	// finished answering; when S3, nginx or Apache received it.
	Time time.Time
}

// bufferSize is the Reader's line buffer: a line longer than that is
// skipped as malformed. CloudFront rejects request URLs over 8,192 bytes
// and headers over 20 KB, so real lines are far shorter.
const bufferSize = 256 << 10

// malformed reasons, the keys of Stats.MalformedBy.
const (
	reasonTooLong = "line too long"
	reasonFields  = "missing fields"
	reasonHeader  = "no usable #Fields header"
	reasonTime    = "bad time"
	reasonStatus  = "bad status"
	reasonEscape  = "bad escape"
	reasonQuote   = "unterminated quote"
)

// lineParser parses one record line (without its line ending) into rec;
// it returns "" or the reason the line is malformed. header is called
// for lines starting with "#" instead.
type lineParser interface {
	parse(line []byte, rec *Record) (reason string)
	header(line []byte)
}

// Reader reads the records of one log. It is not safe for concurrent use.
type Reader struct {
	br     *bufio.Reader
	gz     *gzip.Reader
	p      lineParser
	format Format
	stats  Stats
	rec    Record
	eof    bool
}

// NewReader returns a reader of a log of format f read from r, which may
// be gzip-compressed (told by its magic bytes) or plain text. A
// compressed log may hold several gzip members, as concatenated files do.
func NewReader(r io.Reader, f Format) (*Reader, error) {
	rd := &Reader{format: f, stats: Stats{MalformedBy: map[string]int64{}}}
	switch f {
	case CloudFront:
		rd.p = newCloudFrontParser()
	case S3:
		rd.p = &s3Parser{}
	case Combined:
		rd.p = &combinedParser{}
	default:
		return nil, fmt.Errorf("read log: unknown format %v", f)
	}
	br := bufio.NewReaderSize(r, bufferSize)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s log: %w", f, err)
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read %s log: open gzip stream: %w", f, err)
		}
		rd.gz = gz
		br = bufio.NewReaderSize(gz, bufferSize)
	}
	rd.br = br
	return rd, nil
}

// Next returns the next well-formed record. Header and blank lines are
// passed over; malformed lines are counted (Stats) and passed over. At the
// end of the log it returns io.EOF; any other error is the log's reading
// or decompression failing, and ends the read.
func (r *Reader) Next() (*Record, error) {
	for !r.eof {
		line, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			if err := r.skipLongLine(); err != nil {
				return nil, err
			}
			continue
		case errors.Is(err, io.EOF):
			r.eof = true
			if r.gz != nil {
				if cerr := r.gz.Close(); cerr != nil {
					return nil, r.wrap(cerr)
				}
			}
		default:
			return nil, r.wrap(err)
		}
		line = trimEOL(line)
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			r.stats.Headers++
			r.p.header(line)
			continue
		}
		r.stats.Lines++
		r.rec = Record{}
		if reason := r.p.parse(line, &r.rec); reason != "" {
			r.malformed(reason)
			continue
		}
		return &r.rec, nil
	}
	return nil, io.EOF
}

// Stats returns the counts so far of Lines, Headers, Malformed and
// MalformedBy; the other fields are the Mapper's and Aggregator's.
func (r *Reader) Stats() Stats {
	s := r.stats
	s.MalformedBy = make(map[string]int64, len(r.stats.MalformedBy))
	for k, v := range r.stats.MalformedBy {
		s.MalformedBy[k] = v
	}
	return s
}

func (r *Reader) malformed(reason string) {
	r.stats.Malformed++
	r.stats.MalformedBy[reason]++
}

// skipLongLine discards the rest of a line that does not fit the buffer
// and counts it as malformed.
func (r *Reader) skipLongLine() error {
	r.stats.Lines++
	r.malformed(reasonTooLong)
	for {
		_, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			return nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			r.eof = true
			return nil
		default:
			return r.wrap(err)
		}
	}
}

func (r *Reader) wrap(err error) error {
	if r.gz != nil {
		return fmt.Errorf("read %s log (gzip): %w", r.format, err)
	}
	return fmt.Errorf("read %s log: %w", r.format, err)
}

// trimEOL removes a trailing "\n" or "\r\n".
func trimEOL(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// isDash reports whether a field is "-", the logs' empty value.
func isDash(b []byte) bool { return len(b) == 1 && b[0] == '-' }

// parseStatus parses a three-digit HTTP status, or "-" as 0.
func parseStatus(b []byte) (int, bool) {
	if isDash(b) {
		return 0, true
	}
	if len(b) != 3 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// unescapeInto percent-decodes src into dst[:0]: every "%XX" becomes
// byte 0xXX and nothing else changes ("+" stays "+"). ok is false for a
// "%" not followed by two hex digits.
func unescapeInto(dst, src []byte) ([]byte, bool) {
	dst = dst[:0]
	for {
		i := bytes.IndexByte(src, '%')
		if i < 0 {
			return append(dst, src...), true
		}
		if i+2 >= len(src) {
			return dst, false
		}
		hi, ok1 := unhex(src[i+1])
		lo, ok2 := unhex(src[i+2])
		if !ok1 || !ok2 {
			return dst, false
		}
		dst = append(dst, src[:i]...)
		dst = append(dst, hi<<4|lo)
		src = src[i+3:]
	}
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
