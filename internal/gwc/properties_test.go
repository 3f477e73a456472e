package gwc_test

import (
	"bytes"
	"maps"
	"strings"
	"testing"
	"testing/iotest"

	"tilecache/internal/apperr"
	"tilecache/internal/gwc"
)

func TestMarshal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       map[string]string
		comment string
		want    string
	}{
		{"empty", nil, "", ""},
		{"plain", map[string]string{"STYLES": "pophatch", "A": "b"}, "", "A=b\nSTYLES=pophatch\n"},
		{"empty value and key", map[string]string{"": "", "k": ""}, "", "=\nk=\n"},
		{"separators and comment characters", map[string]string{"a=b:c#d!e": "=x:y#z!"}, "",
			`a\=b\:c\#d\!e=\=x\:y\#z\!` + "\n"},
		{"backslashes", map[string]string{`C:\dir\`: `\\srv\u0041`}, "", `C\:\\dir\\=\\\\srv\\u0041` + "\n"},
		{"control characters", map[string]string{"k\t\n\r\f": "\t\n\r\f\x00\x1b\x7f"}, "",
			`k\t\n\r\f=\t\n\r\f\u0000\u001B\u007F` + "\n"},
		{"spaces", map[string]string{" key with spaces ": "  value  "}, "",
			`\ key\ with\ spaces\ =\  value  ` + "\n"},
		{"non-ASCII", map[string]string{"é": "日本 😀"}, "", `\u00E9=\u65E5\u672C \uD83D\uDE00` + "\n"},
		{"UTF-16 key order", map[string]string{"\uFFFD": "1", "\U00010000": "2", "z": "3"}, "",
			"z=3\n" + `\uD800\uDC00=2` + "\n" + `\uFFFD=1` + "\n"},
		{"comment", map[string]string{"k": "v"}, "made by tests", "#made by tests\nk=v\n"},
		{"comment lines", nil, "a\nb\r\n#c\r!d\n", "#a\n#b\n#c\n!d\n#\n"},
		{"comment non-ASCII", nil, "é\t😀", "#\\u00E9\t\\uD83D\\uDE00\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gwc.Marshal(tc.m, tc.comment)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			var w bytes.Buffer
			if err := gwc.Encode(&w, tc.m, tc.comment); err != nil {
				t.Fatal(err)
			}
			if w.String() != tc.want {
				t.Errorf("Encode wrote %q, want %q", w.String(), tc.want)
			}
			back, err := gwc.Unmarshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(back, tc.m) && len(back)+len(tc.m) > 0 {
				t.Errorf("decoded %q, want %q", back, tc.m)
			}
		})
	}
}

func TestMarshalInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       map[string]string
		comment string
	}{
		{"key", map[string]string{"\xff": "v"}, ""},
		{"value", map[string]string{"k": "a\xc3"}, ""},
		{"comment", nil, "\xed\xa0\x80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			err := gwc.Encode(&w, tc.m, tc.comment)
			if got := apperr.KindOf(err); got != apperr.Invalid {
				t.Errorf("got error %v (kind %v), want an Invalid error", err, got)
			}
			if w.Len() != 0 {
				t.Errorf("wrote %q on error, want nothing", w.String())
			}
		})
	}
}

// The expected results follow java.util.Properties.load; TestJava checks
// the ASCII and ISO-8859-1 ones against Java itself (decodeCases).
func TestUnmarshal(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gwc.Unmarshal([]byte(tc.in))
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// decodeCases are Properties texts and what Properties.load gives for them.
// TestJava compares them with Java, except those that say why not.
var decodeCases = []struct {
	name    string
	in      string
	want    map[string]string
	wantErr bool
	notJava string // why Java reads it differently
}{
	{name: "empty", in: "", want: map[string]string{}},
	{name: "blank and comment lines", in: " \t\f\n\r\n# c\n! c\n  #c\n\n", want: map[string]string{}},
	{name: "separators", in: "a=1\nb:2\nc 3\nd\t4\ne\f5\nf = 6\ng : 7\nh  =  :8\ni==9\nj\n",
		want: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7",
			"h": ":8", "i": "=9", "j": ""}},
	{name: "leading blanks", in: "   \t\fk=v\n", want: map[string]string{"k": "v"}},
	{name: "trailing blanks kept", in: "k=v  \t\n", want: map[string]string{"k": "v  \t"}},
	{name: "line ends", in: "a=1\rb=2\r\nc=3\nd=4", want: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}},
	{name: "continuation", in: "k=a\\\n    b\\\r\n\tc\\\r d\n", want: map[string]string{"k": "abcd"}},
	{name: "even backslashes end the line", in: "k=a\\\\\nx=y\n", want: map[string]string{"k": `a\`, "x": "y"}},
	{name: "continued by an empty line", in: "k=a\\\n\nx=y\n", want: map[string]string{"k": "a", "x": "y"}},
	{name: "continued by a blank line", in: "k=a\\\n   \nx=y\n", want: map[string]string{"k": "a", "x": "y"}},
	{name: "continuation keeps #", in: "k=a\\\n#b\n", want: map[string]string{"k": "a#b"}},
	{name: "continuation after a lone backslash is a comment", in: "\\\n#b\nx=y\n", want: map[string]string{"x": "y"}},
	{name: "continuation in the key", in: "ke\\\n  y=v\n", want: map[string]string{"key": "v"}},
	{name: "comment does not continue", in: "#a\\\nk=v\n", want: map[string]string{"k": "v"}},
	{name: "backslash at the end of the text", in: "k=v\\", want: map[string]string{"k": "v"}},
	{name: "backslash and line end at the end of the text", in: "k=v\\\n", want: map[string]string{"k": "v"}},
	{name: "lone backslash", in: "\\", want: map[string]string{"": ""}},
	{name: "escapes", in: `k\ \=\:\#\!\\\t\n\r\f\a\u0041=\ v\t\n\r\f\q\"\u00e9\u00E9` + "\n",
		want: map[string]string{"k =:#!\\\t\n\r\fa" + "A": " v\t\n\r\fq\"éé"}},
	{name: "surrogate pair", in: `k=\uD83D\uDE00` + "\n", want: map[string]string{"k": "😀"}},
	{name: "lone surrogate", in: `k=\uD83Dx` + "\n", want: map[string]string{"k": "\uFFFDx"},
		notJava: "a Java string holds a lone surrogate, a Go string cannot"},
	{name: "empty key", in: "=v\n:w\n", want: map[string]string{"": "w"}},
	{name: "last value wins", in: "k=1\nk=2\n", want: map[string]string{"k": "2"}},
	{name: "ISO-8859-1", in: "k\xe9=\xe9\xff\n", want: map[string]string{"ké": "éÿ"}},
	{name: "UTF-8", in: "ké=日本 😀\n", want: map[string]string{"ké": "日本 😀"},
		notJava: "load(InputStream) reads ISO-8859-1, Decode reads valid UTF-8 as UTF-8"},
	{name: "malformed escape: short", in: `k=\u12` + "\n", wantErr: true},
	{name: "malformed escape: not hex", in: `k=\u12G4` + "\n", wantErr: true},
	{name: "malformed escape in key", in: `\uxyzw=v` + "\n", wantErr: true},
}

func TestDecodeReadError(t *testing.T) {
	_, err := gwc.Decode(iotest.ErrReader(iotest.ErrTimeout))
	if err == nil || !strings.Contains(err.Error(), iotest.ErrTimeout.Error()) {
		t.Errorf("got %v, want the read error", err)
	}
}

func TestDecode(t *testing.T) {
	got, err := gwc.Decode(iotest.OneByteReader(strings.NewReader("a=1\nb=2\n")))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "b": "2"}; !maps.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
