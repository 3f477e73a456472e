package accesslog_test

import (
	"io"
	"math/rand/v2"
	"strconv"

	"tilecache/internal/accesslog"
)

// logGen writes realistic access log lines for benchmarks: most reads
// fall on a few hundred hot pages of two layers; among them are reads of
// cold pages, 404s, revalidations (304), viewers leaving early (000),
// POSTs and OPTIONS, and paths that are not tiles.
type logGen struct {
	format accesslog.Format
	rng    *rand.Rand
	hot    []hotPage
	cold   float64 // share of tile reads on random pages
	sec    int64   // seconds since the log's first day
	n      int64
}

type hotPage struct {
	layer    string // as written in paths: a raw or a viewer-encoded colon
	grid     string
	z        int
	px, py   int64
	ext, fmt string
}

// newLogGen returns a generator of format; cold is the share of tile
// reads spread over random pages (many distinct pages) rather than hot
// ones.
func newLogGen(format accesslog.Format, seed uint64, cold float64) *logGen {
	g := &logGen{format: format, rng: rand.New(rand.NewPCG(seed, 42)), cold: cold}
	for i := range 300 {
		p := hotPage{layer: "topp:states", grid: "EPSG:4326", fmt: "png", ext: "png"}
		if i%3 == 0 {
			p = hotPage{layer: "L42", grid: "EPSG:900913", fmt: "jpeg", ext: "jpeg"}
		}
		p.z = 8 + g.rng.IntN(7)
		p.px = g.rng.Int64N(1 << (p.z - 6))
		p.py = g.rng.Int64N(1 << (p.z - 6))
		g.hot = append(g.hot, p)
	}
	return g
}

var (
	edges    = []string{"SEA19-C1", "FRA56-P7", "NRT57-P2", "IAD89-C3", "LHR61-P1", "GRU3-C1"}
	agents   = []string{"Mozilla/5.0%20(Windows%20NT%2010.0;%20Win64;%20x64)%20AppleWebKit/537.36%20(KHTML,%20like%20Gecko)%20Chrome/120.0.0.0%20Safari/537.36", "Mozilla/5.0%20(X11;%20Linux%20x86_64;%20rv:121.0)%20Gecko/20100101%20Firefox/121.0", "QGIS/33400/Windows%2011%20Version%202009", "GDAL/3.8.4"}
	rawUAs   = []string{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0", "QGIS/33400/Windows 11 Version 2009", "GDAL/3.8.4"}
	others   = []string{"/index.html", "/favicon.ico", "/tiles/wmts/1.0.0/WMTSCapabilities.xml", "/tiles/topp:states/parameters-3f2a9c.properties"}
	months12 = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
)

const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// request picks one request: method, path under "/tiles/" and status.
func (g *logGen) request(dst []byte) (out []byte, method string, status int) {
	r := g.rng.Float64()
	method, status = "GET", 200
	switch {
	case r < 0.01:
		method = "POST"
	case r < 0.02:
		method = "OPTIONS"
	case r < 0.05:
		method = "HEAD"
	}
	if r := g.rng.Float64(); r < 0.04 {
		return append(dst, others[g.rng.IntN(len(others))]...), method, 200
	}
	p := g.hot[g.rng.IntN(len(g.hot))]
	x := p.px<<6 | g.rng.Int64N(64)
	y := p.py<<6 | g.rng.Int64N(64)
	if g.rng.Float64() < g.cold {
		p.z = 14 + g.rng.IntN(5)
		x, y = g.rng.Int64N(1<<p.z), g.rng.Int64N(1<<p.z)
	}
	switch r := g.rng.Float64(); {
	case r < 0.04:
		status = 404
	case r < 0.14:
		status = 304
	case r < 0.145:
		status = 0
	}
	layer := p.layer
	if layer == "topp:states" && g.rng.IntN(10) == 0 {
		layer = "topp%3Astates" // a viewer that encoded the colon
	}
	dst = append(dst, "/tiles/"...)
	dst = append(dst, layer...)
	dst = append(dst, '/')
	dst = append(dst, p.grid...)
	dst = append(dst, '/')
	dst = append(dst, p.fmt...)
	dst = append(dst, "/default/"...)
	dst = strconv.AppendInt(dst, int64(p.z), 10)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, x, 10)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, y, 10)
	dst = append(dst, '.')
	dst = append(dst, p.ext...)
	return dst, method, status
}

