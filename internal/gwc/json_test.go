package gwc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"tilecache/internal/apperr"
)

// plain turns a tree into comparable Go values: objects become maps, arrays
// slices, scalars their text, and null inside an array the nullMark.
func plain(n *node) any {
	switch n.kind {
	case elemNode:
		m := map[string]any{}
		for _, c := range n.children {
			m[c.name] = plain(c)
		}
		return m
	case arrayNode:
		s := []any{}
		for _, c := range n.children {
			s = append(s, plain(c))
		}
		return s
	}
	if n.null {
		return nullMark{}
	}
	return n.text
}

type nullMark struct{}

// plainStd does the same for a value decoded by encoding/json with UseNumber,
// dropping null object members as parseJSON does.
func plainStd(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range v {
			if e != nil {
				m[k] = plainStd(e)
			}
		}
		return m
	case []any:
		s := []any{}
		for _, e := range v {
			s = append(s, plainStd(e))
		}
		return s
	case nil:
		return nullMark{}
	case bool:
		if v {
			return "true"
		}
		return "false"
	case json.Number:
		return string(v)
	}
	return v
}

func TestParseJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"object", `{"a":1,"b":"x"}`, map[string]any{"a": "1", "b": "x"}},
		{"nested", `{"a":{"b":[1,"2",true,null]}}`, map[string]any{"a": map[string]any{"b": []any{"1", "2", "true", nullMark{}}}}},
		{"null member is absent", `{"a":null,"b":false}`, map[string]any{"b": "false"}},
		{"number literal kept", `[-0.5e+10, 0, 12.25E-3]`, []any{"-0.5e+10", "0", "12.25E-3"}},
		{"escapes", `["\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"]`, []any{"\"\\/\b\f\n\r\té😀"}},
		{"lone surrogate", `["\ud800x", "\udc00"]`, []any{"\ufffdx", "\ufffd"}},
		{"two low surrogates", `["\udc00\udc00"]`, []any{"\ufffd\ufffd"}},
		{"reversed pair", `["\ude00\ud83d"]`, []any{"\ufffd\ufffd"}},
		{"high surrogate then non-low escape", `["\ud800\u0041"]`, []any{"\ufffdA"}},
		{"single-quoted", `{'a':'it''s'}`, nil},
		{"single-quoted with escapes", `{'a':'it\'s "x"'}`, map[string]any{"a": `it's "x"`}},
		{"whitespace", " \t\r\n{ \"a\" : [ ] } \n", map[string]any{"a": []any{}}},
		{"one stray brace", `{"a":1}}`, map[string]any{"a": "1"}},
		{"stray braces and space", "{\"a\":1} }\n}}\n", map[string]any{"a": "1"}},
		{"byte order mark", "\xEF\xBB\xBF{}", map[string]any{}},
		{"scalar document", `"x"`, "x"},
		{"utf-8", `["ünïcødé €"]`, []any{"ünïcødé €"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseJSON([]byte(tt.in), "x")
			if tt.want == nil {
				if err == nil {
					t.Fatalf("got %#v, want an error", plain(n))
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want %#v", err, tt.want)
			}
			if got := plain(n); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", ``, "Empty request body: expected a thing"},
		{"blank", " \n\t", "Empty request body: expected a thing"},
		{"trailing text", `{"a":1} x`, "Malformed JSON: trailing data after the document at offset 8"},
		{"trailing bracket", `{"a":1}]`, "Malformed JSON: trailing data after the document at offset 7"},
		{"second document", `{"a":1}{}`, "Malformed JSON: trailing data after the document at offset 7"},
		{"brace then text", `{"a":1}}x`, "Malformed JSON: trailing data after the document at offset 8"},
		{"truncated", `{"a":`, "Malformed JSON: unexpected end of input"},
		{"truncated object", `{"a":1`, "Malformed JSON: unexpected end of input"},
		{"truncated array", `[1,`, "Malformed JSON: unexpected end of input"},
		{"unterminated string", `{"a":"x`, "Malformed JSON: unterminated string starting at offset 5"},
		{"trailing comma", `{"a":1,}`, "Malformed JSON: invalid character '}' at offset 7 looking for an object key"},
		{"trailing comma in array", `[1,]`, "Malformed JSON: invalid character ']' at offset 3 looking for a value"},
		{"missing colon", `{"a" 1}`, "Malformed JSON: invalid character '1' at offset 5 after an object key"},
		{"missing comma", `[1 2]`, "Malformed JSON: invalid character '2' at offset 3 after an array element"},
		{"missing comma in object", `{"a":1 "b":2}`, "Malformed JSON: invalid character '\"' at offset 7 after an object member"},
		{"bare key", `{a:1}`, "Malformed JSON: invalid character 'a' at offset 1 looking for an object key"},
		{"bare word", `{"a":yes}`, "Malformed JSON: invalid character 'y' at offset 5 looking for a value"},
		{"bad literal", `{"a":nul}`, "Malformed JSON: invalid character 'n' at offset 5 looking for a value"},
		{"leading zero", `[01]`, "Malformed JSON: invalid character '1' at offset 2 after an array element"},
		{"plus sign", `[+1]`, "Malformed JSON: invalid character '+' at offset 1 looking for a value"},
		{"bare minus", `[-]`, "Malformed JSON: invalid character ']' at offset 2 in a number"},
		{"dot without digits", `[1.]`, "Malformed JSON: invalid character ']' at offset 3 after a decimal point"},
		{"exponent without digits", `[1e]`, "Malformed JSON: invalid character ']' at offset 3 in an exponent"},
		{"control character", "[\"a\nb\"]", `Malformed JSON: control character '\n' in a string at offset 3`},
		{"bad escape", `["\x"]`, `Malformed JSON: invalid escape \x at offset 2`},
		{"escaped newline", "[\"\\\n\"]", `Malformed JSON: invalid escape: backslash followed by '\n' at offset 2`},
		{"escaped non-ASCII", `["\é"]`, `Malformed JSON: invalid escape: backslash followed by 'é' at offset 2`},
		{"single-quote escape in double quotes", `["\'"]`, `Malformed JSON: invalid escape \' at offset 2`},
		{"short unicode escape", `["\u12"]`, `Malformed JSON: invalid \u escape at offset 2`},
		{"invalid UTF-8", "[\"\xff\"]", "Malformed JSON: invalid UTF-8 in a string at offset 2"},
		{"non-ASCII outside strings", "[é]", "Malformed JSON: invalid character 'é' at offset 1 looking for a value"},
		{"too deep", strings.Repeat("[", 300), "Malformed JSON: nesting deeper than 256 levels at offset 256"},
		{"duplicate key", `{"a":1,"a":2}`, "Duplicate field: a"},
		{"duplicate key reported after syntax", `{"a":1,"a":2`, "Malformed JSON: unexpected end of input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parseJSON([]byte(tt.in), "a thing")
			if err == nil {
				t.Fatalf("got %#v, want error %q", plain(n), tt.want)
			}
			if !apperr.Is(err, apperr.Invalid) {
				t.Errorf("got kind %v, want invalid", apperr.KindOf(err))
			}
			if got := apperr.Message(err); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAppendJSONString(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain", "topp:states", `"topp:states"`},
		{"quotes and backslash", `a"b\c`, `"a\"b\\c"`},
		{"controls", "\n\r\t\x01\x1f", `"\n\r\t\u0001\u001f"`},
		{"no HTML escaping", "<a&b>", `"<a&b>"`},
		{"unicode kept", "é😀\u2028", "\"é😀\u2028\""},
		{"invalid UTF-8", "a\xffb", `"a\ufffdb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(appendJSONString(nil, tt.in))
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			var back string
			if err := json.Unmarshal([]byte(got), &back); err != nil {
				t.Fatalf("encoding/json rejects %s: %v", got, err)
			}
			if utf8.ValidString(tt.in) && back != tt.in {
				t.Errorf("round trip gave %q, want %q", back, tt.in)
			}
		})
	}
}

// FuzzParseJSON checks parseJSON against encoding/json: on valid UTF-8 without
// single quotes, both accept the same documents (up to the tolerated stray
// braces, duplicate keys and the nesting limit) and read the same values.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",true,null,{"b":-1.5e3}]}`, `{"a":1}}`, `["\u00e9\ud83d\ude00"]`, `[1,]`, `{"a":1,"a":2}`, ``, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n, err := parseJSON(in, "x")
		if err != nil {
			checkInvalid(t, err)
		}
		if !utf8.Valid(in) || bytes.ContainsRune(in, '\'') || bytes.HasPrefix(in, []byte("\xEF\xBB\xBF")) {
			return
		}
		// Strip the stray closing braces we tolerate.
		doc := in
		for !json.Valid(doc) {
			trimmed := bytes.TrimRight(doc, " \t\r\n")
			if len(trimmed) == 0 || trimmed[len(trimmed)-1] != '}' {
				break
			}
			doc = trimmed[:len(trimmed)-1]
		}
		valid := json.Valid(doc)
		if err != nil {
			msg := apperr.Message(err)
			if valid && !strings.HasPrefix(msg, "Duplicate field: ") && !strings.Contains(msg, "nesting deeper") {
				t.Fatalf("parseJSON rejects %q (%s), encoding/json accepts %q", in, msg, doc)
			}
			return
		}
		if !valid {
			t.Fatalf("parseJSON accepts %q, encoding/json rejects it", in)
		}
		d := json.NewDecoder(bytes.NewReader(doc))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if got, want := plain(n), plainStd(v); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %#v, want %#v", got, want)
		}
	})
}

// checkInvalid asserts the decoder error contract: an apperr.Invalid with a
// non-empty one-line message.
func checkInvalid(t *testing.T, err error) {
	t.Helper()
	if !apperr.Is(err, apperr.Invalid) {
		t.Fatalf("got error %v of kind %v, want invalid", err, apperr.KindOf(err))
	}
	msg := apperr.Message(err)
	if msg == "" || strings.ContainsAny(msg, "\r\n\u2028\u2029") {
		t.Fatalf("message %q is not one non-empty line", msg)
	}
	if !utf8.ValidString(msg) {
		t.Fatalf("message %q is not valid UTF-8", msg)
	}
}
