package gwc

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"tilecache/internal/apperr"
)

// ContentType is the media type of the objects Encode writes. The text is
// java.util.Properties' stream form, which is ISO-8859-1 by definition; as
// Encode escapes everything outside printable ASCII, it is ASCII too, so a
// reader that assumes UTF-8 reads the same thing.
const ContentType = "text/plain; charset=ISO-8859-1"

// lineSeparator ends every line Encode writes. Java writes the platform's
// separator; a loader accepts \n, \r and \r\n alike.
const lineSeparator = "\n"

// Encode writes m in the text format of java.util.Properties, as
// Properties.store(OutputStream, comments) writes it, so that
// Properties.load gives back exactly m:
//
//   - every entry is one line "key=value";
//   - in keys and values, \ is written \\, tab \t, newline \n, carriage
//     return \r, form feed \f, and =, :, # and ! are preceded by a
//     backslash; every space of a key, and a value's leading space, is
//     preceded by a backslash;
//   - every other character outside U+0020–U+007E is written \uXXXX with
//     upper-case hex, one escape per UTF-16 code unit (a character beyond
//     U+FFFF becomes two escaped surrogates).
//
// Two things differ from Java on purpose, so that the same map always
// gives the same bytes (stable ETags, no rewrite when nothing changed): no
// date comment is written, and entries are sorted by key in UTF-16 order
// (the order Java 18 and later use). An empty comment writes no comment
// line; a non-empty one is written as Java writes comments, except that
// characters above U+007E are escaped there too, so the output is always
// ASCII.
//
// Keys and values must be valid UTF-8; otherwise Encode returns an
// apperr.Invalid error and writes nothing.
func Encode(w io.Writer, m map[string]string, comment string) error {
	b, err := Marshal(m, comment)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write properties: %w", err)
	}
	return nil
}

// Marshal returns what Encode writes.
func Marshal(m map[string]string, comment string) ([]byte, error) {
	if !utf8.ValidString(comment) {
		return nil, apperr.Invalidf("properties comment %q is not valid UTF-8", comment)
	}
	type entry struct {
		key []uint16 // UTF-16, for sorting and escaping
		v   string
	}
	entries := make([]entry, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if !utf8.ValidString(k) {
			return nil, apperr.Invalidf("properties key %q is not valid UTF-8", k)
		}
		if !utf8.ValidString(v) {
			return nil, apperr.Invalidf("value %q of properties key %q is not valid UTF-8", v, k)
		}
		entries = append(entries, entry{key: utf16.Encode([]rune(k)), v: v})
	}
	// Byte order and UTF-16 order differ only where a character beyond
	// U+FFFF meets one in U+E000–U+FFFF.
	slices.SortFunc(entries, func(a, b entry) int { return slices.Compare(a.key, b.key) })

	var out bytes.Buffer
	if comment != "" {
		writeComment(&out, utf16.Encode([]rune(comment)))
	}
	for _, e := range entries {
		writeEscaped(&out, e.key, true)
		out.WriteByte('=')
		writeEscaped(&out, utf16.Encode([]rune(e.v)), false)
		out.WriteString(lineSeparator)
	}
	return out.Bytes(), nil
}

const upperHex = "0123456789ABCDEF"

func writeUnicodeEscape(out *bytes.Buffer, c uint16) {
	out.WriteString(`\u`)
	out.WriteByte(upperHex[c>>12&0xF])
	out.WriteByte(upperHex[c>>8&0xF])
	out.WriteByte(upperHex[c>>4&0xF])
	out.WriteByte(upperHex[c&0xF])
}

// writeEscaped writes a key (allSpaces: every space escaped) or a value
// (only a leading space escaped) as Properties.store does.
func writeEscaped(out *bytes.Buffer, s []uint16, allSpaces bool) {
	for i, c := range s {
		switch {
		case c == '\\':
			out.WriteString(`\\`)
		case c == ' ':
			if i == 0 || allSpaces {
				out.WriteByte('\\')
			}
			out.WriteByte(' ')
		case c == '\t':
			out.WriteString(`\t`)
		case c == '\n':
			out.WriteString(`\n`)
		case c == '\r':
			out.WriteString(`\r`)
		case c == '\f':
			out.WriteString(`\f`)
		case c == '=' || c == ':' || c == '#' || c == '!':
			out.WriteByte('\\')
			out.WriteByte(byte(c))
		case c < 0x20 || c > 0x7E:
			writeUnicodeEscape(out, c)
		default:
			out.WriteByte(byte(c))
		}
	}
}

// writeComment writes a comment as Properties.store does: each line of it
// starts with '#' (or keeps its own leading '#' or '!'), so that every line
// stays a comment.
func writeComment(out *bytes.Buffer, s []uint16) {
	out.WriteByte('#')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n' || c == '\r':
			out.WriteString(lineSeparator)
			if c == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			if i+1 == len(s) || (s[i+1] != '#' && s[i+1] != '!') {
				out.WriteByte('#')
			}
		case c > 0x7E:
			writeUnicodeEscape(out, c)
		default:
			out.WriteByte(byte(c))
		}
	}
	out.WriteString(lineSeparator)
}