// appendLine appends one log line to dst.
func (g *logGen) appendLine(dst []byte) []byte {
	g.n++
	if g.rng.IntN(8) == 0 {
		g.sec++
	}
	day, secs := g.sec/86400, g.sec%86400
	var path [160]byte
	p, method, status := g.request(path[:0])
	switch g.format {
	case accesslog.CloudFront:
		return g.cloudFront(dst, day, secs, p, method, status)
	case accesslog.S3:
		return g.s3(dst, day, secs, p, method, status)
	default:
		return g.combined(dst, day, secs, p, method, status)
	}
}

func appendStatus(dst []byte, status int) []byte {
	if status == 0 {
		return append(dst, "000"...)
	}
	return strconv.AppendInt(dst, int64(status), 10)
}

func pad2(dst []byte, n int64) []byte {
	if n < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, n, 10)
}

func clockText(dst []byte, secs int64) []byte {
	dst = pad2(dst, secs/3600)
	dst = append(dst, ':')
	dst = pad2(dst, secs/60%60)
	dst = append(dst, ':')
	return pad2(dst, secs%60)
}

func (g *logGen) ip(dst []byte) []byte {
	if g.rng.IntN(10) == 0 {
		dst = append(dst, "2001:db8:"...)
		dst = strconv.AppendInt(dst, int64(g.rng.IntN(0xffff)), 16)
		return append(dst, "::1"...)
	}
	dst = append(dst, "198.51."...)
	dst = strconv.AppendInt(dst, int64(g.rng.IntN(256)), 10)
	dst = append(dst, '.')
	return strconv.AppendInt(dst, int64(g.rng.IntN(256)), 10)
}

func (g *logGen) cloudFront(dst []byte, day, secs int64, path []byte, method string, status int) []byte {
	if g.n == 1 {
		dst = append(dst, "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol ssl-cipher x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port time-to-first-byte x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start sc-range-end\n"...)
	}
	result := "Hit"
	switch {
	case status == 404 || status == 0:
		result = "Error"
	case g.rng.IntN(5) == 0:
		result = "Miss"
	}
	dst = append(dst, "2024-03-"...)
	dst = pad2(dst, 1+day%28)
	dst = append(dst, '\t')
	dst = clockText(dst, secs)
	dst = append(dst, '\t')
	dst = append(dst, edges[g.rng.IntN(len(edges))]...)
	dst = append(dst, '\t')
	size := int64(400 + g.rng.IntN(30000))
	dst = strconv.AppendInt(dst, size, 10)
	dst = append(dst, '\t')
	dst = g.ip(dst)
	dst = append(dst, '\t')
	dst = append(dst, method...)
	dst = append(dst, "\td111111abcdef8.cloudfront.net\t"...)
	dst = append(dst, path...)
	dst = append(dst, '\t')
	dst = appendStatus(dst, status)
	dst = append(dst, "\thttps://maps.example.com/viewer/\t"...)
	dst = append(dst, agents[g.rng.IntN(len(agents))]...)
	dst = append(dst, "\t-\t-\t"...)
	dst = append(dst, result...)
	dst = append(dst, '\t')
	for range 56 {
		dst = append(dst, b64[g.rng.IntN(64)])
	}
	dst = append(dst, "\ttiles.example.com\thttps\t"...)
	dst = strconv.AppendInt(dst, int64(150+g.rng.IntN(200)), 10)
	dst = append(dst, "\t0.0"...)
	dst = strconv.AppendInt(dst, int64(10+g.rng.IntN(89)), 10)
	dst = append(dst, "\t-\tTLSv1.3\tTLS_AES_128_GCM_SHA256\t"...)
	dst = append(dst, result...)
	dst = append(dst, "\tHTTP/2.0\t-\t-\t"...)
	dst = strconv.AppendInt(dst, int64(1024+g.rng.IntN(60000)), 10)
	dst = append(dst, "\t0.0"...)
	dst = strconv.AppendInt(dst, int64(10+g.rng.IntN(89)), 10)
	dst = append(dst, '\t')
	dst = append(dst, result...)
	dst = append(dst, "\timage/png\t"...)
	dst = strconv.AppendInt(dst, size-380, 10)
	return append(dst, "\t-\t-\n"...)
}

