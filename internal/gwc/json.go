package gwc

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"tilecache/internal/apperr"
)

// maxJSONDepth bounds nesting; no document of the contract nests deeper than 6.
const maxJSONDepth = 256

// parseJSON parses body into a tree. expect describes the wanted document for
// the empty-body message. Syntax errors win over duplicate keys: a duplicate
// key is reported only once the whole document has parsed.
func parseJSON(body []byte, expect string) (*node, error) {
	p := &jsonParser{data: trimBOM(body)}
	p.skipSpace()
	if p.pos == len(p.data) {
		return nil, emptyBody(expect)
	}
	v, err := p.value("")
	if err != nil {
		return nil, err
	}
	for ; p.pos < len(p.data); p.pos++ {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r', '}':
		default:
			return nil, malformedJSON("trailing data after the document at offset %d", p.pos)
		}
	}
	if p.dup != nil {
		return nil, p.dup
	}
	return v, nil
}

func malformedJSON(format string, args ...any) error {
	return apperr.Invalidf("Malformed JSON: "+format, args...)
}

type jsonParser struct {
	data  []byte
	pos   int
	depth int
	dup   error // first duplicate key, reported after a successful parse
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// unexpected reports the character at p.pos (or the end of input).
func (p *jsonParser) unexpected(context string) error {
	if p.pos >= len(p.data) {
		return malformedJSON("unexpected end of input")
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return malformedJSON("invalid character %s at offset %d %s", strconv.QuoteRune(r), p.pos, context)
}

func (p *jsonParser) value(name string) (*node, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.unexpected("")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(name)
	case c == '[':
		return p.array(name)
	case c == '"' || c == '\'':
		s, err := p.str()
		return &node{name: name, text: s, json: true}, err
	case c == '-' || c >= '0' && c <= '9':
		return p.number(name)
	case c == 't':
		return p.literal(name, "true")
	case c == 'f':
		return p.literal(name, "false")
	case c == 'n':
		n, err := p.literal(name, "null")
		if n != nil {
			n.null = true
		}
		return n, err
	}
	return nil, p.unexpected("looking for a value")
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return malformedJSON("nesting deeper than %d levels at offset %d", maxJSONDepth, p.pos)
	}
	return nil
}

func (p *jsonParser) object(name string) (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	start := p.pos
	p.pos++ // '{'
	n := &node{name: name, kind: elemNode, json: true}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		n.raw = p.data[start:p.pos]
		return n, nil
	}
	seen := fieldSet{}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || (p.data[p.pos] != '"' && p.data[p.pos] != '\'') {
			return nil, p.unexpected("looking for an object key")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.unexpected("after an object key")
		}
		p.pos++
		v, err := p.value(key)
		if err != nil {
			return nil, err
		}
		if err := seen.add(key); err != nil && p.dup == nil {
			p.dup = err
		}
		if !v.null { // a null member is an absent member
			n.children = append(n.children, v)
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.unexpected("")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			n.raw = p.data[start:p.pos]
			return n, nil
		default:
			return nil, p.unexpected("after an object member")
		}
	}
}

func (p *jsonParser) array(name string) (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	n := &node{name: name, kind: arrayNode, json: true}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return n, nil
	}
	for {
		v, err := p.value(name)
		if err != nil {
			return nil, err
		}
		n.children = append(n.children, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.unexpected("")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return n, nil
		default:
			return nil, p.unexpected("after an array element")
		}
	}
}

func (p *jsonParser) literal(name, word string) (*node, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return nil, p.unexpected("looking for a value")
	}
	p.pos += len(word)
	return &node{name: name, text: word, json: true}, nil
}

// number scans an RFC 8259 number and keeps its literal text.
func (p *jsonParser) number(name string) (*node, error) {
	start := p.pos
	digits := func() int {
		s := p.pos
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
		}
		return p.pos - s
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return nil, p.unexpected("in a number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.unexpected("after a decimal point")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.unexpected("in an exponent")
		}
	}
	return &node{name: name, text: string(p.data[start:p.pos]), json: true}, nil
}

// str decodes a string delimited by " or '. Inside a single-quoted string
// \' is an escape and " is an ordinary character.
func (p *jsonParser) str() (string, error) {
	quote, start := p.data[p.pos], p.pos
	p.pos++
	var b []byte
	for {
		if p.pos >= len(p.data) {
			return "", malformedJSON("unterminated string starting at offset %d", start)
		}
		c := p.data[p.pos]
		switch {
		case c == quote:
			p.pos++
			return string(b), nil
		case c == '\\':
			if err := p.escape(&b, quote); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", malformedJSON("control character %s in a string at offset %d", strconv.QuoteRune(rune(c)), p.pos)
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", malformedJSON("invalid UTF-8 in a string at offset %d", p.pos)
			}
			b = append(b, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
}

func (p *jsonParser) escape(b *[]byte, quote byte) error {
	at := p.pos
	p.pos++ // '\\'
	if p.pos >= len(p.data) {
		return p.unexpected("")
	}
	c := p.data[p.pos]
	p.pos++
	switch c {
	case '"', '\\', '/':
		*b = append(*b, c)
	case '\'':
		if quote != '\'' {
			return malformedJSON("invalid escape \\' at offset %d", at)
		}
		*b = append(*b, c)
	case 'b':
		*b = append(*b, '\b')
	case 'f':
		*b = append(*b, '\f')
	case 'n':
		*b = append(*b, '\n')
	case 'r':
		*b = append(*b, '\r')
	case 't':
		*b = append(*b, '\t')
	case 'u':
		r, ok := p.hex4()
		if !ok {
			return malformedJSON("invalid \\u escape at offset %d", at)
		}
		if utf16.IsSurrogate(r) {
			// A high surrogate followed by a low one is one character;
			// a lone surrogate becomes U+FFFD, as in encoding/json.
			low, ok := rune(0), false
			if r < 0xDC00 { // high surrogate
				low, ok = p.lowSurrogate()
			}
			if ok {
				r = utf16.DecodeRune(r, low)
			} else {
				r = utf8.RuneError
			}
		}
		*b = utf8.AppendRune(*b, r)
	default:
		r, _ := utf8.DecodeRune(p.data[p.pos-1:])
		if r > ' ' && r < utf8.RuneSelf && r != 0x7f {
			return malformedJSON("invalid escape \\%c at offset %d", r, at)
		}
		return malformedJSON("invalid escape: backslash followed by %s at offset %d", strconv.QuoteRune(r), at)
	}
	return nil
}

// hex4 reads four hex digits.
func (p *jsonParser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}

// lowSurrogate consumes a following \uDC00-\uDFFF escape, if there is one.
func (p *jsonParser) lowSurrogate() (rune, bool) {
	save := p.pos
	if len(p.data)-p.pos >= 6 && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
		p.pos += 2
		if r, ok := p.hex4(); ok && r >= 0xDC00 && r <= 0xDFFF {
			return r, true
		}
	}
	p.pos = save
	return 0, false
}

// appendJSONString appends s as a JSON string. Only '"', '\\' and control
// characters are escaped (no HTML escaping: the bodies are never embedded in
// HTML); invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
