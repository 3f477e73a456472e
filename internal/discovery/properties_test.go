package discovery

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		text string
		want map[string]string
	}{
		{"plain lines of earlier versions", "CQL_FILTER=POP > 10\nSTYLES=\n", map[string]string{"CQL_FILTER": "POP > 10", "STYLES": ""}},
		{"java.util.Properties.store output", "#Parameters\n#Mon Jan 02 03:04:05 UTC 2026\nSTYLES=pophatch\n",
			map[string]string{"STYLES": "pophatch"}},
		{"comments and blank lines", "# one\n! two\n\n   \n  # indented\nA=1", map[string]string{"A": "1"}},
		{"escaped separators and backslash", `K\=1\:2=a\=b\:c\\d`, map[string]string{"K=1:2": `a=b:c\d`}},
		{"colon and blank separators", "A:1\nB 2\nC   =  3\nD\t:\t4", map[string]string{"A": "1", "B": "2", "C": "3", "D": "4"}},
		{"escaped space in key, leading space of value", `my\ key=\ value`, map[string]string{"my key": " value"}},
		{"control escapes", `V=a\tb\nc\rd\fe`, map[string]string{"V": "a\tb\nc\rd\fe"}},
		{"unicode escapes", `V=caf\u00e9 \u20AC`, map[string]string{"V": "café €"}},
		{"surrogate pair", `V=\ud83d\ude00`, map[string]string{"V": "😀"}},
		{"malformed unicode escape kept", `V=\u12G4`, map[string]string{"V": `\u12G4`}},
		{"other escapes stand for the character", `V=\#\!\q`, map[string]string{"V": "#!q"}},
		{"continued lines", "V=one, \\\n     two, \\\n\tthree\nW=x", map[string]string{"V": "one, two, three", "W": "x"}},
		{"even backslashes do not continue", "V=a\\\\\nW=b", map[string]string{"V": `a\`, "W": "b"}},
		{"CRLF and CR", "A=1\r\nB=2\rC=3", map[string]string{"A": "1", "B": "2", "C": "3"}},
		{"key without value", "FLAG\n", map[string]string{"FLAG": ""}},
		{"empty key ignored", "=x\n", map[string]string{}},
		{"last value wins", "A=1\nA=2", map[string]string{"A": "2"}},
		{"trailing backslash at end of input", `A=1\`, map[string]string{"A": "1"}},
		{"non-ASCII verbatim", "V=Zürich\n", map[string]string{"V": "Zürich"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseProperties(tt.text); !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// storeProperties writes params as java.util.Properties.store does (keys
// sorted here): separators, '#', '!' and leading spaces escaped, control
// characters and non-ASCII as \uXXXX.
func storeProperties(params map[string]string) string {
	var b strings.Builder
	b.WriteString("#Parameters\n")
	for _, k := range slices.Sorted(maps.Keys(params)) {
		b.WriteString(escapeProperty(k, true) + "=" + escapeProperty(params[k], false) + "\n")
	}
	return b.String()
}

func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == ' ' && (key || i == 0):
			b.WriteString(`\ `)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case strings.ContainsRune(`=:#!\`, r):
			b.WriteString(`\` + string(r))
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04X`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func FuzzParseProperties(f *testing.F) {
	f.Add("STYLES", "pophatch")
	f.Add("CQL_FILTER", "POP > 10 AND NAME = 'a:b'")
	f.Add("K #1", "\\ value\twith\nescapes \u20ac 😀")
	f.Fuzz(func(t *testing.T, key, value string) {
		// Whatever the input, parsing does not panic.
		parseProperties(key + "=" + value)
		if key == "" || !utf8.ValidString(key) || !utf8.ValidString(value) {
			return
		}
		want := map[string]string{key: value}
		text := storeProperties(want)
		if got := parseProperties(text); !maps.Equal(got, want) {
			t.Errorf("round trip of %q: got %q, want %q", text, got, want)
		}
	})
}