// Decode reads text in the format of java.util.Properties and returns its
// entries, exactly as Properties.load does:
//
//   - natural lines end with \n, \r or \r\n; leading blanks (space, tab,
//     form feed) are dropped; blank lines are skipped, and so are comment
//     lines, whose first non-blank character is '#' or '!';
//   - a line ending in an odd number of backslashes continues on the next
//     line, whose leading blanks are dropped;
//   - the key ends at the first unescaped '=', ':' or blank; blanks and at
//     most one '=' or ':' then separate it from the value;
//   - \t, \n, \r, \f and \uXXXX are unescaped, and a backslash before any
//     other character stands for that character;
//   - a repeated key keeps its last value.
//
// The text is taken as UTF-8 when it is valid UTF-8, as GeoWebCache reads
// these objects; otherwise as ISO-8859-1, as Properties.load(InputStream)
// reads it. What Encode and Java's store write is ASCII, where both agree.
// A \u escape that is not followed by four hex digits is an error, as in
// Java. An unpaired escaped surrogate decodes to U+FFFD.
func Decode(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	return Unmarshal(data)
}

// Unmarshal is Decode of text held in memory.
func Unmarshal(data []byte) (map[string]string, error) {
	var text []uint16
	if utf8.Valid(data) {
		text = utf16.Encode([]rune(string(data)))
	} else {
		text = make([]uint16, len(data))
		for i, b := range data {
			text[i] = uint16(b)
		}
	}
	out := map[string]string{}
	lr := lineReader{in: text}
	for {
		line, ok := lr.next()
		if !ok {
			return out, nil
		}
		key, value := splitLine(line)
		k, err := unescape(key)
		if err != nil {
			return nil, err
		}
		v, err := unescape(value)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
}

func isBlank(c uint16) bool { return c == ' ' || c == '\t' || c == '\f' }

// lineReader yields the logical lines of a text: comments and blank lines
// skipped, continuations joined, the backslash of a continuation dropped.
type lineReader struct {
	in  []uint16
	off int
	buf []uint16
}

// next returns the next logical line; ok is false at the end of the text.
// It follows Java's LineReader step by step, including its corner cases: a
// comment is recognised wherever the logical line is still empty (so also
// on a continuation line after a line that was only a backslash), and a
// backslash that ends the text is dropped.
func (lr *lineReader) next() (line []uint16, ok bool) {
	line = lr.buf[:0]
	skipBlank := true
	continued := false // just after a continuation: an empty line ends the logical line
	escaped := false   // the last character is an unescaped backslash
	for {
		if lr.off >= len(lr.in) {
			lr.buf = line
			if len(line) == 0 {
				return nil, false
			}
			if escaped {
				line = line[:len(line)-1]
			}
			return line, true
		}
		c := lr.in[lr.off]
		lr.off++
		if skipBlank {
			if isBlank(c) || (!continued && (c == '\r' || c == '\n')) {
				continue
			}
			skipBlank = false
			continued = false
		}
		if len(line) == 0 && (c == '#' || c == '!') {
			for lr.off < len(lr.in) && lr.in[lr.off] != '\n' && lr.in[lr.off] != '\r' {
				lr.off++
			}
			if lr.off >= len(lr.in) {
				lr.buf = line
				return nil, false
			}
			lr.off++ // the line end; a \n after \r is skipped as a blank line
			skipBlank = true
			continue
		}
		if c != '\n' && c != '\r' {
			line = append(line, c)
			escaped = c == '\\' && !escaped
			continue
		}
		// A line end.
		if len(line) == 0 {
			skipBlank = true
			continue
		}
		if lr.off >= len(lr.in) {
			lr.buf = line
			if escaped {
				line = line[:len(line)-1]
			}
			return line, true
		}
		if !escaped {
			lr.buf = line
			return line, true
		}
		line = line[:len(line)-1]
		skipBlank, continued, escaped = true, true, false
		if c == '\r' && lr.in[lr.off] == '\n' {
			lr.off++
		}
	}
}

// splitLine splits a logical line into its raw (still escaped) key and value.
func splitLine(line []uint16) (key, value []uint16) {
	end, start := len(line), len(line)
	sep := false
	escaped := false
	for i, c := range line {
		if !escaped && (c == '=' || c == ':') {
			end, start, sep = i, i+1, true
			break
		}
		if !escaped && isBlank(c) {
			end, start = i, i+1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for start < len(line) {
		c := line[start]
		if !isBlank(c) {
			if sep || (c != '=' && c != ':') {
				break
			}
			sep = true
		}
		start++
	}
	return line[:end], line[start:]
}

// unescape resolves the escapes of a raw key or value.
func unescape(s []uint16) (string, error) {
	out := make([]uint16, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i == len(s) {
			break // unreachable: a line never ends in an unescaped backslash
		}
		switch c = s[i]; c {
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 'f':
			out = append(out, '\f')
		case 'u':
			if len(s)-(i+1) < 4 {
				return "", malformed(s)
			}
			var v uint16
			for _, h := range s[i+1 : i+5] {
				d, ok := hexValue(h)
				if !ok {
					return "", malformed(s)
				}
				v = v<<4 | d
			}
			out = append(out, v)
			i += 4
		default:
			out = append(out, c)
		}
	}
	return string(utf16.Decode(out)), nil
}

func malformed(s []uint16) error {
	return fmt.Errorf("decode properties: malformed \\uxxxx escape in %q", string(utf16.Decode(s)))
}

func hexValue(c uint16) (uint16, bool) {
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
