package accesslog

import (
	"bytes"
)

// Roles of the CloudFront columns the parser reads.
const (
	roleNone uint8 = iota
	roleDate
	roleTime
	roleMethod
	roleURIStem
	roleStatus
	roleURIQuery
)

// cloudFrontColumns names the columns read, by their W3C field names.
var cloudFrontColumns = map[string]uint8{
	"date":        roleDate,
	"time":        roleTime,
	"cs-method":   roleMethod,
	"cs-uri-stem": roleURIStem,
	"sc-status":   roleStatus,
	// Optional: the OGC bindings' tiles are named by their query.
	"cs-uri-query": roleURIQuery,
}

// defaultCloudFrontFields is the documented column order of standard
// logs, used for lines that come before any "#Fields:" header (logs cut
// out of a delivered file, for instance).
const defaultCloudFrontFields = "#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status"

// cloudFrontParser parses CloudFront standard (legacy) log lines: W3C
// extended format, tab-separated, with the columns named by the last
// "#Fields:" header.
type cloudFrontParser struct {
	roles    []uint8 // role of each column up to the last one read; nil: the last header lacks one
	days     dayCache
	keyBuf   []byte
	queryBuf []byte
}

func newCloudFrontParser() *cloudFrontParser {
	p := &cloudFrontParser{}
	p.header([]byte(defaultCloudFrontFields))
	return p
}

// header reads a "#Fields:" directive; other directives (#Version, #Date,
// #Remark ...) change nothing.
func (p *cloudFrontParser) header(line []byte) {
	rest, ok := bytes.CutPrefix(line, []byte("#Fields:"))
	if !ok {
		return
	}
	var roles []uint8
	found := 0
	for i := 0; ; i++ {
		rest = bytes.TrimLeft(rest, " \t")
		if len(rest) == 0 {
			break
		}
		end := bytes.IndexAny(rest, " \t")
		if end < 0 {
			end = len(rest)
		}
		// A column named twice is read where it comes first.
		if role, ok := cloudFrontColumns[string(rest[:end])]; ok && found&(1<<role) == 0 {
			for len(roles) <= i {
				roles = append(roles, roleNone)
			}
			roles[i] = role
			found |= 1 << role
		}
		rest = rest[end:]
	}
	const all = 1<<roleDate | 1<<roleTime | 1<<roleMethod | 1<<roleURIStem | 1<<roleStatus
	if found&all != all {
		roles = nil // lines are malformed until a usable header comes
	}
	p.roles = roles
}

func (p *cloudFrontParser) parse(line []byte, rec *Record) string {
	if p.roles == nil {
		return reasonHeader
	}
	var date, clk, uri, status, query []byte
	last := len(p.roles) - 1
	for i, role := range p.roles {
		end := bytes.IndexByte(line, '\t')
		if end < 0 {
			if i < last {
				return reasonFields
			}
			end = len(line)
		}
		field := line[:end]
		switch role {
		case roleDate:
			date = field
		case roleTime:
			clk = field
		case roleMethod:
			rec.Method = field
		case roleURIStem:
			uri = field
		case roleStatus:
			status = field
		case roleURIQuery:
			query = field
		}
		if end < len(line) {
			line = line[end+1:]
		} else {
			line = nil
		}
	}
	t, ok := p.days.w3cTime(date, clk)
	if !ok {
		return reasonTime
	}
	rec.Time = t
	if rec.Status, ok = parseStatus(status); !ok {
		return reasonStatus
	}
	rec.Path = true
	if isDash(uri) {
		return ""
	}
	// CloudFront percent-encodes field values, "%" included (as %25):
	// undo that, leaving the path as the viewer sent it.
	if bytes.IndexByte(uri, '%') >= 0 {
		if p.keyBuf, ok = unescapeInto(p.keyBuf, uri); !ok {
			return reasonEscape
		}
		uri = p.keyBuf
	}
	rec.Key = uri
	if len(query) > 0 && !isDash(query) {
		if bytes.IndexByte(query, '%') >= 0 {
			if p.queryBuf, ok = unescapeInto(p.queryBuf, query); !ok {
				return reasonEscape
			}
			query = p.queryBuf
		}
		rec.Query = query
	}
	return ""
}