func clfStamp(dst []byte, day, secs int64) []byte {
	dst = append(dst, '[')
	dst = pad2(dst, 1+day%28)
	dst = append(dst, '/')
	dst = append(dst, months12[2]...)
	dst = append(dst, "/2024:"...)
	dst = clockText(dst, secs)
	return append(dst, " +0000]"...)
}

func (g *logGen) s3(dst []byte, day, secs int64, path []byte, method string, status int) []byte {
	if status == 0 {
		status = 200
	}
	dst = append(dst, "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be tile-bucket "...)
	dst = clfStamp(dst, day, secs)
	dst = append(dst, ' ')
	dst = g.ip(dst)
	dst = append(dst, " - "...)
	for range 16 {
		dst = append(dst, b64[g.rng.IntN(36)])
	}
	dst = append(dst, " REST."...)
	dst = append(dst, method...)
	dst = append(dst, ".OBJECT "...)
	key := path[1:]
	for _, c := range key { // the log's own encoding
		switch c {
		case ':':
			dst = append(dst, "%3A"...)
		case '%':
			dst = append(dst, "%25"...)
		default:
			dst = append(dst, c)
		}
	}
	dst = append(dst, " \""...)
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, path...)
	dst = append(dst, " HTTP/1.1\" "...)
	dst = appendStatus(dst, status)
	if status == 404 {
		dst = append(dst, " NoSuchKey"...)
	} else {
		dst = append(dst, " -"...)
	}
	dst = append(dst, " 2021 2021 12 10 \"https://maps.example.com/\" \""...)
	dst = append(dst, rawUAs[g.rng.IntN(len(rawUAs))]...)
	return append(dst, "\" - s9lzHYrFp76ZVxRcpX9+5cjAnEH2ROuNkd2BHfIa6UkFVdtjf5mKR3/eTPFvsiP/XV/VLi31234= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader tile-bucket.s3.us-west-1.amazonaws.com TLSv1.2 - -\n"...)
}

func (g *logGen) combined(dst []byte, day, secs int64, path []byte, method string, status int) []byte {
	if status == 0 {
		status = 499
	}
	dst = g.ip(dst)
	dst = append(dst, " - - "...)
	dst = clfStamp(dst, day, secs)
	dst = append(dst, " \""...)
	dst = append(dst, method...)
	dst = append(dst, ' ')
	dst = append(dst, path...)
	dst = append(dst, " HTTP/1.1\" "...)
	dst = appendStatus(dst, status)
	dst = append(dst, " 2326 \"https://maps.example.com/\" \""...)
	dst = append(dst, rawUAs[g.rng.IntN(len(rawUAs))]...)
	return append(dst, "\"\n"...)
}

// genLog returns n lines of format.
func genLog(format accesslog.Format, n int) []byte {
	g := newLogGen(format, 1, 0.02)
	out := make([]byte, 0, n*512)
	for range n {
		out = g.appendLine(out)
	}
	return out
}

// streamLog is an io.Reader of a generated log of about size bytes,
// made as it is read: it holds one chunk at a time.
type streamLog struct {
	g     *logGen
	left  int64
	chunk []byte
	off   int
	lines int64
}

func newStreamLog(format accesslog.Format, size int64, cold float64) *streamLog {
	return &streamLog{g: newLogGen(format, 7, cold), left: size, chunk: make([]byte, 0, 128<<10)}
}

func (s *streamLog) Read(p []byte) (int, error) {
	if s.off == len(s.chunk) {
		if s.left <= 0 {
			return 0, io.EOF
		}
		s.chunk, s.off = s.chunk[:0], 0
		for len(s.chunk) < 64<<10 {
			s.chunk = s.g.appendLine(s.chunk)
			s.lines++
		}
		s.left -= int64(len(s.chunk))
	}
	n := copy(p, s.chunk[s.off:])
	s.off += n
	return n, nil
}
