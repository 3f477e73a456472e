package discovery

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// parseProperties reads a parameters side object
// ("parameters-{id}.properties") in java.util.Properties text format, as
// GeoWebCache writes it, and also the plain "KEY=value" lines of earlier
// versions. It never fails: it is only used to show what a parameters id
// stands for, and the id itself comes from the object's key.
//
// Supported: natural lines ended by \n, \r or \r\n; blank lines and
// comments (first non-blank character '#' or '!'); a line ending in an odd
// number of backslashes continued on the next one (whose leading blanks are
// dropped); a key ended by the first unescaped '=', ':' or blank, then
// blanks, one optional '=' or ':' and blanks; the escapes \t \n \r \f,
// \uXXXX and a backslash before any other character standing for that
// character (\\ \= \: \# \!, an escaped space). A malformed \u escape is
// kept as written. Entries with an empty key are ignored; a repeated key
// keeps its last value.
func parseProperties(text string) map[string]string {
	out := map[string]string{}
	for _, line := range logicalLines(text) {
		key, value := splitProperty(line)
		if key != "" {
			out[key] = value
		}
	}
	return out
}

const propertyBlanks = " \t\f"

// logicalLines joins continued lines and drops blank and comment lines.
func logicalLines(text string) []string {
	natural := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	var out []string
	var cur strings.Builder
	continuing := false
	for _, l := range natural {
		l = strings.TrimLeft(l, propertyBlanks)
		if !continuing && (l == "" || l[0] == '#' || l[0] == '!') {
			continue
		}
		if trailingBackslashes(l)%2 == 1 {
			cur.WriteString(l[:len(l)-1])
			continuing = true
			continue
		}
		cur.WriteString(l)
		out = append(out, cur.String())
		cur.Reset()
		continuing = false
	}
	if continuing {
		out = append(out, cur.String())
	}
	return out
}

func trailingBackslashes(s string) int {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n
}

// splitProperty splits a logical line into its unescaped key and value.
func splitProperty(line string) (key, value string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || strings.IndexByte(propertyBlanks, c) >= 0 {
			break
		}
		i++
	}
	i = min(i, len(line))
	key, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, propertyBlanks)
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], propertyBlanks)
	}
	return unescapeProperty(key), unescapeProperty(rest)
}

// unescapeProperty resolves the escapes of a key or value.
func unescapeProperty(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, ok := hexRune(s[i+1:])
			if !ok {
				b.WriteString(`\u`)
				continue
			}
			i += 4
			// Java writes a character beyond U+FFFF as two escaped
			// UTF-16 surrogates.
			if utf16.IsSurrogate(r) && strings.HasPrefix(s[i+1:], `\u`) {
				if lo, ok := hexRune(s[i+3:]); ok {
					if pair := utf16.DecodeRune(r, lo); pair != unicode.ReplacementChar {
						r = pair
						i += 6
					}
				}
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hexRune reads the 4 hex digits of a \u escape.
func hexRune(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:4], 16, 16)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}
